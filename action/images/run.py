"""The two ``images`` commands as library calls: ``scan`` and ``update``.

Each returns a report value that the CLI renders as a table or JSON; nothing here prints.
``update`` is: load the configuration, scan, scope the policies to each automation,
plan the rewrite, then either show a diff (dry run), write, or write-commit-push through
``gitops`` (which re-plans on the new head when a push races) and, with ``--pr``, keep
one pull request current through ``pullrequest``.

Exit codes: a run where some repositories, policies or files failed and others were
processed raises ``PartialError`` (exit 10) after doing all it could; when everything
failed for one reason, that reason's code (3 authentication, 9 registry, 7 resolve).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from action.images import commitsign, config, gitops, message, policy, pullrequest, scan, setters, update
from action.images.model import Automation, Config, NamespacedName
from action.images.update import PolicyResult, TreeResult
from lockgate.errors import ExitCode, LockgateError, UsageError


class PartialError(LockgateError):
    """Some repositories, policies or files failed; the others were processed."""

    exit_code = ExitCode.PARTIAL


class ScanFailedError(LockgateError):
    """Every policy failed, for one reason; carries that reason's exit code."""

    def __init__(self, message: str, exit_code: ExitCode) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _policy_key(setter: str) -> str:
    return ":".join(setter.split(":")[:2])


@dataclass(frozen=True)
class ScanReport:
    config: Config
    listings: Mapping[NamespacedName, scan.Listing]
    results: Mapping[NamespacedName, PolicyResult]
    current: Mapping[str, list[update.Current]] = field(default_factory=dict)

    @property
    def failed(self) -> list[PolicyResult]:
        return [r for r in self.results.values() if r.latest is None]

    def failure(self, what: str) -> LockgateError | None:
        """The error to exit with, if any policy failed (see the module docstring)."""
        failed = self.failed
        if not failed:
            return None
        codes = {r.exit_code or ExitCode.FAILURE for r in failed}
        if len(failed) == len(self.results) and len(codes) == 1:
            return ScanFailedError(f"{what}: every policy failed (see above)", codes.pop())
        return PartialError(f"{what}: {len(failed)} of {len(self.results)} policies failed (see above)")

    def why(self, key: NamespacedName) -> dict[str, Any]:
        """What a policy considered and what it elected: the reason behind a change."""
        pol = self.config.policies.get(key)
        result = self.results.get(key)
        listing = self.listings.get(pol.repository) if pol is not None else None
        return {
            "policy": policy.describe(pol.choice, pol.tag_filter) if pol is not None else None,
            "tags": listing.listed if listing else None,
            "excluded": listing.listed - len(listing.tags) if listing and not listing.error else None,
            "candidates": result.candidates if result else 0,
            "latest": str(result.latest) if result and result.latest else None,
        }

    def to_json(self) -> list[dict[str, Any]]:
        rows = []
        for key, result in sorted(self.results.items()):
            pol = self.config.policies[key]
            listing = self.listings.get(pol.repository)
            rows.append(
                {
                    "name": str(key),
                    "repository": str(pol.repository),
                    "image": self.config.repositories[pol.repository].image,
                    "credentials": listing.credentials if listing else "",
                    **self.why(key),
                    "current": [
                        {"file": c.file, "line": c.line, "setter": c.setter, "value": c.value}
                        for c in self.current.get(str(key), [])
                    ],
                    "error": result.error,
                }
            )
        return rows


def _require_policies(loaded: Config, root: Path) -> None:
    if not loaded.policies:
        what = "an ImagePolicy" if loaded.repositories else "an ImageRepository or ImagePolicy"
        raise UsageError(
            f"no ImagePolicy found under {root}: nothing to scan; point --path at the directory "
            f"holding {what} (the image automation documents)"
        )


def run_scan(
    root: Path, *, page_size: int = 1000, secrets_dir: Path | None = None, workers: int = 8
) -> ScanReport:
    loaded = config.load(root)
    _require_policies(loaded, root)
    listings, evaluated = scan.scan_all(loaded, page_size=page_size, secrets_dir=secrets_dir, workers=workers)
    results = scan.reflect_digests(loaded, evaluated, secrets_dir=secrets_dir)
    return ScanReport(loaded, listings, results, update.current_values(root))


