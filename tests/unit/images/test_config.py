"""Configuration: Flux kinds and the native kind, and errors that name file, document, field."""

from __future__ import annotations

from pathlib import Path

import pytest

from action.images import config, model, native, policy
from action.images.model import NamespacedName

DATA = Path(__file__).parents[2] / "data" / "images"


def test_reads_flux_kinds() -> None:
    loaded = config.load(DATA / "flux")
    key = NamespacedName("apps", "podinfo")
    repo = loaded.repositories[key]
    assert repo.image == "ghcr.io/stefanprodan/podinfo"
    assert repo.exclusion_list == (r"^.*\.sig$",)
    assert repo.secret_ref == "regcred"
    pol = loaded.policies[key]
    assert pol.repository == key
    assert pol.choice == policy.NumericalChoice("asc")
    assert pol.tag_filter == policy.TagFilter("^main-[a-f0-9]+-(?P<ts>[0-9]+)", "$ts")
    assert pol.digest_reflection == "IfNotPresent"
    (automation,) = loaded.automations
    assert (automation.author_name, automation.author_email) == (
        "fluxcdbot",
        "fluxcdbot@users.noreply.github.com",
    )
    assert automation.checkout_branch == "main" and automation.push_branch == "image-updates"
    assert automation.update_path == "./clusters/my-cluster"
    assert automation.policy_selector is not None
    assert automation.policy_selector.matches({"team": "web"})
    assert not automation.policy_selector.matches({"team": "web", "tier": "legacy"})
    assert not automation.policy_selector.matches({"team": "ops"})


def test_reads_native_kind_as_the_same_model() -> None:
    loaded = config.load(DATA / "native")
    assert sorted(loaded.policies) == [NamespacedName("apps", "podinfo"), NamespacedName("apps", "redis")]
    assert loaded.policies[NamespacedName("apps", "podinfo")].choice == policy.SemverChoice(">=6.0.0 <7.0.0")
    assert loaded.policies[NamespacedName("apps", "redis")].choice == policy.AlphabeticalChoice("desc")
    assert loaded.policies[NamespacedName("apps", "redis")].digest_reflection == "Always"
    assert loaded.repositories[NamespacedName("apps", "redis")].exclusion_list == ("-alpine$",)
    (automation,) = loaded.automations
    assert automation.update_path == "deploy"
    assert automation.policy_selector is not None
    assert automation.policy_selector.matches({native.OWNER_LABEL: "web"})


