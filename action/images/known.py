"""The fields each image automation kind accepts, so a typo is an error, not ignored.

Flux's kinds accept every field of Flux's CRDs (``image.toolkit.fluxcd.io`` v1, which
v1beta2 shares), including those lockgate reads but does not act on (``interval``,
``timeout``, ``accessFrom``...), so a Flux user's files are accepted as they are. A field
outside them is reported as ``kubectl apply --validate=strict`` would, with the closest
known name. Pure.
"""

from __future__ import annotations

import difflib
from typing import Any

#: a value of any shape (a leaf, or a free-form map such as labels)
ANY: dict[str, Any] = {}
Schema = dict[str, Any]  #: field -> ANY | Schema | [Schema] (a list of mappings)

_REF = {"name": ANY}
_NS_REF = {"name": ANY, "namespace": ANY}
_SELECTOR = {"matchLabels": ANY, "matchExpressions": [{"key": ANY, "operator": ANY, "values": ANY}]}
_ORDER = {"order": ANY}
_TOP = {"apiVersion": ANY, "kind": ANY, "metadata": ANY, "status": ANY}

IMAGE_REPOSITORY: Schema = {
    **_TOP,
    "spec": {
        "image": ANY,
        "interval": ANY,
        "timeout": ANY,
        "secretRef": _REF,
        "serviceAccountName": ANY,
        "certSecretRef": _REF,
        "proxySecretRef": _REF,
        "accessFrom": {"namespaceSelectors": [{"matchLabels": ANY}]},
        "exclusionList": ANY,
        "provider": ANY,
        "insecure": ANY,
        "suspend": ANY,
    },
}

IMAGE_POLICY: Schema = {
    **_TOP,
    "spec": {
        "imageRepositoryRef": _NS_REF,
        "policy": {"semver": {"range": ANY}, "alphabetical": _ORDER, "numerical": _ORDER},
        "filterTags": {"pattern": ANY, "extract": ANY},
        "digestReflectionPolicy": ANY,
        "interval": ANY,
    },
}

IMAGE_UPDATE_AUTOMATION: Schema = {
    **_TOP,
    "spec": {
        "sourceRef": {"apiVersion": ANY, "kind": ANY, "name": ANY, "namespace": ANY},
        "git": {
            "checkout": {"ref": {"branch": ANY, "tag": ANY, "semver": ANY, "name": ANY, "commit": ANY}},
            "commit": {
                "author": {"name": ANY, "email": ANY},
                "signingKey": {"secretRef": _REF},
                "messageTemplate": ANY,
                "messageTemplateValues": ANY,
            },
            "push": {"branch": ANY, "refspec": ANY, "options": ANY},
        },
        "interval": ANY,
        "policySelector": _SELECTOR,
        "update": {"path": ANY, "strategy": ANY},
        "suspend": ANY,
    },
}

#: lockgate's compact kind (``native.py``)
IMAGE_AUTOMATION: Schema = {
    **_TOP,
    "spec": {
        "images": [
            {
                "name": ANY,
                "image": ANY,
                "exclude": ANY,
                "credentials": ANY,
                "insecure": ANY,
                "provider": ANY,
                "semver": ANY,
                "alphabetical": ANY,
                "numerical": ANY,
                "filterTags": {"pattern": ANY, "extract": ANY},
                "digest": ANY,
            }
        ],
        "git": {
            "author": {"name": ANY, "email": ANY},
            "messageTemplate": ANY,
            "branch": ANY,
            "pushBranch": ANY,
        },
        "update": {"path": ANY},
        "suspend": ANY,
    },
}

FLUX: dict[str, Schema] = {
    "ImageRepository": IMAGE_REPOSITORY,
    "ImagePolicy": IMAGE_POLICY,
    "ImageUpdateAutomation": IMAGE_UPDATE_AUTOMATION,
}


def unknown_fields(doc: Any, schema: Schema, path: str = "") -> list[str]:
    """``<field path>: unknown field; did you mean <name>?`` for each key ``schema`` lacks."""
    if not isinstance(doc, dict) or schema is ANY:
        return []
    problems: list[str] = []
    for key, value in doc.items():
        where = f"{path}{key}"
        if key not in schema:
            close = difflib.get_close_matches(str(key), list(schema), n=1)
            hint = f"did you mean {close[0]}?" if close else f"known fields: {', '.join(schema)}"
            problems.append(f"{where}: unknown field; {hint}")
            continue
        sub = schema[key]
        if isinstance(sub, list) and isinstance(value, list):
            for index, item in enumerate(value):
                problems.extend(unknown_fields(item, sub[0], f"{where}[{index}]."))
        elif isinstance(sub, dict) and sub is not ANY:
            problems.extend(unknown_fields(value, sub, f"{where}."))
    return problems
