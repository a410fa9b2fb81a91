"""Parse and print artifact references: ``oci://host[:port]/repo[:tag][@sha256:hex]``.

Every command that talks to a registry starts here, so a malformed reference is
rejected before any network traffic, with a message that shows the expected shape.
``oci-layout://DIR[:tag][@sha256:hex]`` names an OCI image layout directory instead (an
air-gapped mirror); its ``layout`` is the directory and ``RegistryClient.for_reference``
hands out the layout store (``layout_dir``) for it.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, replace

from lockgate.errors import UsageError
from lockgate.redact import has_userinfo, mask_reference

SCHEME = "oci://"
LAYOUT_SCHEME = "oci-layout://"
#: the host and repository of a layout reference (a layout has neither; the store ignores them)
LAYOUT_HOST, LAYOUT_REPOSITORY = "oci-layout", "layout"
_HOST = re.compile(
    r"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)*|\[[0-9a-fA-F:]+\])(?::\d+)?$"
)
_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
DIGEST_PATTERN = re.compile(r"^sha256:[a-f0-9]{64}$|^sha512:[a-f0-9]{128}$")


@dataclass(frozen=True)
class Reference:
    """A repository in a registry, optionally narrowed to a tag and/or a digest."""

    host: str
    repository: str
    tag: str | None = None
    digest: str | None = None
    #: the OCI image layout directory of an ``oci-layout://`` reference
    layout: str | None = None

    @property
    def ref(self) -> str:
        """What to put after ``/manifests/``: the digest when known, else the tag, else ``latest``."""
        return self.digest or self.tag or "latest"

    @property
    def name(self) -> str:
        """``host/repo``, as Flux prints ``repository`` (a layout: its directory)."""
        if self.layout is not None:
            return self.layout
        return f"{self.host}/{self.repository}"

    def pinned(self, digest: str) -> str:
        """``oci://host/repo@digest`` (``oci-layout://DIR@digest``): the URL of one digest."""
        return f"{LAYOUT_SCHEME if self.layout is not None else SCHEME}{self.name}@{digest}"

    @property
    def is_loopback(self) -> bool:
        """localhost, 127.0.0.0/8 or ::1: tried over https, then plain http, as in go-containerregistry."""
        if self.layout is not None:
            return False
        return is_loopback_host(self.host)

    def with_tag(self, tag: str) -> Reference:
        return replace(self, tag=_check_tag(tag, tag), digest=None)

    def with_digest(self, digest: str) -> Reference:
        return replace(self, digest=_check_digest(digest, digest))

    def __str__(self) -> str:
        text = f"{LAYOUT_SCHEME if self.layout is not None else SCHEME}{self.name}"
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text


def parse(text: str, *, default_tag: str | None = None) -> Reference:
    """Parse ``oci://host/repo[:tag][@digest]`` (the ``oci://`` prefix is optional) or
    ``oci-layout://DIR[:tag][@digest]``."""
    if text.startswith(LAYOUT_SCHEME):
        return parse_layout(text, default_tag=default_tag)
    body = text[len(SCHEME) :] if text.startswith(SCHEME) else text
    if has_userinfo(body):
        raise UsageError(
            f"invalid reference {mask_reference(text)!r}: credentials do not go in a reference (they would "
            "end up in shell history, CI logs and process lists); remove 'USER:PASSWORD@' and log in "
            "with 'docker login HOST' (lockgate reads the Docker config: DOCKER_CONFIG or "
            "~/.docker/config.json, with credsStore and credHelpers), pass --creds USER:PASSWORD to the CI "
            "commands, or name a dockerconfigjson Secret in a Sync's spec.secretRef.name"
        )
    text = mask_reference(text)
    if "://" in body:
        raise UsageError(
            f"invalid reference {text!r}: only oci:// and oci-layout:// references are supported"
        )
    digest = None
    if "@" in body:
        body, digest = body.split("@", 1)
        _check_digest(digest, text)
    host, sep, path = body.partition("/")
    if not sep or not path:
        raise UsageError(
            f"invalid reference {text!r}: expected oci://REGISTRY/REPOSITORY[:TAG|@sha256:DIGEST]"
        )
    if not _HOST.match(host) or ("." not in host and ":" not in host and host != "localhost"):
        raise UsageError(
            f"invalid reference {text!r}: {host!r} is not a registry host "
            "(write the registry explicitly, e.g. oci://ghcr.io/org/repo)"
        )
    tag = None
    last = path.rsplit("/", 1)[-1]
    if ":" in last:
        path, tag = path.rsplit(":", 1)
        _check_tag(tag, text)
    for component in path.split("/"):
        if not _COMPONENT.match(component):
            raise UsageError(
                f"invalid reference {text!r}: repository component {component!r} must be lowercase "
                "letters, digits and separators (., _, __, -)"
            )
    if tag is None and digest is None:
        tag = default_tag
    return Reference(host=host, repository=path, tag=tag, digest=digest)


def repository_name(text: str, what: str) -> str:
    """``REGISTRY/REPO`` from ``[oci://]REGISTRY/REPO`` (a repository a signature names), or
    a usage error naming ``what`` (the flag or field)."""
    try:
        ref = parse(text)
    except UsageError as exc:
        raise UsageError(f"{what}: {exc.message}") from None
    if ref.layout is not None or ref.tag or ref.digest:
        raise UsageError(f"{what} {text!r}: expected REGISTRY/REPOSITORY, without a tag or digest")
    return ref.name


def parse_layout(text: str, *, default_tag: str | None = None) -> Reference:
    """``oci-layout://DIR[:tag][@digest]``, as oras names a layout: a tag follows the last
    ``:`` after the directory's last ``/``, so a directory name may hold neither ``:`` nor ``@``."""
    body = text[len(LAYOUT_SCHEME) :]
    digest = None
    if "@" in body:
        body, digest = body.rsplit("@", 1)
        _check_digest(digest, text)
    tag = None
    head, _, last = body.rpartition("/")
    if ":" in last:
        last, tag = last.rsplit(":", 1)
        _check_tag(tag, text)
        body = f"{head}/{last}" if head or body.startswith("/") else last
    if not body:
        raise UsageError(f"invalid reference {text!r}: expected oci-layout://DIRECTORY[:TAG|@sha256:DIGEST]")
    if tag is None and digest is None:
        tag = default_tag
    return Reference(LAYOUT_HOST, LAYOUT_REPOSITORY, tag=tag, digest=digest, layout=body)


def _check_tag(tag: str, text: str) -> str:
    if not _TAG.match(tag):
        raise UsageError(f"invalid tag {tag!r} in {text!r}: tags are [A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}}")
    return tag


def _check_digest(digest: str, text: str) -> str:
    if not DIGEST_PATTERN.match(digest):
        raise UsageError(f"invalid digest {digest!r} in {text!r}: expected sha256:<64 lowercase hex digits>")
    return digest


def is_loopback_host(host: str) -> bool:
    """``host`` (with or without a port) is localhost, in 127.0.0.0/8 or ::1."""
    hostname = host[1:].split("]", 1)[0] if host.startswith("[") else host.rsplit(":", 1)[0]
    if hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(hostname).is_loopback
    except ValueError:
        return False
