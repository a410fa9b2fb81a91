"""An error's whole text and its one-line summary: the two forms every renderer picks from.

An error is one value (``lockgate.errors.LockgateError``): a headline and, often, detail
lines (the objects refused, the objects unhealthy). ``whole`` renders them as the text a
log, the inventory, ``lockgate status NAME``, an Event or a notification carries::

    2 objects failed to apply:
      - ConfigMap/web/a: ConfigMap "a" is invalid: data[bad key!]: Invalid value
      - ConfigMap/web/b: ...

``summarise`` makes one line of at most ``limit`` characters from such a text, for where
space is short (a table column, a commit status, the status page's overview): the headline
and as many details as fit, each object with its reason shortened, then ``+N more``, e.g.
``2 objects failed to apply: ConfigMap/web/a (ConfigMap "a" is invalid…), +1 more``, an
object's key shortened to ``Kind/name`` when even that does not fit, digests to their
first 12 hex digits. It never ends on a dangling colon, and it works on stored text as
well as on a live error, so a history entry written by an older runner reads the same way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

ELLIPSIS = "…"
#: what ``whole`` prefixes each detail with, and what ``summarise`` recognises as one
_ITEM = re.compile(r"^\s*-\s+(?P<text>.*)$")
#: "... and 12 more" (a list that was already capped when it was written)
_MORE = re.compile(r"^\s*\.\.\.\s*and\s+(?P<count>\d+)\s+more\b.*$")
#: an item's object and its reason: "ConfigMap/web/a: refused" -> ("ConfigMap/web/a", "refused")
_NAMED = re.compile(r"^(?P<name>[^\s:]+(?:\s\([^)]*\))?): (?P<reason>.+)$")
#: the shortest reason kept when an item is shortened; below that the item is counted instead
_MIN_REASON = 8


def whole(headline: str, details: Sequence[str] = ()) -> str:
    """The full text of an error with ``details`` listed under ``headline``."""
    if not details:
        return headline
    lines = [headline.rstrip().rstrip(":") + ":"]
    for detail in details:
        first, *rest = detail.splitlines() or [""]
        lines.append(f"  - {first}")
        lines.extend(f"    {line}" for line in rest)
    return "\n".join(lines)


@dataclass
class _Paragraph:
    text: str
    items: list[str] = field(default_factory=list)
    #: items a capped list left out ("... and N more")
    untold: int = 0
    #: the items are "- " lines, so an indented line without the dash continues the last one
    dashed: bool = False


def _parse(text: str) -> list[_Paragraph]:
    paragraphs: list[_Paragraph] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        more = _MORE.match(line)
        item = _ITEM.match(raw)
        last = paragraphs[-1] if paragraphs else None
        if last is not None and more is not None:
            last.untold += int(more.group("count"))
        elif last is not None and item is not None:
            last.items.append(" ".join(item.group("text").split()))
            last.dashed = True
        elif last is not None and raw[:1].isspace() and last.items and last.dashed:
            last.items[-1] += " " + line  # a continuation line of the item above
        elif last is not None and raw[:1].isspace() and (last.items or last.text.endswith(":")):
            last.items.append(" ".join(line.split()))  # an indented list without dashes
        else:
            paragraphs.append(_Paragraph(" ".join(line.split())))
    return paragraphs


def _clip(text: str, room: int) -> str:
    if len(text) <= room:
        return text
    return text[: max(0, room - 1)].rstrip() + ELLIPSIS if room > 0 else ""


def _short(name: str) -> str:
    """``Deployment/web`` for ``Deployment.apps/ns/web``: an object key without its group and
    namespace, for a summary that has no room for them."""
    parts = name.split("/")
    if len(parts) not in (2, 3) or not parts[0][:1].isupper():
        return name
    return f"{parts[0].split('.', 1)[0]}/{parts[-1]}"


def _item(text: str, room: int) -> str | None:
    """``name (reason)`` in at most ``room`` characters (the reason, then the name shortened,
    then the reason left out), or None when not even the name fits."""
    named = _NAMED.match(text)
    if named is None:
        return text if len(text) <= room else (_clip(text, room) if room >= 2 * _MIN_REASON else None)
    name, reason = named.group("name"), named.group("reason")
    names = [name] if _short(name) == name else [name, _short(name)]
    for shown in names:
        full = f"{shown} ({reason})"
        if len(full) <= room:
            return full
        left = room - len(shown) - 3  # " (" and ")"
        if left >= _MIN_REASON:
            return f"{shown} ({_clip(reason, left)})"
    return next((shown for shown in names if len(shown) <= room), None)


def _more(count: int) -> str:
    return f"+{count} more"


#: a digest, in a reference (``@sha256:<hex>``) or a cosign tag (``sha256-<hex>.sig``)
_DIGEST = re.compile(r"(sha256[:-])([0-9a-f]{12})[0-9a-f]{52}")


def summarise(text: str, limit: int = 200) -> str:
    """One line of at most ``limit`` characters telling ``text`` (see the module docstring)."""
    if len(text) > limit or "\n" in text:
        # no room for whole digests: their first 12 hex digits tell them apart
        text = _DIGEST.sub(lambda m: m.group(1) + m.group(2) + ELLIPSIS, text)
    out = ""
    opened = False  # the text so far ends on a colon that the next part completes
    for index, para in enumerate(_parse(text)):
        head = para.text.rstrip(":").rstrip()
        sep = "" if not out else (": " if opened else "; ")
        room = limit - len(out) - len(sep)
        if len(head) > room:
            if index == 0:
                return _clip(head, limit)
            # a later part that does not fit is only hinted at
            return out + ELLIPSIS if len(out) < limit else _clip(out, limit)
        out += sep + head
        opened = para.text.endswith(":") and not (para.items or para.untold)
        total = len(para.items) + para.untold
        told = 0
        for item in para.items:
            remaining = total - told - 1
            tail = len(", " + _more(remaining)) if remaining else 0
            joint = ": " if told == 0 else ", "
            shown = _item(item, limit - len(out) - len(joint) - tail)
            if shown is None:
                break
            out += joint + shown
            told += 1
        if total > told:
            counted = (": " if told == 0 else ", ") + _more(total - told)
            if len(out) + len(counted) > limit:
                return _clip(out, limit)
            out += counted
    return out


def counted(number: int, noun: str, plural: str = "") -> str:
    """``1 object``, ``2 objects``: a count with its noun in the right number."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"
