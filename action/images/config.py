"""Image automation configuration, read from YAML files in the repository.

Flux users keep ``ImageRepository``, ``ImagePolicy`` and ``ImageUpdateAutomation`` objects
in Git; lockgate reads those same files (any ``image.toolkit.fluxcd.io`` version) so a
scheduled CI job can replace the two controllers. Users without Flux write one compact
``lockgate.dev/v1alpha1`` ``ImageAutomation`` (see ``native.py``), which expands into the
same model (``model.py``). Every validation error names the file, the line, the document index
and the field path; all errors of a run are reported together, in file order, the checks
across documents (a policy naming a missing repository) with the documents' own. Reading is
I/O; checking is pure.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from action.images import files, known, native, policy
from action.images.fields import Fields, Where
from action.images.model import Automation, Config, ImagePolicy, ImageRepository, NamespacedName, Object
from lockgate import bounded, located, model
from lockgate.errors import UsageError

FLUX_GROUP = "image.toolkit.fluxcd.io"
NATIVE_API = "lockgate.dev/v1alpha1"
FLUX_VERSIONS = ("v1", "v1beta2", "v1beta1")


class ConfigError(UsageError):
    """One or more configuration documents are invalid; the message lists every problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid image automation configuration:\n" + "\n".join(f"  {p}" for p in problems))
        self.problems = problems


def _repository(f: Fields, key: NamespacedName) -> ImageRepository:
    exclusions = tuple(f.str_list("spec.exclusionList")) or policy.DEFAULT_EXCLUSION_LIST
    if len(exclusions) > 25:
        f.fail("spec.exclusionList", "must have at most 25 items")
    for i, pattern in enumerate(exclusions):
        f.check_regexp(f"spec.exclusionList[{i}]", pattern)
    provider = f.enum("spec.provider", ("generic", "aws", "azure", "gcp"), default="generic")
    return ImageRepository(
        key,
        image=f.string("spec.image", required=True),
        exclusion_list=exclusions,
        secret_ref=f.string("spec.secretRef.name") or None,
        insecure=f.boolean("spec.insecure"),
        cert_secret_ref=f.string("spec.certSecretRef.name") or None,
        proxy_secret_ref=f.string("spec.proxySecretRef.name") or None,
        provider=provider,
        where=f.where,
    )


def _policy(f: Fields, key: NamespacedName) -> ImagePolicy:
    repo_ns = f.string("spec.imageRepositoryRef.namespace") or key.namespace
    repository = NamespacedName(repo_ns, f.string("spec.imageRepositoryRef.name", required=True))
    return ImagePolicy(
        key,
        repository=repository,
        choice=f.choice("spec.policy"),
        tag_filter=f.tag_filter("spec.filterTags"),
        digest_reflection=f.enum(
            "spec.digestReflectionPolicy", ("Never", "IfNotPresent", "Always"), default="Never"
        ),
        labels=f.str_map("metadata.labels"),
        where=f.where,
    )


def _automation(f: Fields, key: NamespacedName) -> Automation:
    strategy = f.enum("spec.update.strategy", ("Setters",), default="Setters")
    del strategy  # only one strategy exists; the check is the point
    if f.string("spec.git.push.refspec"):
        f.fail("spec.git.push.refspec", "is not supported by lockgate; use spec.git.push.branch or --branch")
    return Automation(
        key,
        author_name=f.string("spec.git.commit.author.name"),
        author_email=f.string("spec.git.commit.author.email", required=True),
        message_template=f.string("spec.git.commit.messageTemplate"),
        template_values=f.str_map("spec.git.commit.messageTemplateValues"),
        checkout_branch=f.string("spec.git.checkout.ref.branch") or None,
        push_branch=f.string("spec.git.push.branch") or None,
        push_options=f.str_map("spec.git.push.options"),
        update_path=f.string("spec.update.path") or ".",
        policy_selector=f.selector("spec.policySelector"),
        signing_key_secret=f.string("spec.git.commit.signingKey.secretRef.name") or None,
        suspended=f.boolean("spec.suspend"),
        where=f.where,
    )


_FLUX_KINDS: dict[str, Callable[[Fields, NamespacedName], Object]] = {
    "ImageRepository": _repository,
    "ImagePolicy": _policy,
    "ImageUpdateAutomation": _automation,
}


