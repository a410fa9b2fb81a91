"""Which files go into an artifact: Flux's default ignore set, ``.sourceignore`` files and
``--ignore-paths``, all in .gitignore syntax.

Patterns from a ``.sourceignore`` apply below the directory that holds it (its domain),
later patterns win, ``!`` re-includes, a trailing ``/`` matches directories only. An
ignored directory is not descended into, as in git.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: what ``flux push artifact`` excludes by default
FLUX_DEFAULT_IGNORE = (
    ".git/",
    ".gitignore",
    ".gitmodules",
    ".gitattributes",
    "*.jpg",
    "*.jpeg",
    "*.gif",
    "*.png",
    "*.wmv",
    "*.flv",
    "*.tar.gz",
    "*.zip",
)
SOURCEIGNORE = ".sourceignore"


@dataclass(frozen=True)
class Pattern:
    """One parsed pattern; ``domain`` is the directory (relative, posix, '' for the root) it applies in."""

    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    domain: str
    text: str

    def matches(self, path: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        if self.domain:
            if not path.startswith(self.domain + "/"):
                return False
            path = path[len(self.domain) + 1 :]
        return self.regex.match(path) is not None


def _translate(glob: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and "]" in glob[i + 1 :]:
            end = glob.index("]", i + 1)
            body = glob[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif c == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def parse_line(line: str, domain: str = "") -> Pattern | None:
    """Parse one .gitignore line; None for blanks and comments."""
    text = line.rstrip("\n").rstrip("\r")
    if not text.endswith("\\ "):
        text = text.rstrip(" ")
    if not text or text.startswith("#"):
        return None
    negate = text.startswith("!")
    body = text[1:] if negate else text
    if body.startswith("\\") and body[1:2] in ("#", "!"):
        body = body[1:]
    dir_only = body.endswith("/")
    body = body.rstrip("/")
    if not body:
        return None
    anchored = "/" in body
    body = body.lstrip("/")
    prefix = "" if anchored else "(?:.*/)?"
    regex = re.compile("^" + prefix + _translate(body) + "$", re.DOTALL)
    return Pattern(regex=regex, negate=negate, dir_only=dir_only, domain=domain, text=text)


def parse_lines(lines: Iterable[str], domain: str = "") -> list[Pattern]:
    return [p for p in (parse_line(line, domain) for line in lines) if p is not None]


class Matcher:
    """Decides whether a path (relative to the artifact root, posix) is ignored."""

    def __init__(self, patterns: Sequence[Pattern] = ()) -> None:
        self.patterns: list[Pattern] = list(patterns)

    @classmethod
    def default(cls, extra: Sequence[str] = ()) -> Matcher:
        """Flux's defaults plus ``--ignore-paths`` (each value may hold comma-separated patterns)."""
        lines = list(FLUX_DEFAULT_IGNORE)
        for value in extra:
            lines.extend(part for part in value.split(","))
        return cls(parse_lines(lines))

    def add(self, patterns: Iterable[Pattern]) -> None:
        self.patterns.extend(patterns)

    def ignored(self, path: str, is_dir: bool) -> bool:
        result = False
        for pattern in self.patterns:
            if pattern.negate == result and pattern.matches(path, is_dir):
                result = not pattern.negate
        return result
