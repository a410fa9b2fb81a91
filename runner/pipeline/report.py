"""The human summary of a pass, rendered from its ``Result`` (change set, health, costs, the
whole error)."""

from __future__ import annotations

from runner.pipeline.result import Result


def table(result: Result) -> str:
    lines = [f"sync {result.name}" + (" (dry run: nothing was changed)" if result.dry_run else "")]
    if result.url:
        lines.append(f"  source:   {result.url}")
        lines.append(f"  revision: {result.revision}")
        lines.append(f"  verified: {result.verified_by}")
        lines.extend(f"  admitted: {line}" for line in result.admitted)
    if result.changeset.entries:
        lines.extend("  " + line for line in result.changeset.table().splitlines())
    if result.health:
        unhealthy = {k: h for k, h in result.health.items() if h.status.value != "Current"}
        lines.append(f"  health: {len(result.health) - len(unhealthy)}/{len(result.health)} Current")
    if result.rolled_back_to:
        lines.append(f"  rolled back: {result.rolled_back_from} -> {result.rolled_back_to}")
    if result.skipped:
        lines.append(f"  skipped: {result.skipped}")
    if result.waiting and result.waiting != result.skipped:
        lines.append(f"  waiting: {result.waiting}")
    if result.attested:
        lines.append(f"  attestation: {result.attested}")
    lines.extend(f"  note: {note}" for note in result.notes)
    requests = sum(result.requests.values())
    lines.append(f"  {requests} API requests in {result.seconds:.1f}s")
    if result.error is not None:
        # whole: the objects a failure names are part of it (stderr repeats it for scripts)
        first, *rest = result.error.message.splitlines() or [""]
        lines.append(f"  FAILED: {first}")
        lines.extend(f"    {line}" for line in rest)
    return "\n".join(lines)
