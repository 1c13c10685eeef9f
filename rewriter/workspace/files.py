"""Reading and writing user files: writes atomic, keeping modes, read-only marks and links.

Reading is ``read_source`` (bytes and stat, a failure as that file's SourceError) and
``is_generated`` (the @generated marker near the top leaves a file alone).

The rules every write follows (ARCHITECTURE.md lists them as invariants):

- A write is a temporary file in the target's folder, flushed and fsynced, given the
  target's mode (a new file gets the mode it is asked for, else the umask default), then
  ``os.replace``-d over the target: a crash leaves the old file or the new one, never half.
- A file whose mode has no write bit, or whose folder has none, is refused with "Permission
  denied", also for root: the mode bits are checked here, because root would otherwise
  bypass them (black and ruff, which open files for writing, fail the same way for
  everyone else).
- A symlink is never replaced by a file: writes go to the file it points to.
- A file with several hard links is never replaced: ``os.replace`` would split it from its
  other names, and writing into it in place would not be atomic. Callers skip such files
  and say so (``LinkedFileError`` is the last line of defence).
- A temporary file still being written is registered, so a worker stopped by a signal can
  remove it before it exits (``remove_pending``).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from .sources import SourceError

TEMPORARY_SUFFIX = ".eqrw"
GENERATED_MARKER = b"@" b"generated"  # split so this file is not itself marked
GENERATED_WINDOW = 2048  # bytes from the top of a file searched for the marker

_pending: set[str] = set()  # temporary files written but not yet renamed into place
_umask: int | None = None


class WriteError(Exception):
    """A file that could not be written; ``str()`` reads ``cannot write [PATH]: cause``."""

    def __init__(self, target: Path | None, cause: str):
        where = f" {target}" if target is not None else ""
        super().__init__(f"cannot write{where}: {cause}")


class LinkedFileError(OSError):
    """Refusal to replace a file that has other hard links."""


def check_writable(path: Path) -> None:
    """Raise PermissionError unless ``path`` (existing or not) may be replaced.

    A write replaces the file through its folder, so both the file and its nearest
    existing folder must be writable by their mode bits and for this user.
    """
    target = Path(os.path.realpath(path))
    if target.exists():
        _require_write_bits(target)
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    _require_write_bits(folder, os.W_OK | os.X_OK)


def _require_write_bits(path: Path, access: int = os.W_OK) -> None:
    if not os.stat(path).st_mode & 0o222 or not os.access(path, access):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))


def default_mode() -> int:
    """The mode a new file gets from ``open()``: 0o666 without the umask's bits."""
    global _umask
    if _umask is None:
        _umask = os.umask(0)  # the only way to read it; set straight back
        os.umask(_umask)
    return 0o666 & ~_umask


def write_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace the content of ``path`` with ``data`` all at once.

    The file gets ``mode``; without one, an existing file keeps its own and a new one gets
    ``open()``'s default. A symlink is written through; a file with other hard links is
    refused.
    """
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        existing = os.stat(path)
    except FileNotFoundError:
        existing = None
    if existing is not None and stat.S_ISREG(existing.st_mode) and existing.st_nlink > 1:
        raise LinkedFileError(errno.EMLINK, f"has {existing.st_nlink} hard links; replacing "
                              "it would split them", str(path))
    if mode is None and existing is not None and stat.S_ISREG(existing.st_mode):
        mode = stat.S_IMODE(existing.st_mode)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.",
                                     suffix=TEMPORARY_SUFFIX)
    _pending.add(temporary)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, default_mode() if mode is None else mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    finally:
        _pending.discard(temporary)


def remove_pending() -> None:
    """Delete temporary files of writes still in progress (called before a forced exit)."""
    for temporary in list(_pending):
        try:
            os.unlink(temporary)
        except OSError:
            pass  # already renamed into place, or never created


def write_symlink(path: Path, target: str) -> bool:
    """Make ``path`` a symlink reading ``target``, atomically; False when it already is one."""
    if path.is_symlink() and os.readlink(path) == target:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = tempfile.mktemp(dir=path.parent, prefix=f".{path.name}.",
                                suffix=TEMPORARY_SUFFIX)  # os.symlink fails if taken
    os.symlink(target, temporary)
    try:
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
    return True


def read_source(path: Path) -> tuple[bytes, os.stat_result]:
    """A file's bytes and stat; a failure is a SourceError naming the cause."""
    try:
        return path.read_bytes(), path.stat()
    except OSError as error:
        raise SourceError(f"cannot read: {error.strerror or error}") from None


def is_generated(data: bytes) -> bool:
    """Whether a file says it is generated (``@generated`` near its top): never rewritten."""
    return GENERATED_MARKER in data[:GENERATED_WINDOW]


def write_checked(target: Path, data: bytes, mode: int | None = None,
                  shown: Path | None = None) -> None:
    """Write ``target`` safely; any failure is a WriteError naming ``shown`` (when given)."""
    try:
        check_writable(target)
        write_atomic(target, data, mode)
    except OSError as error:
        raise WriteError(shown, error.strerror or str(error)) from None


def write_copy(destination: Path, data: bytes, source: os.stat_result) -> bool:
    """Put ``data`` at ``destination`` (an ``--out`` copy) with the source's mode, unless it
    is there already; whether it was written. A failure is a WriteError naming the copy."""
    mode = stat.S_IMODE(source.st_mode)
    try:
        current = destination.lstat()
        same = (stat.S_ISREG(current.st_mode) and stat.S_IMODE(current.st_mode) == mode
                and destination.read_bytes() == data)
    except OSError:
        same = False
    if not same:
        write_checked(destination, data, mode, shown=destination)
    return not same

