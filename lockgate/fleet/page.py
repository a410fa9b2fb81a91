"""The fleet as a static page: revision x cluster, and what each downstream sync still waits for.

Pure: ``Fleet`` (``matrix``) and the verdicts of the downstream requirements in, files out
(``index.html``, ``style.css``, ``fleet.json``), for GitHub Pages or any static host. Read-only
and self-contained: no script at all, no font, image or style from elsewhere, and a
Content-Security-Policy in the page (``default-src 'none'; style-src 'self'``) since a static
host sets no headers. Everything shown comes from attestations anyone able to push to the
registry can write (a forged one may name a cluster ``<script>...``), so every text is escaped
with ``html.escape`` (quotes too) and cut, and an unverified claim is said to be unverified,
never drawn as healthy. The cells' words are those of ``lockgate fleet`` and the status page.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass

from lockgate import terminal
from lockgate.fleet.matrix import Fleet, State, short

CSP = "default-src 'none'; style-src 'self'; base-uri 'none'; form-action 'none'"
#: the widest a cluster name, tag or reason is drawn
WIDEST = 200

STYLE = """\
:root { color-scheme: light dark; --ok: #1a7f37; --bad: #cf222e; --wait: #9a6700; --mute: #57606a; }
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 72rem; padding: 1rem; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
table { border-collapse: collapse; width: 100%; }
th, td { border: 1px solid #d0d7de; padding: .35rem .5rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; color: #1f2328; }
code { font-family: ui-monospace, monospace; font-size: .9em; overflow-wrap: anywhere; }
.healthy { color: var(--ok); } .failing { color: var(--bad); } .waiting { color: var(--wait); }
.unverified, .none, .muted { color: var(--mute); }
@media (prefers-color-scheme: dark) {
  :root { --ok: #3fb950; --bad: #ff7b72; --wait: #d29922; --mute: #9198a1; }
  body { background: #0d1117; color: #e6edf3; } th { background: #161b22; color: #e6edf3; }
  th, td { border-color: #30363d; }
}
"""


@dataclass(frozen=True)
class Waits:
    """What one downstream sync requires of a revision, and whether each revision has it."""

    #: the downstream's name (``production``)
    name: str
    #: the requirement in words (``2 of staging-* healthy for 1h``)
    requirement: str
    #: digest -> (met, why not)
    verdicts: dict[str, tuple[bool, str]]


def text(value: str, *, limit: int = WIDEST) -> str:
    """``value`` escaped for HTML text and attributes, control characters shown, cut."""
    return html.escape(terminal.shown(value, limit=limit), quote=True)


def _cell(fleet: Fleet, row: int, cluster: str) -> str:
    found = fleet.rows[row].cell(cluster)
    label = {State.NONE: "not attested"}.get(found.state, found.text())
    extra = (
        f" ({found.unverified} unverified)"
        if found.unverified and found.state is not State.UNVERIFIED
        else ""
    )
    return f'<td class="{found.state.value}">{text(label)}{text(extra)}</td>'


def _wait_cell(waits: Waits, digest: str) -> str:
    met, why = waits.verdicts.get(digest, (False, "not read"))
    if met:
        return '<td class="healthy">ready</td>'
    return f'<td class="waiting">waiting: {text(why, limit=400)}</td>'


def render(fleet: Fleet, waits: Sequence[Waits] = (), *, title: str = "") -> dict[str, str]:
    """The page's files, by name."""
    heading = title or f"Fleet of {fleet.repository}"
    head = "".join(f'<th scope="col">{text(c)}</th>' for c in fleet.clusters)
    head += "".join(f'<th scope="col">{text(w.name)} waits for</th>' for w in waits)
    rows = []
    for index, row in enumerate(fleet.rows):
        revision = row.revision
        cells = "".join(_cell(fleet, index, c) for c in fleet.clusters)
        cells += "".join(_wait_cell(w, revision.digest) for w in waits)
        rows.append(
            f'<tr><th scope="row">{text(revision.label)}</th>'
            f"<td><code>{text(short(revision.digest))}</code></td>"
            f"<td>{text(revision.created or '—')}</td>{cells}</tr>"
        )
    requirements = "".join(
        f"<li><strong>{text(w.name)}</strong> applies a revision once it has: "
        f"{text(w.requirement, limit=400)}</li>"
        for w in waits
    )
    notes = "".join(
        f"<li>{text(row.revision.label)} in {text(name)}: {text(row.cell(name).reason, limit=600)}</li>"
        for row in fleet.rows
        for name in fleet.clusters
        if row.cell(name).unverified and row.cell(name).reason
    )
    body = [
        "<!doctype html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{text(heading)}</title>",
        '<link rel="stylesheet" href="style.css">',
        "</head>",
        "<body>",
        "<main>",
        f"<h1>{text(heading)}</h1>",
        f'<p class="muted">Read from the registry at {text(fleet.time)}: each cell is what the runners\' '
        "signed health attestations say, checked against the keys or identities given; an attestation "
        "no trusted key verifies is shown as unverified, never as healthy.</p>",
    ]
    if fleet.rows:
        body += [
            "<table>",
            f"<caption>Revisions of {text(fleet.repository)}, newest first, by cluster</caption>",
            '<thead><tr><th scope="col">revision</th><th scope="col">digest</th>'
            f'<th scope="col">created</th>{head}</tr></thead>',
            "<tbody>",
            *rows,
            "</tbody>",
            "</table>",
        ]
    else:
        body.append("<p>No revisions.</p>")
    if requirements:
        body += ["<h2>Promotion</h2>", f"<ul>{requirements}</ul>"]
    if notes:
        body += ["<h2>Unverified attestations</h2>", f"<ul>{notes}</ul>"]
    body += ["</main>", "</body>", "</html>", ""]
    document = {
        **fleet.to_json(),
        "waits": [
            {
                "name": w.name,
                "requirement": w.requirement,
                "revisions": {d: {"met": met, "reason": why} for d, (met, why) in w.verdicts.items()},
            }
            for w in waits
        ],
    }
    return {
        "index.html": "\n".join(body),
        "style.css": STYLE,
        "fleet.json": json.dumps(document, indent=2, sort_keys=True) + "\n",
    }
