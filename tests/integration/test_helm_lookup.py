"""A chart that calls lookup renders differently in CI (no cluster): push --render and diff
--render refuse it, naming the template file and line, unless --allow-lookup says to go on."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.artifacts_support import lockgate
from tests.integration.helm_support import helm_env, lookup_chart, pulled_docs, push_render
from tests.world.registry import Registry

pytestmark = [pytest.mark.world]

#: the call, in the packaged subchart's define, and the parent template that reaches it
WHERE = (
    "charts/db-0.1.0.tgz:db/templates/_password.tpl:2: lookup, "
    'in define "db.password", used by templates/secret.yaml:6'
)


def test_lookup_is_refused_naming_the_template_and_allowed_with_a_warning(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    chart = lookup_chart(tmp_path / "shop")
    ref = registry.oci(unique, ":v1")
    refused = push_render(chart, ref)
    assert refused.code == 8, refused.out + refused.err
    assert f"{chart}/{WHERE}" in refused.err
    assert "the chart calls lookup" in refused.err and "--allow-lookup" in refused.err
    # only the subchart's call: the comment, the {{/* */}} and .Values.lookup are not calls
    assert "config.yaml" not in refused.err
    assert lockgate("list", f"oci://{registry.host}/{unique}").out.strip() == ""  # nothing was pushed

    diffed = lockgate("diff", str(chart), ref, "--render", env=helm_env())
    assert diffed.code == 8 and WHERE in diffed.err, diffed.err

    allowed = push_render(chart, ref, "--allow-lookup")
    assert allowed.code == 0, allowed.err
    assert "warning:" in allowed.err and "returns an empty map" in allowed.err and WHERE in allowed.err
    secret = next(d for d in pulled_docs(ref, tmp_path / "out") if d["kind"] == "Secret")
    # rendered as for a cluster without the Secret: lookup found nothing, a new password was made
    assert len(secret["stringData"]["password"]) == 16
