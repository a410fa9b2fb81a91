"""Image automation configuration, read from YAML files in the repository.

Flux users keep ``ImageRepository``, ``ImagePolicy`` and ``ImageUpdateAutomation`` objects
in Git; lockgate reads those same files (any ``image.toolkit.fluxcd.io`` version) so a
scheduled CI job can replace the two controllers. Users without Flux write one compact
``lockgate.dev/v1alpha1`` ``ImageAutomation`` (see ``native.py``), which expands into the
same model. Every validation error names the file, the document index and the field
path; all errors of a run are reported together. Reading is I/O; checking is pure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from action.images import files, policy
from action.images.fields import Fields, LabelSelector, Where
from lockgate.errors import UsageError

FLUX_GROUP = "image.toolkit.fluxcd.io"
NATIVE_API = "lockgate.dev/v1alpha1"
FLUX_VERSIONS = ("v1", "v1beta2", "v1beta1")
DEFAULT_MESSAGE = "Update from image update automation"


class ConfigError(UsageError):
    """One or more configuration documents are invalid; the message lists every problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid image automation configuration:\n" + "\n".join(f"  {p}" for p in problems))
        self.problems = problems


@dataclass(frozen=True, order=True)
class ObjectKey:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}:{self.name}"


@dataclass(frozen=True)
class ImageRepository:
    key: ObjectKey
    image: str
    exclusion_list: tuple[str, ...] = policy.DEFAULT_EXCLUSION_LIST
    secret_ref: str | None = None  #: Flux ``secretRef.name``: a Docker config Secret (see credentials.py)
    credentials_file: str | None = None  #: native ``credentials``: a Docker config file path
    insecure: bool = False
    provider: str = "generic"
    where: Where | None = None


@dataclass(frozen=True)
class ImagePolicy:
    key: ObjectKey
    repository: ObjectKey
    choice: policy.Choice
    tag_filter: policy.TagFilter | None = None
    digest_reflection: str = "Never"
    labels: Mapping[str, str] = field(default_factory=dict)
    where: Where | None = None


@dataclass(frozen=True)
class Automation:
    key: ObjectKey
    author_name: str
    author_email: str
    message_template: str = ""
    template_values: Mapping[str, str] = field(default_factory=dict)
    checkout_branch: str | None = None
    push_branch: str | None = None
    push_refspec: str | None = None
    push_options: Mapping[str, str] = field(default_factory=dict)
    update_path: str = "."
    policy_selector: LabelSelector | None = None
    signing_key_secret: str | None = None
    suspended: bool = False  #: ``spec.suspend``: the automation is skipped (and reported)
    where: Where | None = None


@dataclass(frozen=True)
class Config:
    repositories: Mapping[ObjectKey, ImageRepository] = field(default_factory=dict)
    policies: Mapping[ObjectKey, ImagePolicy] = field(default_factory=dict)
    automations: tuple[Automation, ...] = ()


def _repository(f: Fields, key: ObjectKey) -> ImageRepository:
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
        provider=provider,
        where=f.where,
    )


def _policy(f: Fields, key: ObjectKey) -> ImagePolicy:
    repo_ns = f.string("spec.imageRepositoryRef.namespace") or key.namespace
    repository = ObjectKey(repo_ns, f.string("spec.imageRepositoryRef.name", required=True))
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


def _automation(f: Fields, key: ObjectKey) -> Automation:
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
        push_refspec=f.string("spec.git.push.refspec") or None,
        push_options=f.str_map("spec.git.push.options"),
        update_path=f.string("spec.update.path") or ".",
        policy_selector=f.selector("spec.policySelector"),
        signing_key_secret=f.string("spec.git.commit.signingKey.secretRef.name") or None,
        suspended=f.boolean("spec.suspend"),
        where=f.where,
    )


_FLUX_KINDS = {"ImageRepository": _repository, "ImagePolicy": _policy, "ImageUpdateAutomation": _automation}


def parse_documents(path: str, text: str) -> tuple[list[Any], list[str]]:
    """Objects of the kinds we read from one file's text, and problems; pure."""
    try:
        docs = list(yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except yaml.YAMLError as exc:
        return [], [f"{path}: cannot be parsed as YAML: {str(exc).splitlines()[0]}"]
    from action.images import native  # native builds on this module's dataclasses

    objects: list[Any] = []
    problems: list[str] = []
    for index, doc in enumerate(docs):
        if not isinstance(doc, dict):
            continue
        api, kind = str(doc.get("apiVersion", "")), str(doc.get("kind", ""))
        group, _, version = api.partition("/")
        f = Fields(doc, Where(path, index))
        if group == FLUX_GROUP and kind in _FLUX_KINDS:
            if version not in FLUX_VERSIONS:
                f.fail(
                    "apiVersion",
                    f"unsupported version {version!r} (expected one of {', '.join(FLUX_VERSIONS)})",
                )
            key = ObjectKey(
                f.string("metadata.namespace") or "default", f.string("metadata.name", required=True)
            )
            built = _FLUX_KINDS[kind](f, key)
            objects.append(built)
        elif api == NATIVE_API and kind == "ImageAutomation":
            objects.extend(native.expand(f))
        problems.extend(f.problems)
    return (objects if not problems else []), problems


def assemble(objects: list[Any]) -> tuple[Config, list[str]]:
    """Index objects and check cross-references (duplicates, missing repositories); pure."""
    repositories: dict[ObjectKey, ImageRepository] = {}
    policies: dict[ObjectKey, ImagePolicy] = {}
    automations: list[Automation] = []
    problems: list[str] = []
    for obj in objects:
        table: dict[Any, Any] | None = (
            repositories
            if isinstance(obj, ImageRepository)
            else policies
            if isinstance(obj, ImagePolicy)
            else None
        )
        if table is None:
            automations.append(obj)
            continue
        if obj.key in table:
            problems.append(
                f"{obj.where}: duplicate {type(obj).__name__} {obj.key} (first in {table[obj.key].where})"
            )
        table[obj.key] = obj
    for pol in policies.values():
        if pol.repository not in repositories:
            problems.append(
                f"{pol.where}: spec.imageRepositoryRef: ImageRepository {pol.repository} not found "
                f"(ImagePolicy {pol.key})"
            )
    return Config(repositories, policies, tuple(automations)), problems


def load(root: Path, *, paths: list[Path] | None = None) -> Config:
    """Read every ``.yaml``/``.yml`` file under ``root`` that mentions one of our API groups."""
    markers = (FLUX_GROUP.encode(), NATIVE_API.encode())
    objects: list[Any] = []
    problems: list[str] = []
    base = str(root) + os.sep
    candidates = files.walk(root) if paths is None else [str(p) for p in paths if p.is_file()]
    for path in candidates:
        data = files.read(path)
        if not any(marker in data for marker in markers):
            continue
        text = data.decode("utf-8", errors="replace")
        found, file_problems = parse_documents(path.removeprefix(base), text)
        objects.extend(found)
        problems.extend(file_problems)
    config, link_problems = assemble(objects)
    problems.extend(link_problems)
    if problems:
        raise ConfigError(problems)
    return config
