"""Inputs -> the lockgate argv: every value one argument, refusals naming the input."""

from __future__ import annotations

from pathlib import Path

import pytest

from action.github import plan
from action.github.inputs import Inputs, env_name, split_list
from lockgate.errors import AuthError, UsageError

WORK = Path("/run/lockgate-action")
OIDC = {"ACTIONS_ID_TOKEN_REQUEST_URL": "https://token.example", "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "t"}


def make(env: dict[str, str] | None = None, **values: str) -> plan.Invocation:
    inputs = Inputs.from_env({env_name(k.replace("_", "-")): v for k, v in values.items()})
    return plan.plan(inputs, env or {}, WORK)


@pytest.mark.parametrize(
    ("text", "items"),
    [
        ("a\nb", ("a", "b")),
        ("a, b,c", ("a", "b", "c")),
        ("  a \n\n b, c \n", ("a", "b", "c")),
        ("", ()),
    ],
)
def test_lists_are_lines_or_commas(text: str, items: tuple[str, ...]) -> None:
    assert split_list(text) == items


def test_push_passes_awkward_values_as_single_arguments() -> None:
    awkward = """it's "quoted", spaced = $HOME"""
    invocation = make(
        command="push",
        path="my deploy",
        url="oci://r.io/app:main",
        tags="v1, stable",
        annotations=f"note={awkward}\nother=a,b",
        source="https://github.com/o/r",
        revision="main@sha1:abc",
    )
    assert invocation.argv == (
        "push", "my deploy", "oci://r.io/app:main",
        "--tag", "v1", "--tag", "stable",
        "--annotation", f"note={awkward}", "--annotation", "other=a,b",
        "--source", "https://github.com/o/r", "--revision", "main@sha1:abc",
        "--refuse-dirty",
        "--output", "json",
    )  # fmt: skip


def test_push_refuses_uncommitted_changes_unless_allow_dirty() -> None:
    refused = make(command="push", path="deploy", url="oci://r.io/app:main")
    assert "--refuse-dirty" in refused.argv
    allowed = make(command="push", path="deploy", url="oci://r.io/app:main", allow_dirty="true")
    assert "--refuse-dirty" not in allowed.argv


def test_push_with_an_inline_key_writes_it_to_a_private_file_and_masks_it() -> None:
    pem = (
        "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nc2VjcmV0IGJvZHk=\n"
        "-----END ENCRYPTED SIGSTORE PRIVATE KEY-----"
    )
    inputs = Inputs.from_env(
        {
            env_name("command"): "push",
            env_name("url"): "oci://r.io/app:main",
            env_name("sign"): "key",
            env_name("key"): pem,
            env_name("password"): "pw",
        }
    )
    invocation = plan.plan(inputs, {}, WORK)
    assert invocation.argv[-4:-2] == ("--key", str(WORK / "cosign.key"))
    assert invocation.files == {WORK / "cosign.key": pem + "\n"}
    assert invocation.env == {"LOCKGATE_PASSWORD": "pw"}
    assert pem not in invocation.argv and "pw" not in invocation.argv
    assert "c2VjcmV0IGJvZHk=" in inputs.secrets() and "pw" in inputs.secrets()


def test_key_path_is_used_as_given_and_not_masked() -> None:
    invocation = make(command="push", url="oci://r.io/a:b", sign="key", key="keys/cosign.key")
    assert invocation.argv[-4:-2] == ("--key", "keys/cosign.key")
    assert invocation.files == {}


def test_keyless_without_an_id_token_names_the_permission() -> None:
    with pytest.raises(AuthError, match=r"add `permissions: id-token: write`"):
        make(command="push", url="oci://r.io/a:b", sign="keyless")
    assert "--sign" in make(OIDC, command="push", url="oci://r.io/a:b", sign="keyless").argv
    assert (
        "--keyless"
        in make({"SIGSTORE_ID_TOKEN": "x"}, command="sign", url="oci://r.io/a@sha256:" + "0" * 64).argv
    )


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({}, "input `command` is required"),
        ({"command": "publish"}, "input `command` must be one of"),
        ({"command": "push"}, "input `url` is required by command `push`"),
        (
            {"command": "push", "url": "oci://r.io/a:b", "sign": "key"},
            "input `key` is required by command `push`",
        ),
        (
            {"command": "push", "url": "oci://r.io/a:b", "render": "yes"},
            "input `render` must be true or false",
        ),
        ({"command": "sign", "url": "oci://r.io/a:b"}, "input `digest` is required by command `sign`"),
        ({"command": "verify", "url": "oci://r.io/a:b"}, "input `key` .* is required by command `verify`"),
        (
            {"command": "reconcile", "url": "oci://r.io/a:b"},
            "input `name` is required by command `reconcile`",
        ),
        (
            {"command": "reconcile", "url": "oci://r.io/a:b", "name": "web"},
            "input `key` .* is required by command `reconcile` \\(or give `config`\\)",
        ),
        ({"command": "images-update", "pr": "true"}, "input `branch` is required by command `images-update`"),
        (
            {"command": "push", "url": "oci://r.io/a:b", "registry-username": "me"},
            "input `registry-password` is required",
        ),
    ],
)
def test_refusals_name_the_input(values: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        plan.plan(Inputs.from_env({env_name(k): v for k, v in values.items()}), {}, WORK)


def test_sign_takes_the_digest_of_a_push_step() -> None:
    digest = "sha256:" + "a" * 64
    invocation = make(command="sign", url="oci://r.io/app:main", digest=digest, key="cosign.key")
    assert invocation.argv == ("sign", f"oci://r.io/app@{digest}", "--key", "cosign.key", "--output", "json")


def test_registry_credentials_go_to_the_environment_scoped_to_the_url_host() -> None:
    invocation = make(
        command="push", url="oci://r.io/app:main", registry_username="me", registry_password="s3cret"
    )
    assert invocation.env == {
        "LOCKGATE_REGISTRY_HOST": "r.io",
        "LOCKGATE_REGISTRY_USERNAME": "me",
        "LOCKGATE_REGISTRY_PASSWORD": "s3cret",
    }
    assert "s3cret" not in " ".join(invocation.argv)


def test_ghcr_defaults_to_the_actor_and_the_job_token_and_no_other_registry_does() -> None:
    env = {"GITHUB_ACTOR": "octocat", plan.TOKEN_ENV: "ghs_token"}
    ghcr = make(env, command="push", url="oci://ghcr.io/o/app:main")
    assert ghcr.env["LOCKGATE_REGISTRY_USERNAME"] == "octocat"
    assert ghcr.env["LOCKGATE_REGISTRY_PASSWORD"] == "ghs_token"
    assert make(env, command="push", url="oci://quay.io/o/app:main").env == {}


def test_diff_exit_1_is_a_result_unless_asked_to_fail() -> None:
    assert make(command="diff", url="oci://r.io/a:b").ok_codes == {0, 1}
    assert make(command="diff", url="oci://r.io/a:b", fail_on_change="true").ok_codes == {0}


def test_images_update_commits_and_pushes_unless_dry_run() -> None:
    env = {plan.TOKEN_ENV: "ghs"}
    invocation = make(env, command="images-update", branch="image-updates", pr="true")
    assert invocation.argv == (
        "images", "update", "--path", ".", "--output", "json",
        "--commit", "--push", "--branch", "image-updates", "--pr",
    )  # fmt: skip
    assert invocation.env["GITHUB_TOKEN"] == "ghs"
    assert make(command="images-update", dry_run="true").argv[-1] == "--dry-run"


def test_reconcile_passes_the_semver_range_whole() -> None:
    invocation = make(
        command="reconcile",
        url="oci://r.io/app",
        name="web",
        semver=">=1.0.0 <2.0.0",
        key="cosign.pub",
        prune="true",
    )
    assert invocation.argv == (
        "reconcile", "oci://r.io/app", "--name", "web", "--semver", ">=1.0.0 <2.0.0",
        "--verify-key", "cosign.pub", "--prune", "--output", "json",
    )  # fmt: skip
    waited = make(command="reconcile", url="oci://r.io/app", name="web", key="k", wait="true", timeout="2m")
    assert waited.argv[-5:] == ("--wait", "--timeout", "2m", "--output", "json")


def test_install_runs_nothing() -> None:
    assert make(command="install").argv == ()


GITHUB_PINS = {
    "certificate_identity": "https://github.com/lockgate-dev/lockgate/.github/workflows/publish.yml@refs/tags/v1",
    "certificate_oidc_issuer": "https://token.actions.githubusercontent.com",
    "certificate_github_workflow_repository": "my-org/app",
    "certificate_github_workflow_ref": "refs/heads/main",
    "certificate_github_workflow_trigger": "push",
    "certificate_github_workflow_sha": "a" * 40,
    "certificate_github_workflow_name": "release",
}


def make_pinned(pins: dict[str, str], **values: str) -> plan.Invocation:
    return make(None, **values, **pins)


def test_verify_passes_the_github_pins_with_cosigns_flags() -> None:
    invocation = make_pinned(GITHUB_PINS, command="verify", url="oci://r.io/app:main")
    assert invocation.argv == (
        "verify", "oci://r.io/app:main",
        "--certificate-identity", GITHUB_PINS["certificate_identity"],
        "--certificate-oidc-issuer", "https://token.actions.githubusercontent.com",
        "--certificate-github-workflow-repository", "my-org/app",
        "--certificate-github-workflow-ref", "refs/heads/main",
        "--certificate-github-workflow-trigger", "push",
        "--certificate-github-workflow-sha", "a" * 40,
        "--certificate-github-workflow-name", "release",
        "--output", "json",
    )  # fmt: skip


def test_reconcile_passes_the_github_pins_as_its_verify_flags() -> None:
    invocation = make_pinned(GITHUB_PINS, command="reconcile", url="oci://r.io/app:main", name="web")
    assert invocation.argv == (
        "reconcile", "oci://r.io/app:main", "--name", "web",
        "--verify-identity", GITHUB_PINS["certificate_identity"],
        "--verify-issuer", "https://token.actions.githubusercontent.com",
        "--verify-github-repository", "my-org/app",
        "--verify-github-ref", "refs/heads/main",
        "--verify-github-workflow-trigger", "push",
        "--verify-github-workflow-sha", "a" * 40,
        "--verify-github-workflow-name", "release",
        "--output", "json",
    )  # fmt: skip


def test_the_planned_flags_are_the_clis(capsys: pytest.CaptureFixture[str]) -> None:
    """Each planned flag parses: the CLI refuses the unpinned reusable workflow, not a flag."""
    from lockgate import cli

    unpinned = {k: v for k, v in GITHUB_PINS.items() if not k.endswith("repository")}
    for command, flag in (("verify", "--certificate-identity"), ("reconcile", "--verify-identity")):
        argv = make_pinned(unpinned, command=command, url="oci://127.0.0.1:1/app:main", name="web").argv
        assert cli.main(list(argv)) == 2
        assert capsys.readouterr().err.startswith(f"error: {flag} 'https://github.com/lockgate-dev/")


GITLAB_PINS = {
    "certificate_identity": "https://gitlab.com/group/app//.gitlab-ci.yml@refs/heads/main",
    "certificate_oidc_issuer": "https://gitlab.com",
    "certificate_source_repository_uri": "https://gitlab.com/group/app",
    "certificate_source_repository_ref": "refs/heads/main",
    "certificate_build_trigger": "push",
    "certificate_runner_environment": "gitlab-hosted",
}


def test_the_source_and_build_pins_reach_verify_and_reconcile() -> None:
    """Any CI's (a GitLab pipeline's) pins: verify's --certificate-X, reconcile's --verify-X."""
    stems = ("source-repository-uri", "source-repository-ref", "build-trigger", "runner-environment")
    values = [GITLAB_PINS[f"certificate_{stem.replace('-', '_')}"] for stem in stems]
    verified = make_pinned(GITLAB_PINS, command="verify", url="oci://r.io/app:main")
    assert verified.argv[6:-2] == tuple(
        part for stem, value in zip(stems, values, strict=True) for part in (f"--certificate-{stem}", value)
    )
    reconciled = make_pinned(GITLAB_PINS, command="reconcile", url="oci://r.io/app:main", name="web")
    assert reconciled.argv[8:-2] == tuple(
        part for stem, value in zip(stems, values, strict=True) for part in (f"--verify-{stem}", value)
    )


def test_provider_reaches_the_registry_commands_as_a_flag() -> None:
    ecr = "oci://123456789012.dkr.ecr.eu-west-1.amazonaws.com/app"
    pushed = make(command="push", path="deploy", url=f"{ecr}:main", provider="aws")
    assert pushed.argv[pushed.argv.index("--provider") + 1] == "aws"
    verified = make(command="verify", url=f"{ecr}@sha256:{'a' * 64}", key="k.pub", provider="gcp")
    assert verified.argv[verified.argv.index("--provider") + 1] == "gcp"
    assert "--provider" not in make(command="push", path="deploy", url=f"{ecr}:main").argv


def test_preview_passes_each_cluster_and_key_as_one_argument_and_comments_on_pull_requests() -> None:
    env = {plan.TOKEN_ENV: "ghs", "GITHUB_EVENT_NAME": "pull_request"}
    invocation = make(
        env,
        command="preview",
        path="deploy",
        clusters="clusters/staging one.yaml\nprod=clusters/prod.yaml",
        attester_keys="staging=keys/a b.pub",
        base="abc123",
    )
    assert invocation.argv == (
        "preview", "deploy", "--cluster", "clusters/staging one.yaml", "--cluster", "prod=clusters/prod.yaml",
        "--attester-key", "staging=keys/a b.pub", "--base", "abc123", "--comment", "--output", "json",
    )  # fmt: skip
    assert invocation.env["GITHUB_TOKEN"] == "ghs" and invocation.ok_codes == {0, 1}
    # no pull request (a dispatch): no comment, the summary only
    dispatch = make({**env, "GITHUB_EVENT_NAME": "workflow_dispatch"}, command="preview", clusters="c.yaml")
    assert "--comment" not in dispatch.argv and "GITHUB_TOKEN" not in dispatch.env
    with pytest.raises(UsageError, match="input `clusters` is required by command `preview`"):
        make(command="preview")
