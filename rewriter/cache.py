"""Remember files known to need no rewrite, so an unchanged repository re-runs fast.

Keyed by tool version, the rule packs' digests and the options; each entry
holds a file's (mtime, size, content digest). A file whose stat matches is not
even read; one whose stat changed but whose content did not is not parsed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path

from . import __version__
from .files import write_atomic

Stamp = tuple[int, int, str]  # mtime_ns, size, sha256 of the content


def default_cache_dir(project_root: Path) -> Path:
    """``.eqrewrite_cache`` in a project; the user cache folder for anything else."""
    if (project_root / "pyproject.toml").is_file() or (project_root / ".git").exists():
        return project_root / ".eqrewrite_cache"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "eqrewrite"


def canonical(value: object) -> str:
    """A text for ``value`` that is the same in every process, for cache keys.

    Never ``repr()``: a set's order, and so its repr, depends on PYTHONHASHSEED. Sets are
    sorted and dataclasses become mappings; JSON sorts the keys.
    """
    return json.dumps(value, sort_keys=True, default=_plain)


def _plain(value: object) -> object:
    if isinstance(value, set | frozenset):
        return sorted(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    raise TypeError(f"no canonical form for {type(value).__name__}")


def digest(data: bytes) -> str:
    """Content digest used in cache entries."""
    return hashlib.sha256(data).hexdigest()


class Cache:
    """The set of clean files for one combination of version, packs and options."""

    def __init__(self, folder: Path, key_parts: list[str]):
        key = digest("\n".join([__version__, *key_parts]).encode())[:20]
        self.folder = folder
        self.path = folder / f"cache-{key}.json"
        self.entries: dict[str, Stamp] = {}
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
            self.entries = {k: tuple(v) for k, v in loaded.items()}
        except (OSError, ValueError, TypeError):
            self.entries = {}  # a missing or damaged cache is simply empty

    def lookup(self, path: Path) -> Stamp | None:
        """The entry recorded for ``path``, if any."""
        return self.entries.get(os.path.abspath(path))

    def is_fresh(self, path: Path, stat: os.stat_result) -> bool:
        """Whether ``path`` is known clean and its stat has not changed since."""
        entry = self.lookup(path)
        return entry is not None and entry[0] == stat.st_mtime_ns and entry[1] == stat.st_size

    def record(self, path: Path, stamp: Stamp | None) -> None:
        """Mark ``path`` clean with ``stamp``, or forget it when ``stamp`` is None."""
        key = os.path.abspath(path)
        if stamp is None:
            self.entries.pop(key, None)
        else:
            self.entries[key] = stamp

    def save(self) -> None:
        """Write the cache; failures are ignored (a cache is an optimisation)."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            ignore = self.folder / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# Created by eqrewrite\n*\n", encoding="utf-8")
            write_atomic(self.path, json.dumps(self.entries).encode())
        except OSError:
            pass
