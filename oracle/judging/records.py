"""Neutral stand-ins for user objects in results, so the parent never imports user code.

Workers turn dataclasses, named tuples and dict subclasses (such as Hugging Face's
``ModelOutput``) into ``Structured``s, and any other object into an ``Opaque``; both
are dataclasses, which ``compare.py`` compares field by field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


@dataclass
class Structured:
    """A structured object: its type's qualified name and its fields, in order."""

    type: str
    fields: dict[str | int, object]  # a dict subclass may have int keys


@dataclass
class Opaque:
    """Any other object: its type and its repr, with memory addresses removed."""

    type: str
    text: str

    def __post_init__(self) -> None:
        self.text = strip_addresses(self.text)


def strip_addresses(text: str) -> str:
    """``text`` without `` at 0x7f...`` memory addresses, which differ between runs."""
    return _ADDRESS.sub("", text)
