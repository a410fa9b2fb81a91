"""Cluster-native inputs of a pass: registry credentials and cosign keys from Secrets.

A Sync's ``spec.secretRef`` names a ``kubernetes.io/dockerconfigjson`` Secret (Flux's
OCIRepository ``secretRef``) and ``spec.verify.secretRef`` a Secret whose every ``*.pub``
entry is a cosign public key (Flux's ``verify.secretRef``; for ``verify.attestations[]``, each
bound to the cluster its entry names, ``lockgate.signing.keybinding``). Both are read at each pass through
the pass's ``Kube`` client, because Secrets rotate; their values live only in memory (never a
file, never a message). Errors name ``Secret/NS/NAME`` and the Sync field to fix. A missing or
unusable credentials Secret is an ``AuthError``; a keys Secret, a ``VerificationError``
(verification fails closed). ``usable_token`` holds ``serve``'s webhook and status page
tokens to a minimum length.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable

from lockgate.errors import AuthError, LockgateError, UsageError, VerificationError
from lockgate.registry import credentials
from lockgate.signing import keybinding, keys
from lockgate.signing.keys import PrivateKey
from lockgate.signing.policy import KeySetPolicy
from runner.kube.client import Kube
from runner.kube.discovery import SECRET

DOCKER_CONFIG_JSON = "kubernetes.io/dockerconfigjson"
DOCKER_CONFIG_KEY = ".dockerconfigjson"
CREDENTIALS_FIELD = "spec.secretRef.name"
KEYS_FIELD = "spec.verify.secretRef.name"
ATTEST_FIELD = "spec.attest.secretRef.name"
SIGNING_KEY_ENTRY = "cosign.key"
SIGNING_PASSWORD_ENTRY = "cosign.password"
TOKEN_ENTRY = "token"
#: the shortest webhook or status page token accepted: an empty HMAC key authenticates
#: anyone, and a short one can be guessed
MIN_TOKEN_BYTES = 16


def _nothing(name: str) -> bool:
    return False


def usable_token(data: dict[str, bytes], *, where: str, what: str) -> bytes:
    """The ``token`` entry of a webhook or status page Secret; ``UsageError`` when it is missing
    or shorter than ``MIN_TOKEN_BYTES``. The message names the Secret and field, never the value."""
    token = data.get(TOKEN_ENTRY)
    if token is None:
        problem = f"has no {TOKEN_ENTRY!r} entry"
    elif len(token) < MIN_TOKEN_BYTES:
        problem = f"its {TOKEN_ENTRY!r} entry is {len(token)} bytes long"
    else:
        return token
    raise UsageError(
        f"{where}: {problem}; the {what} token must be at least {MIN_TOKEN_BYTES} bytes (an empty or "
        "short one can be forged or guessed): set it to a random one, e.g. "
        f'kubectl create secret generic NAME --from-literal={TOKEN_ENTRY}="$(openssl rand -hex 32)"'
    )


class SecretReader:
    """The Secrets of one runner namespace, read through ``kube``."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        self.kube = kube
        self.namespace = namespace

    def where(self, name: str, field: str) -> str:
        return f"Secret/{self.namespace}/{name} ({field})"

    def read(
        self,
        name: str,
        *,
        field: str,
        secret_type: str | None = None,
        error: type[LockgateError] = UsageError,
    ) -> dict[str, bytes]:
        """The decoded ``data`` of Secret ``name``; ``error`` when it is missing or not ``secret_type``."""
        where = self.where(name, field)
        secret = self.kube.get(SECRET, self.namespace, name)
        if secret is None:
            raise error(f"{where}: not found")
        found_type = secret.get("type") or "Opaque"
        if secret_type is not None and found_type != secret_type:
            raise error(f"{where}: is of type {found_type}, expected {secret_type}")
        data = secret.get("data") or {}
        decoded: dict[str, bytes] = {}
        for key, value in data.items() if isinstance(data, dict) else ():
            try:
                decoded[str(key)] = base64.b64decode(str(value), validate=True)
            except binascii.Error:
                raise error(f"{where}: entry {key!r} is not base64") from None
        return decoded

    def registry_credentials(
        self, name: str, host: str, *, field: str = CREDENTIALS_FIELD
    ) -> credentials.Credentials:
        """The credentials for ``host`` in dockerconfigjson Secret ``name`` (``field`` refers to it)."""
        where = self.where(name, field)
        data = self.read(name, field=field, secret_type=DOCKER_CONFIG_JSON, error=AuthError)
        config = data.get(DOCKER_CONFIG_KEY)
        if config is None:
            raise AuthError(f"{where}: has no {DOCKER_CONFIG_KEY} entry")
        try:
            found = credentials.from_docker_config(config, host, origin=f"{where}: {DOCKER_CONFIG_KEY}")
        except UsageError as exc:
            raise AuthError(exc.message) from None
        if found is None:
            hosts = credentials.auth_hosts(config)
            has = f"it has entries for {', '.join(hosts)}" if hosts else "it has no entries"
            raise AuthError(f"{where}: {DOCKER_CONFIG_KEY} has no credentials for {host} ({has})")
        return found

    def key_policy(
        self,
        name: str,
        *,
        field: str = KEYS_FIELD,
        bind: bool | None = False,
        selects: Callable[[str], bool] = _nothing,
    ) -> KeySetPolicy:
        """Every ``*.pub`` entry of Secret ``name`` as one policy: any key verifying suffices.

        For attesters, ``bind`` and ``selects`` bind the keys to the clusters their entries
        name (``keybinding``); an artifact's signing keys are bound to nothing."""
        where = self.where(name, field)
        data = self.read(name, field=field, error=VerificationError)
        pems = {key: value for key, value in data.items() if key.endswith(".pub")}
        if not pems:
            entries = ", ".join(sorted(data)) or "none"
            raise VerificationError(f"{where}: has no *.pub entries (entries: {entries})")
        try:
            source = f"Secret/{self.namespace}/{name}"
            return keybinding.key_set(pems, source=source, bind=bind, selects=selects)
        except UsageError as exc:
            raise VerificationError(f"{exc.message} ({field})") from None

    def signing_key(self, name: str, *, field: str = ATTEST_FIELD) -> PrivateKey:
        """The cosign private key in Secret ``name`` (``cosign.key``, decrypted with ``cosign.password``);
        ``field`` names where the configuration refers to it."""
        where = self.where(name, field)
        data = self.read(name, field=field)
        missing = [e for e in (SIGNING_KEY_ENTRY, SIGNING_PASSWORD_ENTRY) if e not in data]
        if missing:
            entries = ", ".join(sorted(data)) or "none"
            raise UsageError(f"{where}: has no {' or '.join(missing)} entry (entries: {entries})")
        return keys.load_private_key(
            data[SIGNING_KEY_ENTRY],
            data[SIGNING_PASSWORD_ENTRY],
            source=f"Secret/{self.namespace}/{name}[{SIGNING_KEY_ENTRY}] ({field})",
        )