@dataclass(frozen=True)
class AutomationReport:
    automation: Automation
    tree: TreeResult
    diff: str = ""
    outcome: gitops.Outcome | None = None
    pull_request: pullrequest.PullRequest | None = None
    suspended: bool = False  #: ``spec.suspend: true``: nothing was done

    @property
    def blocked(self) -> bool:
        return any(p.kind in setters.BLOCKING for _, p in self.tree.problems)

    @property
    def noticed(self) -> bool:
        return any(p.kind in setters.NOTICES for _, p in self.tree.problems)


@dataclass(frozen=True)
class UpdateReport:
    scan: ScanReport
    automations: list[AutomationReport] = field(default_factory=list)

    def failure(self, *, strict: bool = False, dry_run: bool = False) -> LockgateError | None:
        """The error to exit with; ``strict`` makes notices (out-of-scope markers) failures."""
        if any(report.blocked for report in self.automations):
            others = "nothing was written (--dry-run)" if dry_run else "the others were updated"
            return PartialError(f"update: some files were skipped (see above); {others}")
        failed = self.scan.failure("update")
        if failed is None and strict and any(report.noticed for report in self.automations):
            return PartialError(
                "update: --strict: some markers are outside their automation's scope (see above)"
            )
        return failed

    def changes(self, report: AutomationReport) -> list[dict[str, Any]]:
        """Every change of one automation: what changed, where, and why."""
        return [
            {
                "file": f.path,
                "line": c.line,
                "setter": c.setter,
                "old": c.old,
                "new": c.new,
                "object": {"kind": c.object.kind, "namespace": c.object.namespace, "name": c.object.name},
                "why": self.scan.why(NamespacedName(*_policy_key(c.setter).split(":", 1))),
            }
            for f in report.tree.changed
            for c in f.changes
        ]

    def to_json(self) -> dict[str, Any]:
        automations = []
        for report in self.automations:
            outcome, pr = report.outcome, report.pull_request
            automations.append(
                {
                    "automation": f"{report.automation.key.namespace}/{report.automation.key.name}",
                    "suspended": report.suspended,
                    "changes": self.changes(report),
                    "problems": [
                        {"file": file, "line": p.line, "kind": p.kind.value, "message": p.message}
                        for file, p in report.tree.problems
                    ],
                    "commit": outcome.commit if outcome else None,
                    "branch": outcome.branch if outcome else None,
                    "pushed": bool(outcome and outcome.pushed),
                    "signed": bool(outcome and outcome.signed),
                    "attempts": outcome.attempts if outcome else 0,
                    "pullRequest": {"number": pr.number, "url": pr.url, "action": pr.action.value}
                    if pr
                    else None,
                }
            )
        return {"policies": self.scan.to_json(), "automations": automations}


def _pr_body(report: UpdateReport, automation: AutomationReport) -> str:
    key = automation.automation.key
    changes = report.changes(automation)
    heading = f"Image updates by `{key.namespace}/{key.name}`:"
    lines = [heading if changes else "No new changes in this run.", ""]
    for change in changes:
        why = change["why"]
        lines.append(
            f"- `{change['file']}:{change['line']}` ({change['setter']}): `{change['old']}` -> "
            f"`{change['new']}` — {why['policy']}, {why['candidates']} candidates of {why['tags']} tags"
        )
    lines += ["", "Opened and kept up to date by `lockgate images update --pr`."]
    return "\n".join(lines)


@dataclass(frozen=True)
class GitOptions:
    """What ``update`` does with Git after rewriting; ``defaults`` says what the flags imply."""

    commit: bool = False
    push: bool = False
    branch: str | None = None
    signing: commitsign.Signing | None = None
    pull_request: bool = False
    #: ``--forge``: the forge of the pull request when the remote URL does not tell
    forge: str | None = None
    #: ``--label``: labels of the pull request (listed in its description where the forge has none)
    labels: tuple[str, ...] = ()

    @classmethod
    def defaults(
        cls,
        *,
        commit: bool = False,
        push: bool = False,
        branch: str | None = None,
        signing_key: str | None = None,
        pull_request: bool = False,
        forge: str | None = None,
        labels: tuple[str, ...] = (),
    ) -> GitOptions:
        if push and not commit and not pull_request:
            raise UsageError("--push needs --commit")
        if (forge or labels) and not pull_request:
            raise UsageError(f"{'--forge' if forge else '--label'} is about the pull request: add --pr")
        signing = commitsign.Signing.from_key(signing_key) if signing_key else None
        return cls(commit or pull_request, push or pull_request, branch, signing, pull_request, forge, labels)


