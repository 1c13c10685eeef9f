"""Turning a file's bytes into source text and back, exactly as Python reads them.

Sources are decoded as Python would (BOM, ``# -*- coding -*-`` cookie) and
re-encoded the same way; line endings are kept because text is never
newline-translated. Writing is ``files.py``'s job.
"""

from __future__ import annotations

import io
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


def decode(data: bytes) -> Source:
    """Decode bytes the way the Python interpreter would."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        raise SourceError(f"bad encoding declaration: {error}", 1) from None
    try:
        return Source(data.decode(encoding), encoding)
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise SourceError(f"cannot decode as {encoding}: {error.reason} "
                          f"(byte 0x{data[error.start]:02x})", line) from None
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r}", 1) from None


def encode(source: Source, text: str) -> bytes:
    """Encode ``text`` like ``source`` was (``utf-8-sig`` restores the BOM)."""
    return text.encode(source.encoding)
