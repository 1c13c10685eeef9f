"""Turning a file's bytes into source text and back, exactly as Python reads them.

Sources are decoded as Python would (BOM, ``# -*- coding -*-`` cookie) and
re-encoded the same way; line endings are kept because text is never
newline-translated. Writing is ``files.py``'s job.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass


class SourceError(Exception):
    """A file that cannot be read as Python source; ``line`` is 1-based (0 if unknown)."""

    def __init__(self, message: str, line: int = 0):
        super().__init__(message)
        self.line = line


@dataclass
class Source:
    """A decoded file and how to encode it back."""

    text: str
    encoding: str


BINARY = "binary file, not Python source"
# Control bytes no text file holds (tab, newlines, form feed, vertical tab and escape may).
_CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f]")
_SNIFFED = 8192  # bytes looked at for control bytes, as git does for binary detection


def decode(data: bytes) -> Source:
    """Decode bytes the way the Python interpreter would."""
    if b"\0" in data:  # Python refuses null bytes in source anyway
        raise SourceError(BINARY)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        _refuse_binary(data)
        raise SourceError(f"bad encoding declaration: {error}", 1) from None
    try:
        return Source(data.decode(encoding), encoding)
    except UnicodeDecodeError as error:
        _refuse_binary(data)
        line = data.count(b"\n", 0, error.start) + 1
        raise SourceError(f"cannot decode as {encoding}: {error.reason} "
                          f"(byte 0x{data[error.start]:02x})", line) from None
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r}", 1) from None


def _refuse_binary(data: bytes) -> None:
    """For bytes that do not decode: call them binary when control bytes show they are."""
    if _CONTROL_BYTES.search(data, 0, _SNIFFED):
        raise SourceError(BINARY)


def encode(source: Source, text: str) -> bytes:
    """Encode ``text`` like ``source`` was (``utf-8-sig`` restores the BOM)."""
    return text.encode(source.encoding)
