"""The image automation model: repositories, policies and automations as values.

``config`` builds these from Flux's three kinds and ``native`` from the compact
lockgate-native document; ``scan``, ``update`` and ``run`` consume them. They live in
their own module so both readers can import them without importing each other. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from action.images import policy
from action.images.fields import LabelSelector, Where


@dataclass(frozen=True, order=True)
class NamespacedName:
    """An object's namespace and name (Kubernetes' ``types.NamespacedName``)."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}:{self.name}"  # the marker spelling, {"$imagepolicy": "ns:name"}


@dataclass(frozen=True)
class ImageRepository:
    key: NamespacedName
    image: str
    exclusion_list: tuple[str, ...] = policy.DEFAULT_EXCLUSION_LIST
    secret_ref: str | None = None  #: Flux ``secretRef.name``: a Docker config Secret (see credentials.py)
    credentials_file: str | None = None  #: native ``credentials``: a Docker config file path
    insecure: bool = False
    #: Flux ``certSecretRef.name`` and ``proxySecretRef.name``, read under ``--secrets-dir`` (transport.py)
    cert_secret_ref: str | None = None
    proxy_secret_ref: str | None = None
    provider: str = "generic"
    where: Where | None = None


@dataclass(frozen=True)
class ImagePolicy:
    key: NamespacedName
    repository: NamespacedName
    choice: policy.Choice
    tag_filter: policy.TagFilter | None = None
    digest_reflection: str = "Never"
    labels: Mapping[str, str] = field(default_factory=dict)
    where: Where | None = None


@dataclass(frozen=True)
class Automation:
    key: NamespacedName
    author_name: str
    author_email: str
    message_template: str = ""
    template_values: Mapping[str, str] = field(default_factory=dict)
    checkout_branch: str | None = None
    push_branch: str | None = None
    push_options: Mapping[str, str] = field(default_factory=dict)
    update_path: str = "."
    policy_selector: LabelSelector | None = None
    signing_key_secret: str | None = None
    suspended: bool = False  #: ``spec.suspend``: the automation is skipped (and reported)
    where: Where | None = None


@dataclass(frozen=True)
class Config:
    repositories: Mapping[NamespacedName, ImageRepository] = field(default_factory=dict)
    policies: Mapping[NamespacedName, ImagePolicy] = field(default_factory=dict)
    automations: tuple[Automation, ...] = ()


#: what one configuration document yields
Object = ImageRepository | ImagePolicy | Automation
