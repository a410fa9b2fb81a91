"""CLI JSON -> outputs, Job Summary and annotations; workflow-command escaping."""

from __future__ import annotations

import json
from pathlib import Path

from action.github import commands, report

DIGEST = "sha256:" + "b" * 64
PUSH = {
    "url": f"oci://r.io/app@{DIGEST}",
    "repository": "r.io/app",
    "tag": "main",
    "digest": DIGEST,
    "status": "pushed",
    "tags": ["main", "v1"],
    "path": "deploy",
    "revision": "main@sha1:abc",
    "signed": {
        "signer": "key sha256:123",
        "reference": "x",
        "digest": DIGEST,
        "mode": "key",
        "storedAt": "y",
    },
}


def test_push_outputs_and_summary() -> None:
    out = report.outputs("push", PUSH)
    assert out["digest"] == DIGEST and out["url"] == PUSH["url"] and out["revision"] == "main@sha1:abc"
    assert out["changed"] == "true" and out["signed-by"] == "key sha256:123"
    assert set(out) == set(report.OUTPUTS)
    text = report.summary("push", PUSH)
    assert "| Artifact | Digest | Tags | Status | Revision | Signer |" in text
    assert f"| `r.io/app` | `{DIGEST}` | `main, v1` | `pushed` | `main@sha1:abc` | `key sha256:123` |" in text


def test_a_failed_command_gets_its_json_output_and_a_summary_of_the_error() -> None:
    refused = {"error": {"message": "cannot reach registry 127.0.0.1:9", "exitCode": 9}}
    for command in ("push", "sign", "verify", "diff", "images-update", "reconcile"):
        out = report.outputs(command, refused)
        assert json.loads(out["json"]) == refused and out["changed"] == "false" and out["digest"] == ""
        assert "Failed (exit 9): cannot reach registry 127.0.0.1:9" in report.summary(command, refused)
    # push --each cut short: the failed and not attempted rows have no repository or digest
    partial = [
        PUSH,
        {"path": "apps/b", "status": "failed", "error": "boom"},
        {"path": "apps/c", "status": "notAttempted"},
    ]
    assert report.outputs("push", partial)["digest"] == DIGEST
    text = report.summary("push", partial)
    assert "| `apps/b` | - | - | `failed` | `boom` | - |" in text and "`notAttempted`" in text


def test_unchanged_push_is_not_changed() -> None:
    assert report.outputs("push", [PUSH | {"status": "unchanged"}])["changed"] == "false"


def test_diff_summary_lists_changed_objects_with_their_fields() -> None:
    result = {
        "equal": False,
        "counts": {"created": 1, "configured": 1, "unchanged": 1, "skipped": 0, "deleted": 0},
        "objects": [
            {"object": "ConfigMap/default/new", "action": "created"},
            {
                "object": "Deployment/default/web",
                "action": "configured",
                "changes": [
                    {"path": "spec.replicas", "before": 1, "after": 3},
                    {"path": "x|y", "after": "a"},
                ],
            },
            {"object": "Service/default/web", "action": "unchanged"},
        ],
    }
    assert report.outputs("diff", result)["changed"] == "true"
    text = report.summary("diff", result)
    assert "1 created, 1 configured, 1 unchanged" in text
    assert (
        '| `Deployment/default/web` | `configured` | `spec.replicas: 1 -> 3; x\\|y: (absent) -> "a"` |'
        in text
    )
    assert "Service/default/web" not in text


def test_image_updates_output_is_json() -> None:
    result = {
        "automations": [
            {
                "automation": "apps/web",
                "changes": [{"file": "a.yaml", "line": 3, "setter": "apps:x", "old": "i:1", "new": "i:2"}],
                "problems": [{"file": "b.yaml", "line": 2, "kind": "parse", "message": "bad"}],
                "commit": "0123456789abcdef",
                "branch": "main",
                "pushed": True,
                "pullRequest": None,
            }
        ]
    }
    out = report.outputs("images-update", result)
    assert json.loads(out["updated"])[0]["new"] == "i:2" and out["changed"] == "true"
    assert "Committed `0123456789ab` on `main` and pushed." in report.summary("images-update", result)
    found = report.annotate("images-update", "", result, failed=True, workspace=None)
    assert found == [
        report.Annotation("error", "parse: bad", file="b.yaml", line=2, title="lockgate images-update")
    ]


def test_error_lines_become_located_annotations() -> None:
    stderr = (
        "progress...\n"
        "error: /ws/deploy/bad.yaml:4:9: invalid YAML: expected ',' or ']'\n"
        "error: deploy/images.yaml: document 2: spec.policy.semver: invalid policy\n"
        "error: registry r.io answered 500\n"
    )
    found = report.annotate("push", stderr, None, failed=True, workspace=Path("/ws"))
    assert [(a.file, a.line, a.col, a.message) for a in found] == [
        ("deploy/bad.yaml", 4, 9, "invalid YAML: expected ',' or ']'"),
        ("deploy/images.yaml", None, None, "document 2: spec.policy.semver: invalid policy"),
        (None, None, None, "registry r.io answered 500"),
    ]


def test_workflow_commands_escape_data_and_properties() -> None:
    item = report.Annotation("error", "50% broken\nnext", file="a,b:c.yaml", line=3, title="t")
    assert commands.annotation(item) == "::error file=a%2Cb%3Ac.yaml,line=3,title=t::50%25 broken%0Anext"
    assert commands.mask("a\nb") == "::add-mask::a%0Ab"


def test_output_file_uses_heredocs_that_keep_newlines() -> None:
    text = commands.output_file_text({"json": '{"a":\n1}', "digest": "d"}, delimiter="EOF_X")
    assert text == 'json<<EOF_X\n{"a":\n1}\nEOF_X\ndigest<<EOF_X\nd\nEOF_X\n'


def test_a_tenants_control_characters_reach_neither_the_summary_nor_an_annotation() -> None:
    """GitHub's log viewer obeys ANSI codes and its pages show bidi overrides: escaped first
    (lockgate.terminal), then GitHub's own escapes (docs/security.md §20)."""
    hostile = "\x1b]0;pwned\x07\x1b[31m\u202eevil"
    failed = {"error": {"message": f"Gadget/g: InProgress: {hostile}", "exitCode": 6}}
    summary = report.summary("reconcile", [{"name": "web", "revision": hostile, **failed}])
    line = commands.annotation(report.Annotation("error", hostile, title=f"t{hostile}"))
    for text in (summary, line):
        assert not any(c in text for c in ("\x1b", "\x07", "\u202e")), text
    escaped = "\\x1b]0;pwned\\x07\\x1b[31m\\u202eevil"
    assert escaped in summary
    assert line == f"::error title=t{escaped}::{escaped}"
