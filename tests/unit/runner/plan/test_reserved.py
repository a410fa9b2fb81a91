"""The names and the label only lockgate writes (``runner.plan.reserved``): no artifact's object
may take another sync's inventory, Lease or a replica's membership Lease, or pose as a parent."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.manifests import ObjectKey
from runner.plan import applyset
from runner.plan.reserved import Reserved

RESERVED = Reserved("web", "lockgate-system", frozenset({"team-a"}))


def _body(**labels: str) -> dict[str, Any]:
    return {"metadata": {"labels": labels}} if labels else {"metadata": {}}


@pytest.mark.parametrize(
    ("key", "said"),
    [
        (ObjectKey("", "Secret", "lockgate-system", "lockgate-db"), "is the name of Sync db's inventory"),
        (ObjectKey("", "Secret", "team-a", "lockgate-db"), "in runner namespace team-a"),
        (ObjectKey("", "Secret", "lockgate-system", "lockgate-web"), "this sync's (web) inventory"),
        (ObjectKey("coordination.k8s.io", "Lease", "lockgate-system", "lockgate-db"), "Sync db's Lease"),
        (
            ObjectKey("coordination.k8s.io", "Lease", "team-a", "lockgate-runner-pod-1"),
            "a replica's membership Lease",
        ),
    ],
)
def test_the_records_of_a_runner_namespace_are_refused(key: ObjectKey, said: str) -> None:
    why = RESERVED.why(key, _body())
    assert why is not None and said in why, why
    assert RESERVED.message(why).startswith("Sync web may not apply it: ")


@pytest.mark.parametrize(
    "key",
    [
        ObjectKey("", "Secret", "apps", "lockgate-db"),  # not a runner namespace
        ObjectKey("", "Secret", "lockgate-system", "lockgate"),  # no sync has an empty name
        ObjectKey("", "ConfigMap", "lockgate-system", "lockgate-config"),  # the install's own
        ObjectKey("", "Secret", "lockgate-system", "webhook-token"),
        ObjectKey("apps", "Deployment", "lockgate-system", "lockgate-web"),
    ],
)
def test_other_objects_are_not(key: ObjectKey) -> None:
    assert RESERVED.why(key, _body()) is None


def test_no_object_may_carry_the_id_label_of_a_parent() -> None:
    posing = _body(**{applyset.ID_LABEL: applyset.applyset_id("lockgate-db", "lockgate-system")})
    why = RESERVED.why(ObjectKey("", "ConfigMap", "apps", "x"), posing)
    assert why is not None and applyset.ID_LABEL in why
    member = _body(**{applyset.PART_OF_LABEL: "applyset-x-v1"})
    assert RESERVED.why(ObjectKey("", "ConfigMap", "apps", "x"), member) is None
