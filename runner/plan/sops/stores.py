"""The documents a Secret entry can hold encrypted: YAML, JSON, dotenv, INI (sops' ``stores/``).

kustomize-controller decrypts a Secret's ``data`` entry when its decoded bytes carry a
sops marker (``mac: ENC[`` YAML, ``"mac": "ENC[`` JSON, ``sops_mac=ENC[`` dotenv,
``[sops]`` INI) and writes the plaintext in the format the entry's name says (``.yaml``
or ``.yml``, ``.json`` and ``.dockerconfigjson``, ``.env``, ``.ini``; any other name is
binary: the ``data`` value of a JSON envelope). dotenv and INI hold the metadata
flattened (``sops_age__list_0__map_enc``; INI in a ``[sops]`` section with escaped
newlines); they are unflattened here as sops does. Comments are dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import yaml

from lockgate import bounded
from lockgate.errors import RenderError
from runner.plan.sops import cipher
from runner.plan.sops.tree import METADATA_KEY, SopsError

MAP = "__map_"
LIST = "__list_"
PREFIX = METADATA_KEY + "_"
#: (format, marker), in the order they are tried
MARKERS = (
    ("yaml", b"mac: ENC["),
    ("json", b'"mac": "ENC['),
    ("dotenv", b"sops_mac=ENC["),
    ("ini", b"[sops]"),
)
_TOKEN = re.compile(f"({MAP}|{LIST})")


def detect(data: bytes) -> str | None:
    """The input format of an encrypted entry, by its marker (Flux's rule), else None."""
    for name, marker in MARKERS:
        if marker in data:
            return name
    return None


def output_format(key: str) -> str:
    """The format the plaintext is written in, by the entry's name (Flux's ``formatForPath``)."""
    if key.endswith(".dockerconfigjson") or key.endswith(".json"):
        return "json"
    if key.endswith((".yaml", ".yml")):
        return "yaml"
    if key.endswith(".env"):
        return "dotenv"
    if key.endswith(".ini"):
        return "ini"
    return "binary"


def unflatten(flat: dict[str, Any]) -> dict[str, Any]:
    """sops' ``unflattenTreeBranch``: ``age__list_0__map_enc`` -> ``{age: [{enc: ...}]}``."""
    root: dict[str, Any] = {}
    for key, value in flat.items():
        parts = _TOKEN.split(key)
        tokens: list[str | int] = [parts[0]]
        for sep, name in zip(parts[1::2], parts[2::2], strict=True):
            if sep == LIST:
                if not name.isdigit():
                    raise SopsError(f"sops metadata key {key!r} has a list index that is not a number")
                tokens.append(int(name))
            else:
                tokens.append(name)
        node: Any = root
        for here, after in zip(tokens, [*tokens[1:], None], strict=True):
            last = after is None
            child: Any = value if last else ([] if isinstance(after, int) else {})
            if isinstance(here, int):
                if not isinstance(node, list):
                    raise SopsError(f"sops metadata key {key!r} mixes a list and a mapping")
                while len(node) <= here:
                    node.append(None)
                if node[here] is None:
                    node[here] = child
                node = node[here]
            else:
                if not isinstance(node, dict):
                    raise SopsError(f"sops metadata key {key!r} mixes a list and a mapping")
                node = node.setdefault(here, child)
    return root


def _dotenv(text: str) -> tuple[list[Any], Any]:
    branch: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise SopsError(f"line {number} is not KEY=VALUE")
        value = value.replace("\\n", "\n")
        if key.startswith(PREFIX):
            meta[key[len(PREFIX) :]] = value
        else:
            branch[key] = value
    return [branch], unflatten(meta)


def _ini(text: str) -> tuple[list[Any], Any]:
    sections: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1].strip(), {})
            continue
        key, sep, value = line.partition("=")
        if not sep or current is None:
            raise SopsError(f"line {number} is neither a [section] nor key = value in a section")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        current[key.strip()] = value
    flat = sections.pop(METADATA_KEY, None)
    if flat is None:
        raise SopsError("has no [sops] section")
    meta = unflatten({k: v.replace("\\n", "\n") for k, v in flat.items()})
    sections.pop("DEFAULT", None)
    return [sections], meta


def _json(text: str) -> tuple[list[Any], Any]:
    try:
        doc = bounded.json_value(text, "", max_bytes=bounded.DEFAULT.max_bytes)
    except json.JSONDecodeError as exc:
        raise SopsError(f"is not valid JSON (line {exc.lineno})") from None
    except bounded.LimitExceeded as exc:
        raise SopsError(exc.message) from None
    if not isinstance(doc, dict):
        raise SopsError("is not a JSON object")
    return [doc], doc.pop(METADATA_KEY, None)


def _yaml(text: str) -> tuple[list[Any], Any]:
    try:
        docs = [d for _, d in bounded.yaml_documents(text, "") if d is not None]
    except bounded.LimitExceeded as exc:
        raise SopsError(exc.message) from None
    except RenderError:
        raise SopsError("is not valid YAML") from None
    if not docs or not all(isinstance(d, dict) for d in docs):
        raise SopsError("is not a YAML mapping")
    return docs, docs[0].pop(METADATA_KEY, None) if METADATA_KEY in docs[0] else None


LOADERS: dict[str, Callable[[str], tuple[list[Any], Any]]] = {
    "yaml": _yaml,
    "json": _json,
    "dotenv": _dotenv,
    "ini": _ini,
}


def load(data: bytes, fmt: str) -> tuple[list[Any], Any]:
    """The branches (documents) and the nested ``sops`` metadata of an encrypted entry."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SopsError("is not UTF-8 text") from None
    branches, meta = LOADERS[fmt](text)
    if meta is None:
        raise SopsError(f"has a sops marker but no sops metadata ({fmt})")
    for branch in branches[1:]:
        branch.pop(METADATA_KEY, None)
    return branches, meta


def _scalar(value: Any) -> str:
    """sops' ``ValToString`` for the flat formats."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = cipher.go_float(value)
        return text if "." in text or not text.lstrip("-").isdigit() else text + ".0"
    return str(value)


def emit(branches: list[Any], fmt: str) -> bytes:
    """The plaintext in ``fmt``; raises ``SopsError`` when the document does not fit it."""
    if fmt == "yaml":
        return yaml.safe_dump_all(branches, sort_keys=False, allow_unicode=True).encode()
    if len(branches) != 1:
        raise SopsError(f"holds {len(branches)} documents, which {fmt} cannot hold")
    (doc,) = branches
    if fmt == "json":
        return (json.dumps(doc, indent=4, ensure_ascii=False) + "\n").encode()
    if fmt == "binary":
        value = doc.get("data")
        if not isinstance(value, str):
            raise SopsError(
                "has no string 'data' value to write as binary (name the entry .yaml, .json, .env or .ini)"
            )
        return value.encode("utf-8", "surrogateescape")
    if fmt == "dotenv":
        lines = []
        for key, value in doc.items():
            if isinstance(value, dict | list):
                raise SopsError(f"cannot write the nested value of {key!r} as dotenv")
            text = value.replace("\n", "\\n") if isinstance(value, str) else _scalar(value)
            lines.append(f"{key}={text}\n")
        return "".join(lines).encode()
    out = []
    for name, section in doc.items():
        if not isinstance(section, dict):
            raise SopsError(f"cannot write {name!r} as an INI section (not a mapping)")
        out.append(f"[{name}]\n")
        out.extend(f"{key} = {_scalar(value)}\n" for key, value in section.items())
        out.append("\n")
    return "".join(out).encode()
