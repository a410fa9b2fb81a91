"""The YAML ``lockgate import`` writes: block style, keys in the order built, stable bytes.

Pure. Each document is preceded by comment lines saying where it came from; two renders of
equal values are equal bytes (no timestamps, no set or dict ordering left to chance).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

#: the order of a Sync's spec keys in the written file
SPEC_ORDER = (
    "url", "semver", "path", "interval", "driftInterval", "retryInterval", "timeout", "prune", "wait",
    "force", "deletionPolicy", "suspend", "dependsOn", "serviceAccountName", "provider", "secretRef",
    "certSecretRef", "proxySecretRef", "insecure", "verify", "targetNamespace", "namePrefix", "nameSuffix",
    "patches", "images", "components", "ignoreMissingComponents", "commonMetadata", "postBuild", "decryption",
    "healthChecks", "healthCheckExprs", "ignore", "notify",
)  # fmt: skip


def ordered(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A Sync's spec with its keys in ``SPEC_ORDER`` (the rest after, as given)."""
    result = {k: spec[k] for k in SPEC_ORDER if k in spec}
    result.update({k: v for k, v in spec.items() if k not in result})
    return result


class _Dumper(yaml.SafeDumper):
    """Block style; multi-line strings (patches, CEL) as literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def dump(value: Any) -> str:
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=100)


@dataclass(frozen=True)
class Document:
    value: dict[str, Any]
    #: comment lines written above the document (without ``# ``)
    comments: tuple[str, ...] = ()


def documents(docs: Sequence[Document], *, header: Sequence[str] = ()) -> str:
    parts: list[str] = []
    for index, doc in enumerate(docs):
        lines = [f"# {line}" if line else "#" for line in (*(header if index == 0 else ()), *doc.comments)]
        parts.append("\n".join([*lines, dump(doc.value).rstrip("\n")]) + "\n")
    return "---\n".join(parts)
