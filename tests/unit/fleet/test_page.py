"""The static fleet page: every outside text escaped, no script, the waits said."""

from __future__ import annotations

from lockgate.fleet import matrix, page
from lockgate.fleet.matrix import Claim, Revision

HOSTILE = "<script>alert(1)</script>\"'&\x1b[2J"


def test_hostile_names_are_text_and_the_page_has_no_script() -> None:
    revision = Revision("sha256:" + "a" * 64, (HOSTILE,), "2026-01-01T00:00:00Z")
    claims = {revision.digest: [Claim(cluster=HOSTILE, healthy=True, at="t", verified=False, reason=HOSTILE)]}
    fleet = matrix.build("r/app", [revision], claims, time="now")
    waits = page.Waits("prod", HOSTILE, {revision.digest: (False, HOSTILE)})
    files = page.render(fleet, [waits])
    html = files["index.html"]
    assert "<script" not in html and "\x1b" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#x27;&amp;\\x1b[2J" in html
    assert page.CSP in html and 'href="style.css"' in html
    assert "waiting: " in html and "unverified" in html
    assert set(files) == {"index.html", "style.css", "fleet.json"}


def test_a_long_text_is_cut() -> None:
    assert page.text("x" * 500).endswith("…") and len(page.text("x" * 500)) == page.WIDEST
