"""Field-by-field rules of ``lockgate import``: regexp anchoring, timeouts, names, references."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from lockgate import goregex
from runner.plan.fluximport import convert, naming, source
from runner.plan.fluximport.kustomization import timeout_of
from runner.plan.fluximport.objects import from_document, parse_duration
from runner.plan.fluximport.report import Report
from tests.unit.runner.plan.fluximport.support import kustomization, objs, ocirepository

#: (Flux's pattern, a certificate value): cosign accepts when Go's regexp.MatchString(pattern,
#: value) is true; lockgate matches the whole value, so the carried pattern must accept exactly then
ANCHORING = [
    ("https://github.com/acme/app/", "https://github.com/acme/app/.github/workflows/p.yml@refs/heads/main"),
    ("https://github.com/acme/app/", "https://github.com/evil/x?https://github.com/acme/app/"),
    ("acme", "https://github.com/evil/app"),
    ("^https://github\\.com/acme/", "https://github.com/acme/app"),
    ("^https://github\\.com/acme/", "x https://github.com/acme/app"),
    ("main$", "https://github.com/acme/app@refs/heads/main"),
    ("main$", "https://github.com/acme/app@refs/heads/main-2"),
    ("^exact$", "exact"),
    ("^exact$", "exactly"),
    ("a|b", "xbx"),
    ("(?i)ACME", "https://github.com/acme/app"),
    ("token\\.actions", "https://token.actions.githubusercontent.com"),
    ("", "anything"),
]


@pytest.mark.parametrize(("pattern", "value"), ANCHORING)
def test_an_identity_is_accepted_exactly_when_flux_accepts_it(pattern: str, value: str) -> None:
    flux_accepts = goregex.compile(pattern).matches(value)  # cosign's regexp.MatchString
    carried = source.unanchored(pattern)
    assert bool(goregex.compile(carried).fullmatch(value)) is flux_accepts, carried


def test_a_loose_identity_says_it_is_loose() -> None:
    identity = {"issuer": "^https://token\\.actions\\.githubusercontent\\.com$", "subject": "acme/app"}
    doc = ocirepository(verify={"provider": "cosign", "matchOIDCIdentity": [identity]})
    result = convert.convert(objs(doc, kustomization()))
    spec = next(d for d in yaml.safe_load_all(result.config) if d["kind"] == "Sync")["spec"]
    assert spec["verify"] == {
        "issuerRegexp": "^https://token\\.actions\\.githubusercontent\\.com$",
        "identityRegexp": ".*(?:acme/app).*",
    }
    (row,) = [r for r in result.report.rows if r.klass.value == "security"]
    assert row.field == "spec.verify.matchOIDCIdentity[0]" and row.message.startswith(
        "subject matched anywhere"
    )


def test_keyless_without_identities_accepts_any_identity_and_says_so() -> None:
    doc = ocirepository(verify={"provider": "cosign"})
    result = convert.convert(objs(doc, kustomization()))
    spec = next(d for d in yaml.safe_load_all(result.config) if d["kind"] == "Sync")["spec"]
    assert spec["verify"] == {"issuerRegexp": ".*", "identityRegexp": ".*"}
    assert [r.klass.value for r in result.report.rows if r.field == "spec.verify"] == ["security"]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"interval": "10m"}, 570.0),  # interval - 30s
        ({"interval": "45s"}, 30.0),  # at least 30s
        ({"interval": "10m", "timeout": "2m"}, 120.0),
        ({"interval": "10m", "timeout": "10s"}, 30.0),  # Flux floors a given timeout too
        ({"interval": "1h30m"}, 5370.0),
    ],
)
def test_the_timeout_is_flux_s(spec: dict[str, Any], expected: float) -> None:
    assert timeout_of(from_document(kustomization(**spec))) == expected


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1m0s", 60.0),
        ("1h30m", 5400.0),
        ("500ms", 0.5),
        ("2.5m", 150.0),
        ("5", None),
        ("", None),
        ("1x", None),
    ],
)
def test_flux_durations(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("ref", "url", "semver", "dropped"),
    [
        ({}, "oci://r.example.com/app:latest", None, []),
        ({"tag": "v1"}, "oci://r.example.com/app:v1", None, []),
        ({"semver": ">=1", "tag": "v1"}, "oci://r.example.com/app", ">=1", ["spec.ref.tag"]),
        (
            {"digest": "sha256:" + "a" * 64, "semver": ">=1", "tag": "v1"},
            "oci://r.example.com/app@sha256:" + "a" * 64,
            None,
            ["spec.ref.semver", "spec.ref.tag"],
        ),
    ],
)
def test_the_reference_follows_flux_s_precedence(
    ref: dict[str, str], url: str, semver: str | None, dropped: list[str]
) -> None:
    report = Report()
    spec: dict[str, Any] = {}
    source.url_of(from_document(ocirepository(url="oci://r.example.com/app", ref=ref)), report, spec)
    assert spec.get("url") == url and spec.get("semver") == semver
    assert sorted(r.field for r in report.rows) == dropped


def test_names_collide_across_namespaces_and_are_made_valid() -> None:
    report = Report()
    items = [
        naming.Named("Kustomization", "a", "web"),
        naming.Named("Kustomization", "b", "web"),
        naming.Named("Kustomization", "a", "Api.v2"),
        naming.Named("Kustomization", "a", "runner-x"),
        naming.Named("Kustomization", "a", "x" * 70),
        naming.Named("Kustomization", "a", "kept"),
        naming.Named("Kustomization", "c", "moved"),
    ]
    names = naming.assign(items, report, renames={("c", "moved"): "elsewhere"})
    assert names[items[0]] == "a-web" and names[items[1]] == "b-web"
    assert names[items[2]] == "api-v2"
    assert names[items[3]] == "flux-runner-x"
    assert len(names[items[4]]) == naming.MAX and naming.valid(names[items[4]])
    assert names[items[5]] == "kept"
    assert names[items[6]] == "elsewhere"
    assert len(set(names.values())) == len(items)
    assert {r.object for r in report.rows} == {i.ref for i in items if i.name != "kept"}
    assert {r.klass.value for r in report.rows} == {"renamed"}


def test_a_name_two_objects_would_share_is_made_unique() -> None:
    report = Report()
    items = [naming.Named("Kustomization", "a", "b-c"), naming.Named("Kustomization", "a-b", "c")]
    names = naming.assign([*items, naming.Named("Kustomization", "x", "c")], report)
    assert len(set(names.values())) == 3


def test_a_reference_in_the_runner_namespace_needs_no_copy() -> None:
    docs = objs(ocirepository(namespace="apps", secretRef={"name": "pull"}), kustomization(namespace="apps"))
    elsewhere = convert.convert(docs)
    assert [r.field for r in elsewhere.report.rows if "copy it there" in r.message] == [
        "spec.secretRef",
        "spec.verify.secretRef",
    ]
    here = convert.convert(docs, convert.ImportOptions(runner_namespace="apps"))
    assert [r for r in here.report.rows if "copy it there" in r.message] == []
