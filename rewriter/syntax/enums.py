"""The closed sets of names the rewriter's data uses, as string-valued enums.

Each member is a ``str`` equal to its value, so reports (text, JSON, SARIF), the cache and
comparisons with plain strings (``rule.safety == "safe"``) read exactly as before; only a
misspelt name now fails where it is written instead of silently never matching.
"""

from __future__ import annotations

import enum
import sys

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # Python 3.10 has no StrEnum: the same behaviour, as str() and format() see it
    class StrEnum(str, enum.Enum):
        """A ``str`` enum whose ``str()`` and ``format()`` are its value."""

        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return format(str(self.value), spec)


class Level(StrEnum):
    """How much of the tree an edit replaces (apply.py finds the libcst node by it)."""

    EXPRESSION = "expression"
    STATEMENT = "statement"  # a small statement (assignment, call, return...)
    COMPOUND = "compound"  # if, while, for, with...


class Safety(StrEnum):
    """A rule's ``safety:``: unsafe rules run only with ``--unsafe``."""

    SAFE = "safe"
    UNSAFE = "unsafe"


class Context(StrEnum):
    """A rule's ``context:``: where its matches may stand."""

    ANY = "any"
    CONDITION = "condition"  # only values that are truth-tested (if, while, assert, not...)


class Stage(StrEnum):
    """The check that made a rule leave a node alone (``matcher.Decline.stage``)."""

    CONTEXT = "context"
    PATTERN = "pattern"
    SCOPE = "scope"
    KIND = "kind"  # a structural kind proposed nothing
    GUARD = "guard"
    NAMES = "names"  # a module the rewrite needs is shadowed here
    SUPPRESSED = "suppressed"  # an `# eqrewrite: ignore` comment
    COMMENT = "comment"  # a comment inside the span would be lost


class ValueKind(StrEnum):
    """What the inference proves an expression holds (``inference.py``)."""

    TENSOR = "tensor"
    NUMBER = "number"  # a Python int, float, bool or complex
    SEQUENCE = "sequence"  # str, list, tuple, dict, torch.Size...
    NONE = "none"
    OBJECT = "object"  # modules, functions, classes, dtypes...
    TENSOR_CALLABLE = "tensor_callable"  # an nn layer that maps a tensor to a tensor
    UNKNOWN = "unknown"


class Scope(StrEnum):
    """Where a rule applies (a rule's ``scope:``, ``--scope``)."""

    EVERYWHERE = "everywhere"
    FORWARD = "forward"  # forward methods of nn.Module subclasses
    COMPILED = "compiled"  # functions torch.compile traces, as this file shows
    TRACED = "traced"  # the static call graph from compiled entry points, over all files
    PROFILED = "profiled"  # the functions a recorded run saw Dynamo trace (--scope traced:FILE)
