"""Reading and writing user files without ever corrupting them.

Sources are decoded as Python would (BOM, ``# -*- coding -*-`` cookie) and
re-encoded the same way; line endings are kept because text is never
newline-translated. Writes go to a temporary file in the same folder, then
``os.replace`` it over the original, so a crash leaves the old file whole.
"""

from __future__ import annotations

import io
import os
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path


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


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path``'s content with ``data`` all at once, keeping its permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".eqrw")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
