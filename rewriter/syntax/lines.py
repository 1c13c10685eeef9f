"""Lines as ``ast`` counts them: a text split into lines, the lines holding a token, a
file's line ending. Plain text, no tree: the facts, the matcher and the layout of the
rewritten text all count lines this way. Every line number here is 1-based.
"""

from __future__ import annotations

import re

_NEWLINE_RE = re.compile(r"(\r\n|\r|\n)")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split only where ``ast`` counts a new line."""
    # str.splitlines also splits at \f, \v, \x1c..., \x85 and \u2028, which ast does not,
    # and at a lone \r, which ast does; when it split only at the \n (each counted once,
    # \r\n included) its answer is ast's, at C speed.
    lines = text.splitlines(keepends=True)
    ended = not lines or lines[-1][-1] in "\r\n"  # then the last part is an empty line
    if len(lines) - (not ended) == text.count("\n"):
        return lines + [""] if ended else lines
    parts = _NEWLINE_RE.split(text)
    return [a + b for a, b in zip(parts[::2], parts[1::2] + [""])]


def lines_holding(text: str, tokens: frozenset[str]) -> list[int]:
    """Sorted numbers of the lines holding one of ``tokens`` (a keyword or a name only as a
    whole word), found with ``str.find`` jumps, which is several times faster than a regex."""
    if "\r" in text:  # lines may end in a lone \r: split as ast does
        return [number for number, line in enumerate(split_lines(text), 1)
                if any(_holds(line, token) for token in tokens)]
    found: set[int] = set()
    for token in tokens:
        word = token.isidentifier()
        line, counted = 1, 0
        at = text.find(token)
        while at >= 0:
            if word and not _whole_word(text, at, len(token)):
                at = text.find(token, at + 1)
                continue
            line += text.count("\n", counted, at)
            found.add(line)
            counted = text.find("\n", at)
            if counted < 0:
                break
            at = text.find(token, counted)
    return sorted(found)


def _holds(line: str, token: str) -> bool:
    if not token.isidentifier():
        return token in line
    at = line.find(token)
    while at >= 0 and not _whole_word(line, at, len(token)):
        at = line.find(token, at + 1)
    return at >= 0


def _whole_word(text: str, at: int, size: int) -> bool:
    before, after = text[at - 1: at] if at else "", text[at + size: at + size + 1]
    return not (before.isalnum() or before == "_" or after.isalnum() or after == "_")


def newline_of(text: str) -> str:
    """The file's line ending (of its first line)."""
    match = _NEWLINE_RE.search(text)
    return match.group(1) if match else "\n"