BAD = {
    "missing_image": (
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {name: a}\nspec: {}\n",
        "bad.yaml:4: document 1: spec.image: required field is missing",
    ),
    "two_policies": (
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: p}\n"
        "spec: {imageRepositoryRef: {name: a}, policy: {semver: {range: '*'}, numerical: {}}}\n",
        "bad.yaml:4: document 1: spec.policy: exactly one of semver, alphabetical, numerical is required",
    ),
    "invalid_range": (
        "---\n---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: p}\n"
        "spec: {imageRepositoryRef: {name: a}, policy: {semver: {range: '>= bar'}}}\n",
        'bad.yaml:6: document 2: spec.policy.semver: invalid policy: improper constraint: ">= bar"',
    ),
    "invalid_pattern": (
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: p}\n"
        "spec: {imageRepositoryRef: {name: a}, policy: {alphabetical: {}}, filterTags: {pattern: '('}}\n",
        "bad.yaml:4: document 1: spec.filterTags.pattern: invalid policy: failed to filter tags",
    ),
    "missing_repository": (
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: p, namespace: x}\n"
        "spec: {imageRepositoryRef: {name: gone}, policy: {alphabetical: {}}}\n",
        "bad.yaml:4: document 1: spec.imageRepositoryRef: ImageRepository x:gone not found",
    ),
    "bad_order": (
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: p}\n"
        "spec: {imageRepositoryRef: {name: a}, policy: {numerical: {order: up}}}\n",
        "spec.policy.numerical: invalid policy: invalid order argument provided: 'UP'",
    ),
    "native_item_field": (
        "apiVersion: lockgate.dev/v1alpha1\nkind: ImageAutomation\nmetadata: {name: w}\n"
        "spec: {git: {author: {email: a@b}}, images: [{name: x, image: y, semver: '*', insecure: 'yes'}]}\n",
        "bad.yaml:4: document 1: spec.images[0].insecure: expected true or false",
    ),
    "unparsable": (
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: [\n",
        "bad.yaml: cannot be parsed as YAML",
    ),
    "too_many_exclusions": (
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {name: a}\n"
        "spec: {image: x, exclusionList: [" + ", ".join(["a"] * 26) + "]}\n",
        "spec.exclusionList: must have at most 25 items",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_errors_name_file_document_and_field(name: str, tmp_path: Path) -> None:
    text, message = BAD[name]
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(config.ConfigError) as caught:
        config.load(tmp_path)
    assert message in caught.value.message


def test_all_problems_reported_together(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(BAD["missing_image"][0])
    (tmp_path / "b.yaml").write_text(BAD["missing_repository"][0])
    with pytest.raises(config.ConfigError) as caught:
        config.load(tmp_path)
    assert len(caught.value.problems) == 2


def test_one_round_in_file_order_with_lines(tmp_path: Path) -> None:
    """A policy naming a missing repository is reported with the documents' own problems, not
    after they are fixed; every problem names its line, in the file's order."""
    (tmp_path / "images.yaml").write_text(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: web, namespace: apps}\n"
        "spec:\n  imageRepositoryRef: {name: wbe}\n  policy: {semver: {range: '>=1'}}\n"
        "---\n"
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n"
        "metadata: {name: web, namespace: apps}\n"
        "spec:\n  imagee: ghcr.io/org/web\n  interval: 5m\n"
        "---\n"
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: api, namespace: apps}\n"
        "spec:\n  imageRepositoryRef: {name: web}\n  policy: {semver: {range: '>= bar'}}\n"
    )
    with pytest.raises(config.ConfigError) as caught:
        config.load(tmp_path)
    where = str(tmp_path / "images.yaml")
    assert caught.value.problems == [
        f"{where}:5: document 1: spec.imageRepositoryRef: ImageRepository apps:wbe not found "
        "(ImagePolicy apps:web)",
        f"{where}:11: document 2: spec.image: required field is missing",
        f"{where}:12: document 2: spec.imagee: unknown field; did you mean image?",
        f'{where}:20: document 3: spec.policy.semver: invalid policy: improper constraint: ">= bar"',
    ]


def test_files_without_our_kinds_are_ignored_even_if_broken(tmp_path: Path) -> None:
    (tmp_path / "chart.yaml").write_text("{{ .Values.broken }\n")
    assert config.load(tmp_path) == model.Config()


def test_refspec_is_refused_rather_than_ignored(tmp_path: Path) -> None:
    (tmp_path / "auto.yaml").write_text(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\n"
        "metadata: {name: a, namespace: apps}\n"
        "spec:\n  git:\n    commit: {author: {email: e@x}}\n"
        "    push: {refspec: 'refs/heads/main:refs/heads/x'}\n"
    )
    with pytest.raises(config.ConfigError) as caught:
        config.load(tmp_path)
    # named as --path was given, joined with the file, as build and push name files
    assert caught.value.problems == [
        f"{tmp_path / 'auto.yaml'}:7: document 1: spec.git.push.refspec: is not supported by lockgate; "
        "use spec.git.push.branch or --branch"
    ]


def test_suspend_is_read(tmp_path: Path) -> None:
    (tmp_path / "auto.yaml").write_text(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\n"
        "metadata: {name: a, namespace: apps}\n"
        "spec:\n  suspend: true\n  git: {commit: {author: {email: e@x}}}\n"
    )
    (automation,) = config.load(tmp_path).automations
    assert automation.suspended


UNKNOWN_FIELDS = {
    "ImageRepository": (
        "spec:\n  image: r/app\n  intervall: 5m\n",
        "spec.intervall: unknown field; did you mean interval?",
    ),
    "ImagePolicy": (
        "spec:\n  imageRepositoryRef: {name: app}\n  policy: {semver: {range: '>=1', rnage: x}}\n",
        "spec.policy.semver.rnage: unknown field; did you mean range?",
    ),
    "ImageUpdateAutomation": (
        "spec:\n  git:\n    commit: {author: {email: a@b.c, nmae: x}}\n  update: {path: .}\n",
        "spec.git.commit.author.nmae: unknown field; did you mean name?",
    ),
}


@pytest.mark.parametrize("kind", sorted(UNKNOWN_FIELDS))
def test_an_unknown_field_of_a_flux_kind_is_an_error_with_a_suggestion(kind: str) -> None:
    body, says = UNKNOWN_FIELDS[kind]
    head = f"apiVersion: image.toolkit.fluxcd.io/v1\nkind: {kind}\n"
    text = head + f"metadata: {{name: app, namespace: ns}}\n{body}"
    _, problems = config.parse_documents("imgs.yaml", "---\n" + text)
    # the line of the unknown field itself (each body puts it on line 7)
    assert f"imgs.yaml:7: document 1: {says}" in problems, problems


def test_an_unknown_field_of_the_native_kind_is_an_error() -> None:
    text = (
        "apiVersion: lockgate.dev/v1alpha1\nkind: ImageAutomation\nmetadata: {name: a}\nspec:\n"
        "  images:\n    - {name: app, image: r/app, semver: '>=1', exlcude: ['^x']}\n"
        "  git: {author: {email: a@b.c}}\n"
    )
    _, problems = config.parse_documents("native.yaml", text)
    assert (
        "native.yaml:6: document 1: spec.images[0].exlcude: unknown field; did you mean exclude?" in problems
    )


def test_every_field_flux_documents_is_accepted() -> None:
    """Fields lockgate does not act on (interval, timeout, accessFrom...) are accepted as Flux's."""
    text = (
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n"
        "metadata: {name: app, namespace: ns}\n"
        "spec:\n  image: r/app\n  interval: 5m\n  timeout: 1m\n  provider: generic\n  suspend: false\n"
        "  serviceAccountName: sa\n  certSecretRef: {name: c}\n  proxySecretRef: {name: p}\n"
        "  accessFrom: {namespaceSelectors: [{matchLabels: {a: b}}]}\n"
    )
    objects, problems = config.parse_documents("ok.yaml", text)
    assert problems == [] and len(objects) == 1
