"""The preview's Markdown and table: hostile text stays text, the comment fits a forge."""

from __future__ import annotations

from markdown_it import MarkdownIt

from lockgate.diff.changeset import Action, ChangeSet, Entry
from lockgate.diff.fields import FieldChange
from lockgate.manifests import ObjectKey
from runner.plan.preview import report
from runner.plan.preview.model import Basis, Hazard, HazardKind, Preview, Running, Target

HOSTILE = "x`|</details><script>alert(1)</script>``` | *bold* [link](https://evil.example)\n# head"


def hostile_target(sync: str = "app") -> Target:
    changes = ChangeSet()
    key = ObjectKey("", "ConfigMap", "apps", "web")
    changes.add(Entry(key, Action.CONFIGURED, changes=(FieldChange("data.note", "a", HOSTILE),)))
    return Target(
        cluster="prod`<b>",
        config="clusters/prod.yaml",
        sync=sync,
        url="oci://r/app",
        running=Running(Basis.ATTESTED, digest="sha256:" + "a" * 64, attested_by=HOSTILE),
        changeset=changes,
        hazards=(Hazard(HazardKind.VERIFY_POLICY, HOSTILE),),
        notes=(HOSTILE,),
    )


def html(text: str) -> str:
    return str(MarkdownIt("commonmark").enable("table").render(text))


def test_hostile_values_stay_inside_code_spans() -> None:
    rendered = html(report.markdown(Preview(path="deploy", targets=[hostile_target()])))
    assert "<script>" not in rendered and "<b>" not in rendered.replace("<b>prod", "")
    assert rendered.count("<details>") == 1 and rendered.count("</details>") == 1
    assert "evil.example" not in rendered.replace("https://evil.example)", "")  # never a link
    assert "<a " not in rendered
    # the summary table has one row per target, whatever the text in it
    summary = rendered.split("<table>")[1].split("</table>")[0]
    assert summary.count("<tr>") == 2


def test_a_code_span_is_longer_than_any_backticks_inside() -> None:
    assert report.code("a``b") == "```a``b```"
    assert report.code("`x") == "`` `x ``"
    assert report.code("a|b") == "`a\\|b`"


def test_the_comment_is_cut_to_fit_a_forge() -> None:
    many = [hostile_target(f"s{i}") for i in range(400)]
    text = report.markdown(Preview(path="deploy", targets=many))
    assert len(text) <= report.LIMIT + 200
    assert "details are left out to fit a comment" in text


def test_the_table_escapes_control_characters() -> None:
    target = hostile_target()
    target.cluster = "evil\x1b[2J"
    text = report.table(Preview(path="deploy", targets=[target]))
    assert "\x1b" not in text and "\\x1b[2J" in text
