"""Where a sync's outcome is reported: the providers of a Sync's and the Runner's ``notify`` lists.

A value of the configuration, resolved once when the file is loaded (the commit status
context holds the cluster and sync names already); the delivery is ``runner.serve.notify``'s.
The pipeline only calls a hook when a pass starts applying, so ``pending`` can be posted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from lockgate.forge.destination import Pin
from runner.pipeline.eventfilter import EventFilter

ProviderType = Literal[
    "github",
    "generic",
    "slack",
    "msteams",
    "alertmanager",
    "gitlab",
    "gitea",
    "bitbucket",
    "bitbucketserver",
    "azuredevops",
]
#: the providers that post a commit status (Flux's names); the others send events
FORGE_TYPES: frozenset[str] = frozenset(
    {"github", "gitlab", "gitea", "bitbucket", "bitbucketserver", "azuredevops"}
)
DEFAULT_CLUSTER = "default"


@dataclass(frozen=True)
class Provider:
    type: ProviderType
    #: event providers: the URL to POST to (the Secret's ``address`` entry wins); a forge: the
    #: repository its statuses go to (Flux's Provider ``address``), held in ``pin``
    address: str | None = None
    #: a Secret of the runner namespace: ``token`` (github token, generic HMAC key), ``address``
    secret_ref: str | None = None
    #: the namespace of ``secret_ref``; None: the sync's runner namespace
    secret_namespace: str | None = None
    #: a forge: the host (and, with ``address``, the repository) its token may go to, from this
    #: configuration only (``lockgate.forge.destination``); None for event providers
    pin: Pin | None = None
    #: where the provider is configured, for messages: ``Runner: spec.notify[0]``, ``Sync/web: ...``
    where: str = ""
    #: a forge: the commit status context, with the cluster and sync names filled in
    context: str = ""
    #: a forge: the status's link
    target_url: str | None = None
    #: a Secret of the same namespace as ``secret_ref``'s whose ``ca.crt`` the forge's TLS
    #: certificate must chain to (a self-hosted forge with a private CA)
    cert_secret_ref: str | None = None
    #: event providers: which events are sent (Flux's Alert ``eventSeverity``, inclusion/exclusion)
    events: EventFilter = field(default_factory=EventFilter)

    @property
    def forge(self) -> bool:
        """Posts a commit status (github, gitlab, gitea, bitbucket, bitbucketserver, azuredevops)."""
        return self.type in FORGE_TYPES

    @property
    def label(self) -> str:
        """How logs and metrics name it: the type only (an address may hold a credential)."""
        return self.type


def context_for(template: str | None, *, cluster: str, sync: str) -> str:
    """``lockgate/<cluster>/<sync>``, or ``template`` with ``{cluster}`` and ``{sync}`` replaced."""
    if not template:
        return f"lockgate/{cluster}/{sync}"
    return template.replace("{cluster}", cluster).replace("{sync}", sync)
