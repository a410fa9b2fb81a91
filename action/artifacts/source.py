"""What a command packs: a directory, one file, stdin (``-``), or a rendered kustomization/chart.

Rendering (kustomize build, helm template) is the shared ``lockgate.render``; the rendered
stream is packed as one ``manifests.yaml``.

``prepare`` yields the path to pack and cleans up any temporary copy; ``validate`` gates
the tree: at least one YAML file, and every YAML file parses (the error names file and
line) within the parsing bounds the runner applies (``lockgate.bounded``: an alias bomb
is refused here, not on every cluster). Helm ``templates/`` are not YAML until rendered,
so they are not parsed.
"""

from __future__ import annotations

import logging
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from lockgate import bounded, manifests, render
from lockgate.artifact import pack
from lockgate.artifact.limits import Limits
from lockgate.errors import RenderError, UsageError
from lockgate.render import HelmOptions

log = logging.getLogger("lockgate.build")

STDIN_FILE = "manifests.yaml"
#: a rendered kustomization or chart is packed as this one file
RENDERED_FILE = "manifests.yaml"


@dataclass(frozen=True)
class BuildOptions:
    ignore_paths: tuple[str, ...] = ()
    resolve_symlinks: bool = False
    render: bool = False
    #: how a chart is rendered (``--values``, ``--set``, ``--release-name``, ``--namespace``)
    helm: HelmOptions = field(default_factory=HelmOptions)
    validate: bool = True
    #: pack files holding a PEM private key or a cosign key (refused by default)
    allow_private_keys: bool = False
    #: a plain (unencrypted) Secret is an error, not a warning
    strict: bool = False
    #: the highest compression ratio runners extract (``--max-ratio``): a layer above is refused
    max_ratio: float = Limits.max_ratio

    @property
    def checks(self) -> str:
        """What the pack's check looks at, for the build cache's key: a cached result of a
        laxer check never stands in for a stricter one."""
        return (
            f"validate={self.validate},keys={not self.allow_private_keys},strict={self.strict},"
            f"ratio={self.max_ratio:g}"
        )

    @property
    def limits(self) -> Limits:
        """What a runner's extraction refuses that packing can see: the compression ratio."""
        return Limits(max_ratio=self.max_ratio)

    @property
    def pack_options(self) -> pack.PackOptions:
        return pack.PackOptions(ignore_paths=self.ignore_paths, resolve_symlinks=self.resolve_symlinks)


@contextmanager
def prepare(path: str, options: BuildOptions) -> Iterator[Path]:
    """The file or directory to pack for ``path`` (``-`` reads stdin)."""
    with tempfile.TemporaryDirectory(prefix="lockgate-src-") as tmp:
        if path == "-":
            data = sys.stdin.buffer.read()
            if not data.strip():
                raise UsageError(
                    "stdin (-) is empty: pipe manifests in, e.g. kustomize build . | lockgate push - ..."
                )
            target = Path(tmp) / STDIN_FILE
            target.write_bytes(data)
            yield target
            return
        given = Path(path)
        if not given.exists() and not given.is_symlink():
            raise UsageError(f"{path}: no such file or directory")
        if options.render:
            rendered = Path(tmp) / "rendered"
            rendered.mkdir()
            target = rendered / RENDERED_FILE
            target.write_text(render.render(given, purpose="--render", helm=options.helm))
            yield target
            return
        if options.helm.given:
            raise UsageError(f"{render.HELM_FLAGS} need --render")
        yield given


def _is_helm_template(entry: pack.Entry, root: Path) -> bool:
    parts = entry.name.split("/")
    for i, part in enumerate(parts[:-1]):
        if part == "templates" and (root.joinpath(*parts[:i]) / "Chart.yaml").is_file():
            return True
    return False


def require_yaml(root: Path, entries: Sequence[pack.Entry]) -> None:
    """At least one YAML file is left after the ignore rules."""
    if not any(not e.is_dir and e.name.endswith(manifests.YAML_SUFFIXES) for e in entries):
        raise UsageError(
            f"{root}: no YAML files to pack (after ignore rules); "
            "point at the directory that holds the manifests"
        )


