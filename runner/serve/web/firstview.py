"""The status page's first view, rendered on the server for a browser without JavaScript.

Pure. ``app.js`` renders the page from ``/api/syncs`` and keeps it current; without
JavaScript the page would say only "Loading…". So the page is served with this view inside
its ``<noscript>``: the overview (``view.overview``'s document) as a plain table, read when the
page was asked for, every value HTML-escaped. JavaScript replaces it with the live page.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from lockgate.summary import counted

#: what stands in the page's ``<noscript>`` until it is rendered
MARKER = b"<!-- first view -->"


def _text(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _short(revision: str) -> str:
    head, _, digest = revision.rpartition("sha256:")
    return f"{head}sha256:{digest[:12]}" if digest else revision


def _row(sync: Mapping[str, Any]) -> str:
    name = str(sync.get("name", ""))
    ready = sync.get("ready") or {}
    attempt = sync.get("lastAttempt") or {}
    why = "" if ready.get("status") == "True" else str(ready.get("summary") or "")
    status = str(ready.get("status") or "")
    word = {"True": "Ready", "False": "Not ready"}.get(status, "Ready unknown") if status else "-"
    if status != "True" and ready.get("reason"):
        word += f" ({_text(ready.get('reason'))})"
    revision = _short(str(sync.get("revision") or sync.get("digest") or ""))
    tried = f"{_text(attempt.get('result') or '-')} {_text(attempt.get('time') or '')}"
    cells = [
        f'<th scope="row" data-label="Sync"><a href="/sync/{_text(name)}">{_text(name)}</a></th>',
        f'<td data-label="Ready">{word}'
        + (f'<span class="reason">{_text(why)}</span>' if why else "")
        + "</td>",
        f'<td data-label="Revision"><code class="revision">{_text(revision)}</code></td>',
        f'<td data-label="Health">{_text(sync.get("health"))}</td>',
        f'<td data-label="Last attempt">{tried}</td>',
        f'<td data-label="Verified by">{_text(sync.get("verifiedBy") or "-")}</td>',
    ]
    return f"<tr>{''.join(cells)}</tr>"


def overview(doc: Mapping[str, Any], *, read_at: str) -> str:
    """The overview as HTML: one row per sync, as read at ``read_at``."""
    syncs = [s for s in doc.get("syncs") or [] if isinstance(s, Mapping)]
    said = (
        f"<h1>Syncs</h1><p>As read at {_text(read_at)}; reload the page for news (with JavaScript "
        "it updates itself).</p>"
    )
    if not syncs:
        return said + "<p>No syncs have run in this namespace.</p>"
    head = "".join(
        f'<th scope="col">{name}</th>'
        for name in ("Sync", "Ready", "Revision", "Health", "Last attempt", "Verified by")
    )
    rows = "".join(_row(s) for s in syncs)
    return (
        f'{said}<div class="scroll"><table class="syncs"><caption>{counted(len(syncs), "sync")}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>"
    )


def unavailable(message: str) -> str:
    return f'<h1>Syncs</h1><p class="error">The status could not be read: {_text(message)}</p>'