def parse_documents(path: str, text: str) -> tuple[list[Object], list[str]]:
    """Objects of the kinds we read from one file's text, and problems; pure.

    An object is returned even when its document has problems (they are reported), so the
    checks across documents (``assemble``) run in the same round; one without a name is not."""
    try:
        docs = bounded.yaml_documents(text, path, error=UsageError)
        lines = located.line_maps(text, path)
    except bounded.LimitExceeded as exc:
        return [], [exc.message]
    except UsageError as exc:
        if ": invalid YAML: " not in exc.message:
            return [], [exc.message]  # a key written twice, naming its line
        # "path:line:column: invalid YAML: ..." -> "path: cannot be parsed as YAML: line:column: ..."
        where, _, problem = exc.message.removeprefix(path).lstrip(":").partition(": invalid YAML: ")
        return [], [f"{path}: cannot be parsed as YAML: {where}: {problem}" if problem else exc.message]
    objects: list[Object] = []
    problems: list[str] = []
    for index, (start, doc) in enumerate(docs):
        if not isinstance(doc, dict):
            continue
        api, kind = str(doc.get("apiVersion", "")), str(doc.get("kind", ""))
        group, _, version = api.partition("/")
        # the same documents in the same order (both loaders are PyYAML's, empty ones kept)
        f = Fields(doc, Where(path, index, start, lines[index] if len(lines) == len(docs) else {}))
        if group == FLUX_GROUP and kind in _FLUX_KINDS:
            if version not in FLUX_VERSIONS:
                f.fail(
                    "apiVersion",
                    f"unsupported version {version!r} (expected one of {', '.join(FLUX_VERSIONS)})",
                )
            key = NamespacedName(
                f.string("metadata.namespace") or "default", f.string("metadata.name", required=True)
            )
            for problem in known.unknown_fields(doc, known.FLUX[kind]):
                f.problems.append(f"{f.where.at(problem.split(': ', 1)[0])}: {problem}")
            built = _FLUX_KINDS[kind](f, key)
            if key.name:
                objects.append(built)
        elif api == NATIVE_API and kind == "ImageAutomation":
            for problem in known.unknown_fields(doc, known.IMAGE_AUTOMATION):
                f.problems.append(f"{f.where.at(problem.split(': ', 1)[0])}: {problem}")
            objects.extend(obj for obj in native.expand(f) if obj.key.name)
        problems.extend(f.problems)
    return objects, problems


def assemble(objects: list[Object]) -> tuple[Config, list[str]]:
    """Index objects and check cross-references (duplicates, missing repositories); pure."""
    repositories: dict[NamespacedName, ImageRepository] = {}
    policies: dict[NamespacedName, ImagePolicy] = {}
    automations: list[Automation] = []
    problems: list[str] = []
    for obj in objects:
        if isinstance(obj, Automation):
            automations.append(obj)
            continue
        table: dict[NamespacedName, Any] = repositories if isinstance(obj, ImageRepository) else policies
        if obj.key in table:
            where = obj.where.at("metadata.name") if obj.where else ""
            problems.append(
                f"{where}: duplicate {type(obj).__name__} {obj.key} (first in {table[obj.key].where})"
            )
        table[obj.key] = obj
    for pol in policies.values():
        if pol.repository not in repositories:
            where = pol.where.at("spec.imageRepositoryRef") if pol.where else ""
            problems.append(
                f"{where}: spec.imageRepositoryRef: ImageRepository {pol.repository} not found "
                f"(ImagePolicy {pol.key})"
            )
    return Config(repositories, policies, tuple(automations)), problems


def load(root: Path, *, paths: list[Path] | None = None) -> Config:
    """Read every ``.yaml``/``.yml`` file under ``root`` that mentions one of our API groups."""
    markers = (FLUX_GROUP.encode(), NATIVE_API.encode())
    objects: list[Object] = []
    problems: list[str] = []
    candidates = files.walk(root) if paths is None else [str(p) for p in paths if p.is_file()]
    for path in candidates:
        data = files.read(path)
        if not any(marker in data for marker in markers):
            continue
        text = data.decode("utf-8", errors="replace")
        # named as the user gave --path, joined with the file under it, as build and push name files
        found, file_problems = parse_documents(os.path.normpath(path), text)
        objects.extend(found)
        problems.extend(file_problems)
    config, link_problems = assemble(objects)
    problems.extend(link_problems)
    if problems:
        # every problem of the run at once (each document's and those across documents), in
        # the files' order, as a reader fixes them
        raise ConfigError(model.in_file_order(problems))
    return config