#: a PEM private key of any kind, cosign's and Sigstore's encrypted keys included
_PRIVATE_KEY = re.compile(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
#: a document that may be a Secret (then parsed to be sure)
_SECRET_KIND = re.compile(rb"^kind:\s*[\'\"]?Secret[\'\"]?\s*$", re.MULTILINE)


def content_check(root: Path, options: BuildOptions) -> pack.Check | None:
    """The ``pack.Check`` a build runs on each file as it is packed, or None for none:
    YAML syntax (unless ``--no-validate``; Helm templates skipped), no private key (unless
    ``--allow-private-keys``: an artifact is readable by anyone with pull access), and a
    warning for a plain Secret (an error with ``--strict``)."""
    base = root if root.is_dir() else root.parent
    keys = not options.allow_private_keys
    if not (options.validate or keys):
        return None

    def check(entry: pack.Entry, data: bytes | None) -> None:
        is_yaml = entry.name.endswith(manifests.YAML_SUFFIXES)
        shown = str(base / entry.name) if root.is_dir() else str(root)
        if data is None and (keys or is_yaml):
            try:
                data = entry.source.read_bytes()
            except OSError as exc:
                raise UsageError(f"{shown}: cannot read ({exc.strerror})") from None
        if data is None:
            return
        if keys and b"PRIVATE KEY-----" in data and _PRIVATE_KEY.search(data):
            raise UsageError(
                f"{shown}: holds a private key, and an artifact is readable by anyone with pull "
                "access; keep it out (.sourceignore or --ignore-paths), or pass --allow-private-keys"
            )
        if not is_yaml or not options.validate or _is_helm_template(entry, base):
            return
        if not _well_formed(data):
            check_yaml(data, shown)
        if needs_loading(data):
            check_bounds(data, shown)
        if b"Secret" in data and _SECRET_KIND.search(data):  # the substring test is the cheap one
            _plain_secrets(data, shown, strict=options.strict)

    return check


def syntax_check(root: Path) -> pack.Check:
    """YAML syntax only (``content_check`` with the default options, for callers that have none)."""
    check = content_check(root, BuildOptions())
    assert check is not None
    return check


def _plain_secrets(data: bytes, shown: str, *, strict: bool) -> None:
    """Warn (or with ``strict`` refuse) for each Secret with data that SOPS did not encrypt."""
    try:
        docs = [doc for _, doc in bounded.yaml_documents(data.decode("utf-8"), shown)]
    except bounded.LimitExceeded:
        raise
    except (UnicodeDecodeError, RenderError):
        return  # the syntax check names the error
    for doc in docs:
        if not isinstance(doc, dict) or doc.get("kind") != "Secret" or "sops" in doc:
            continue
        if not (doc.get("data") or doc.get("stringData")):
            continue
        name = (doc.get("metadata") or {}).get("name", "?")
        message = (
            f"{shown}: Secret {name} is not encrypted, and an artifact is readable by anyone with "
            "pull access; encrypt it with SOPS (the runner's spec.decryption) or keep it out of Git"
        )
        if strict:
            raise RenderError(message + " (--strict)")
        log.warning("warning: %s", message)


def needs_loading(data: bytes) -> bool:
    """Whether the syntax check alone may pass what the runner refuses when it loads the file:
    an alias needs an anchor (``&``) and an alias (``*``); a document over the size bound needs
    a file that large; and more documents than the bound need as many ``---`` or ``...``
    markers (libyaml bounds the depth itself). All three are byte searches, no parsing."""
    limits = bounded.DEFAULT
    if b"&" in data and b"*" in data:
        return True
    if len(data) > limits.max_document_bytes:
        return True
    return (
        len(data) > limits.max_documents and data.count(b"---") + data.count(b"...") >= limits.max_documents
    )


def check_bounds(data: bytes, shown: str) -> None:
    """Load ``data`` within the parsing bounds, as the runner will (``RenderError`` over one)."""
    bounded.yaml_documents(data.decode("utf-8"), shown)


def _well_formed(data: bytes) -> bool:
    """The fast path: UTF-8 and libyaml's parser accepts it (no Python event objects built)."""
    if _raw_parse is None:
        return False
    try:
        data.decode("utf-8")
        _raw_parse(data)
    except (UnicodeDecodeError, yaml.YAMLError):
        return False
    return True


def check_yaml(data: bytes, shown: str) -> None:
    """``data`` is UTF-8 and well-formed YAML, else a ``RenderError`` naming file and line.

    libyaml's parser runs over the whole text without building Python event objects
    (``raw_parse``), many times faster than iterating ``yaml.parse``; on any complaint
    the file is parsed again by ``manifests.check_syntax`` so the message is the usual one.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise RenderError(f"{shown}: not UTF-8 text") from None
    if _raw_parse is not None:
        try:
            _raw_parse(data)
            return
        except yaml.YAMLError as exc:
            manifests.check_syntax(text, shown)
            raise RenderError(f"{shown}: invalid YAML: {exc}") from None
    manifests.check_syntax(text, shown)


def _load_raw_parse() -> Callable[[bytes], object] | None:
    try:
        from yaml import _yaml
    except ImportError:  # PyYAML without libyaml: the event loop in manifests does it
        return None

    def parse(data: bytes) -> object:
        return _yaml.CParser(data).raw_parse()

    return parse


_raw_parse = _load_raw_parse()


def validate(root: Path, entries: Sequence[pack.Entry]) -> None:
    """At least one YAML file, and all of them parse (for callers that do not pack)."""
    require_yaml(root, entries)
    check = syntax_check(root)
    for entry in entries:
        if not entry.is_dir:
            check(entry, None)
