"""What a deletion does with what the sync recorded, a person's overrides and a suspended sync."""

from __future__ import annotations

from runner.pipeline import deletion
from runner.pipeline.result import Result
from runner.plan.deletion import DeletionRefused, Policy, Recorded
from runner.plan.inventory import Inventory


def _inventory(recorded: Recorded | None, *, suspended: bool = False, digest: str = "sha256:1") -> Inventory:
    return Inventory(name="web", namespace="runner", deletion=recorded, suspended=suspended, digest=digest)


def test_the_recorded_policy_decides() -> None:
    recorded, deletes, why = deletion.settings(_inventory(Recorded(Policy.DELETE)), deletion.DeleteOptions())
    assert recorded.policy is Policy.DELETE and deletes and why == "deletionPolicy Delete"
    _, deletes, why = deletion.settings(_inventory(Recorded(prune=False)), deletion.DeleteOptions())
    assert not deletes and why == "deletionPolicy MirrorPrune (prune: false)"


def test_a_person_overrides_the_policy_and_the_timeout() -> None:
    options = deletion.DeleteOptions(policy=Policy.WAIT_FOR_TERMINATION, timeout=5.0)
    recorded, deletes, _ = deletion.settings(_inventory(Recorded(Policy.ORPHAN, timeout=300.0)), options)
    assert recorded.policy is Policy.WAIT_FOR_TERMINATION and recorded.timeout == 5.0 and deletes


def test_a_suspended_sync_and_an_unrecorded_one_are_orphaned_unless_a_person_says() -> None:
    _, deletes, why = deletion.settings(
        _inventory(Recorded(Policy.DELETE), suspended=True), deletion.DeleteOptions()
    )
    assert not deletes and "suspended" in why
    _, deletes, why = deletion.settings(_inventory(None), deletion.DeleteOptions())
    assert not deletes and "no deletionPolicy recorded" in why
    _, deletes, _ = deletion.settings(_inventory(None), deletion.DeleteOptions(policy=Policy.DELETE))
    assert deletes


def test_a_sync_that_never_applied_has_nothing_to_delete_and_says_so() -> None:
    """Its passes failed before the cluster: no digest, no members (not an older runner's parent)."""
    _, deletes, why = deletion.settings(_inventory(None, digest=""), deletion.DeleteOptions())
    assert not deletes and why == "the sync never applied anything: there are no objects to delete"


def test_only_a_deletion_that_got_to_the_parent_deleted_the_sync() -> None:
    assert deletion.parent_deleted(Result(name="web"))
    assert not deletion.parent_deleted(Result(name="web", dry_run=True))
    gave_up = Result(name="web", error=deletion.TerminationTimeout("gave up"))
    assert deletion.parent_deleted(gave_up)
    refused = Result(name="web", error=DeletionRefused("web", 2, 2, Recorded(prune=True)))
    assert not deletion.parent_deleted(refused)
