"""``runner.serve.web.firstview``: the page without JavaScript shows the overview, escaped."""

from __future__ import annotations

from runner.serve.web import firstview


def test_every_value_is_escaped_and_each_sync_has_its_row() -> None:
    doc = {
        "syncs": [
            {
                "name": "web",
                "revision": "v1@sha256:" + "a" * 64,
                "health": "Healthy",
                "verifiedBy": "key sha256:1 (keys/<b>.pub)",
                "ready": {"status": "False", "reason": "VerificationFailed", "summary": "<script>x</script>"},
                "lastAttempt": {"result": "Failed", "time": "2030-01-01T00:00:00Z"},
            },
            {"name": "api", "ready": {"status": "True"}, "health": "Unknown"},
        ]
    }
    page = firstview.overview(doc, read_at="2030-01-01T00:00:05Z")
    assert "<script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert "keys/&lt;b&gt;.pub" in page
    assert page.count("<tr>") == 3 and "<caption>2 syncs</caption>" in page
    assert "Not ready (VerificationFailed)" in page and ">Ready<" in page
    assert "v1@sha256:aaaaaaaaaaaa<" in page  # digests shortened as in the table
    assert "No syncs have run" in firstview.overview({"syncs": []}, read_at="now")