def run_update(
    root: Path,
    *,
    git: GitOptions = GitOptions(),
    dry_run: bool = False,
    page_size: int = 1000,
    secrets_dir: Path | None = None,
) -> UpdateReport:
    """Scan, then update every automation's markers under ``root`` (a git checkout when committing)."""
    if not config.load(root).automations:
        # before the scan: no registry is asked when there is nothing to update
        raise UsageError(f"no ImageUpdateAutomation or ImageAutomation found under {root}")
    report = run_scan(root, page_size=page_size, secrets_dir=secrets_dir)
    return update_from(root, report, git=git, dry_run=dry_run)


def update_from(
    root: Path, report: ScanReport, *, git: GitOptions = GitOptions(), dry_run: bool = False
) -> UpdateReport:
    """The update step alone, from a scan's results: scope, rewrite, then show, write or commit."""
    automations = list(report.config.automations)
    if not automations:
        raise UsageError(f"no ImageUpdateAutomation or ImageAutomation found under {root}")
    out = UpdateReport(report)
    plans: list[tuple[Automation, setters.Setters, TreeResult] | None] = []
    for automation in automations:
        if automation.suspended:
            plans.append(None)
            continue
        table = update.setters_for(report.config, automation, report.results)
        plan = update.rewrite_tree(root, automation.update_path, table)
        update.commit_message(automation, plan)  # a bad messageTemplate stops here, before any write
        plans.append((automation, table, plan))
    for automation, planned in zip(automations, plans, strict=True):
        if planned is None:
            out.automations.append(AutomationReport(automation, TreeResult(), suspended=True))
            continue
        _, table, plan = planned
        diff = update.unified_diff(plan)
        if dry_run or not git.commit:
            if not dry_run:
                update.write(root, plan)
            out.automations.append(AutomationReport(automation, plan, diff=diff))
            continue
        out.automations.append(_commit(root, automation, table, plan, diff, git, out))
    return out


def _commit(
    root: Path,
    automation: Automation,
    table: setters.Setters,
    plan: TreeResult,
    diff: str,
    git: GitOptions,
    report: UpdateReport,
) -> AutomationReport:
    base = gitops.current_branch(root)
    if automation.checkout_branch and automation.checkout_branch != base:
        raise UsageError(
            f"{automation.where or automation.key}: spec.git.checkout.ref.branch is "
            f"{automation.checkout_branch!r} but {root} has {base!r} checked out; check out that branch first"
        )
    target = git.branch or automation.push_branch or base
    proposer = None
    if git.pull_request:
        if target == base:
            raise UsageError(
                f"--pr: the update branch is the checked-out branch {base!r}; "
                "pass --branch or set spec.git.push.branch"
            )
        remote_url = gitops.remote_url(root)
        proposer = pullrequest.from_environment(os.environ, remote_url=remote_url, chosen=git.forge)
    signing = git.signing
    if signing is None and automation.signing_key_secret:
        signing = commitsign.Signing()  # Flux signs when signingKey is set; the job's git config decides

    committed: list[TreeResult] = []  # what was rewritten on the head that was finally used

    def apply(repo: Path) -> gitops.Applied | None:
        tree = update.rewrite_tree(repo, automation.update_path, table)
        committed.append(tree)
        text = update.commit_message(automation, tree)  # before writing: a failing template leaves no files
        paths = update.write(repo, tree)
        return gitops.Applied(tuple(paths), text) if paths else None

    outcome = gitops.commit_and_push(
        root,
        apply,
        author=gitops.Author(automation.author_name or "lockgate", automation.author_email),
        push=git.push,
        push_branch=target,
        push_options=[f"{k}={v}" for k, v in sorted(automation.push_options.items())],
        signing=signing,
    )
    tree = committed[-1] if committed else plan
    if outcome.branch != base:
        gitops.check_out(root, base)  # the next automation starts where this one did
    result = AutomationReport(automation, tree, diff=update.unified_diff(tree), outcome=outcome)
    if proposer is None or not (outcome.pushed or outcome.continued):
        return result
    text = outcome.applied.message if outcome.applied else message.DEFAULT
    title = text.strip().partition("\n")[0] or message.DEFAULT
    body = _pr_body(report, result)
    proposal = pullrequest.Proposal(outcome.branch, base, title, body, git.labels)
    pr = proposer.ensure(proposal, refresh=outcome.pushed)
    return AutomationReport(automation, tree, diff=result.diff, outcome=outcome, pull_request=pr)
