"""Flux's Alert filters on a notify entry: loaded into the provider, decided as notification-controller
decides (severity, then inclusion, then exclusion, which wins), Go's regexp syntax, and refused at
load naming the field. The deliveries themselves: tests/integration/test_notify_alerts.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.errors import UsageError
from runner.pipeline import config
from runner.pipeline.eventfilter import EventFilter


def load_notify(tmp_path: Path, notify: str) -> EventFilter:
    path = tmp_path / "syncs.yaml"
    path.write_text(
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: web}\n"
        "spec:\n  url: oci://127.0.0.1:5000/web\n  interval: 5m\n  verify: {insecureSkip: true}\n"
        "  notify:\n" + "".join(f"    {line}\n" for line in notify.strip().splitlines())
    )
    ((provider,),) = [sync.notify for sync in config.load(path).syncs]
    return provider.events


def test_the_filters_reach_the_provider_and_default_to_every_event(tmp_path: Path) -> None:
    plain = load_notify(tmp_path, "- {type: generic, address: 'http://h/x'}")
    assert plain == EventFilter() and not plain.filters
    assert plain.admits("info", "anything") and plain.admits("error", "")
    loaded = load_notify(
        tmp_path,
        "- type: msteams\n  address: http://h/x\n  eventSeverity: error\n"
        "  inclusionList: ['^Deployment/']\n  exclusionList: ['canary']",
    )
    assert loaded == EventFilter("error", ("^Deployment/",), ("canary",))


def test_severity_inclusion_and_exclusion_decide_as_flux() -> None:
    errors_only = EventFilter("error")
    assert not errors_only.admits("info", "ConfigMap/web/app created")
    assert errors_only.admits("error", "ConfigMap/web/app failed")
    listed = EventFilter("info", ("created", "configured"), ("ConfigMap/",))
    assert listed.admits("info", "Deployment/web/api configured")
    assert not listed.admits("info", "Deployment/web/api deleted")  # no inclusion matches
    assert not listed.admits("info", "ConfigMap/web/app created")  # excluded, though included


def test_the_expressions_are_gos() -> None:
    # Go: [[:alpha:]] is a letter class and \pL a letter; ^ is the start of the whole text
    assert EventFilter(inclusion=(r"^[[:alpha:]]+/\pL+",)).admits("info", "ConfigMap/web created")
    multi_line = "Namespace/web created\nConfigMap/web/app created"
    assert not EventFilter(inclusion=("^ConfigMap/",)).admits("info", multi_line)
    assert EventFilter(inclusion=("(?m)^ConfigMap/",)).admits("info", multi_line)


@pytest.mark.parametrize(
    ("notify", "expected"),
    [
        (
            "- {type: slack, address: 'http://h/x', inclusionList: ['ok', '(api']}",
            "Sync/web: spec.notify[0]: inclusionList[1]: error parsing regexp: missing closing ): `(api`",
        ),
        (
            r"- {type: generic, address: 'http://h/x', exclusionList: ['a++']}",
            "Sync/web: spec.notify[0]: exclusionList[0]: error parsing regexp: "
            "invalid nested repetition operator: `++`",
        ),
        (
            "- {type: github, secretRef: {name: t}, exclusionList: ['x']}",
            "Sync/web: spec.notify[0]: eventSeverity, inclusionList and exclusionList filter events; "
            "a github provider posts every pass's commit status: remove them",
        ),
        (
            "- {type: generic, address: 'http://h/x', eventSeverity: warning}",
            "spec.notify[0].eventSeverity: expected one of info, error; got 'warning'",
        ),
    ],
)
def test_a_bad_filter_is_refused_at_load_naming_the_field(tmp_path: Path, notify: str, expected: str) -> None:
    with pytest.raises(UsageError) as refused:
        load_notify(tmp_path, notify)
    assert expected in refused.value.message, refused.value.message
    assert "syncs.yaml:" in refused.value.message


def test_an_azure_devops_genre_reaches_the_provider_and_no_other_forge_takes_one(tmp_path: Path) -> None:
    """Flux's Azure DevOps statuses say genre fluxcd; an imported provider keeps it."""
    path = tmp_path / "syncs.yaml"
    sync = (
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: web}\n"
        "spec:\n  url: oci://127.0.0.1:5000/web\n  interval: 5m\n  verify: {insecureSkip: true}\n"
        "  notify:\n    - {type: %s, secretRef: {name: t}, genre: fluxcd}\n"
    )
    path.write_text(sync % "azuredevops")
    ((provider,),) = [s.notify for s in config.load(path).syncs]
    assert provider.genre == "fluxcd"
    path.write_text(sync % "github")
    with pytest.raises(UsageError, match=r"spec\.notify\[0\]: genre is the context genre of Azure DevOps"):
        config.load(path)
