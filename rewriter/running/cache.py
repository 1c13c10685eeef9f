"""Remember each file's outcome, so that an unchanged repository re-runs fast.

A cache file holds one combination of tool build (version, the rewriter's own source and
packaged packs), command, rule packs and options. Its entries are per file: the file's
stamp (mtime, size, content digest), the digest of the cross-file facts it was processed
under (its slice of the ``traced``/``profiled`` scopes: ``scope_facts``), and what the run
found there, as plain data (the rewrite's edits and notes, the audit's findings). An
entry is served only when the file's content and its facts are both the same as recorded:
a file whose callers changed so that it became traced is processed again even though its
bytes did not change. A file whose stat matches
is not even read; one whose stat changed but whose content did not is not parsed.

Nothing is kept for ever: a run or audit that used the cache then removes the cache files
of the folder that no run used for ``UNUSED_DAYS`` days (``prune``): an older build's, other
packs' or options'. Each run writes or touches the files it used.

Stat matches are trusted only for files last modified well before they were recorded
(``RACY_NS``): a file changed twice within one mtime tick keeps its mtime and size, so a
recent mtime always goes through the content digest. Only the main process reads and
writes a cache (workers return results), and a cache file is replaced atomically: a
concurrent run's write is lost at worst, never half-read.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..matching.rules import packaged_packs
from ..workspace.files import write_atomic

Stamp = tuple[int, int, str]  # mtime_ns, size, sha256 of the content
RACY_NS = 3_000_000_000  # an mtime this close to the recording time is not trusted
UNUSED_DAYS = 30  # cache files unused this long are removed
DAY = 24 * 3600.0
# The files of a cache folder, one per key: per-file outcomes of runs and audits, the call
# graph's index and summaries.
_KEYED = ("cache-", "audit-", "callgraph-")
_SOURCES = (".py", ".json", ".yaml")  # the rewriter's code and the data it reads


def default_cache_dir(project_root: Path) -> Path:
    """``.eqrewrite_cache`` in a project; the user cache folder for anything else."""
    if (project_root / "pyproject.toml").is_file() or (project_root / ".git").exists():
        return project_root / ".eqrewrite_cache"
    return user_cache_dir()


def user_cache_dir() -> Path:
    """The user's cache folder, as black and ruff choose theirs: ``$XDG_CACHE_HOME/eqrewrite``,
    else ``~/.cache/eqrewrite``."""
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


@functools.cache
def tool_digest() -> str:
    """This build of eqrewrite: its version, Python's, and the digest of every source file
    of the rewriter, of the packaged packs and of the helper code (a development checkout
    changes code without changing the version, and a cache must never outlive the code that
    filled it)."""
    package = Path(__file__).parents[1]  # the rewriter, every subpackage included
    sha = hashlib.sha256(f"{__version__}\n{sys.version}\n".encode())
    from ..rewriting.helpers import shipped

    sources = [p for p in package.rglob("*") if p.suffix in _SOURCES]
    helper_code = sorted(Path(str(shipped())).glob("*.py"))  # what rewrites insert
    for source in sorted(sources) + sorted(map(Path, packaged_packs().values())) + helper_code:
        sha.update(source.name.encode() + b"\0" + source.read_bytes())
    return sha.hexdigest()


def cache_file(folder: Path, prefix: str, key_parts: list[str]) -> Path:
    """The file of ``folder`` holding the cache for ``key_parts`` under this build."""
    key = digest("\n".join([tool_digest(), *key_parts]).encode())[:20]
    return folder / f"{prefix}-{key}.json"


def touch(*paths: str | Path) -> None:
    """Mark cache files as used now (what pruning by age goes by); failures are ignored."""
    for path in paths:
        if path:
            try:
                os.utime(path)
            except OSError:
                pass


def prune(folder: Path, subfolders: tuple[str, ...] = (), now: float | None = None) -> int:
    """Remove the cache files of ``folder`` (and every file of its ``subfolders``) that were
    not used for ``UNUSED_DAYS`` days, at most once a day (a stamp file, ``pruned``, says
    when it last ran); the number removed. Their keys are never asked for again once the
    tool, the packs or the options change; a file removed while in use is a cache miss."""
    now = time.time() if now is None else now
    if not folder.is_dir():
        return 0  # no cache yet: none is made for the stamp alone
    stamp = folder / "pruned"
    try:
        if now - stamp.stat().st_mtime < DAY:
            return 0
    except OSError:
        pass  # never pruned
    removed = 0
    for part in (".", *subfolders):
        try:
            entries = list(os.scandir(folder / part))
        except OSError:
            continue
        for entry in entries:
            if part == "." and not entry.name.startswith(_KEYED):
                continue  # the stamp, .gitignore, subfolders, anything not ours
            try:
                if now - entry.stat().st_mtime > UNUSED_DAYS * DAY:
                    os.remove(entry.path)
                    removed += 1
            except OSError:
                pass  # another process removed or replaced it
    try:
        stamp.touch()
        os.utime(stamp, (now, now))
    except OSError:
        pass  # a cache is an optimisation
    return removed


def stamp_of(stat: os.stat_result, content_digest: str) -> Stamp:
    """The stamp recorded for a file, its mtime zeroed when too recent to be trusted."""
    racy = time.time_ns() - stat.st_mtime_ns < RACY_NS
    return (0 if racy else stat.st_mtime_ns, stat.st_size, content_digest)


def stat_matches(stamp: Stamp, stat: os.stat_result) -> bool:
    """Whether ``stat`` shows the file as ``stamp`` recorded it (a zero mtime never does)."""
    return stamp[0] != 0 and stamp[0] == stat.st_mtime_ns and stamp[1] == stat.st_size


def save_json(folder: Path, path: Path, value: object) -> None:
    """Write a cache file atomically; failures are ignored (a cache is an optimisation)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        ignore = folder / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Created by eqrewrite\n*\n", encoding="utf-8")
        write_atomic(path, json.dumps(value, separators=(",", ":")).encode())
    except OSError:
        pass


def load_json(path: Path) -> object:
    """A cache file's content; None when it is missing or damaged."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class Entry:
    """What the cache knows of one file: its stamp, the facts it was processed under and
    the outcome (plain JSON data, which the command that stored it reads back)."""

    stamp: Stamp
    facts: str  # scope_facts: the cross-file facts it was processed under
    outcome: object

    def to_json(self) -> list[object]:
        """The entry as stored: a flat list."""
        return [*self.stamp, self.facts, self.outcome]

    @classmethod
    def from_json(cls, value: object) -> Entry:
        """The entry ``to_json`` stored; ValueError when it is not one."""
        if not isinstance(value, list) or len(value) != 5:
            raise ValueError("not a cache entry")
        mtime, size, sha, facts, outcome = value
        if not (isinstance(mtime, int) and isinstance(size, int) and isinstance(sha, str)
                and isinstance(facts, str)):
            raise ValueError("not a cache entry")
        return cls((mtime, size, sha), facts, outcome)


def scope_facts(scopes: dict[str, dict[str, frozenset[str]]], path: str) -> str:
    """The digest of the cross-file facts ``path`` is processed under: its functions in each
    function scope (``traced``, ``profiled``), the only thing a file's outcome takes from
    the other files."""
    facts = {name: sorted(by_path.get(path, ())) for name, by_path in scopes.items()}
    return digest(canonical(facts).encode())[:32]


class Cache:
    """Per-file outcomes for one combination of tool build, packs and options."""

    def __init__(self, folder: Path, key_parts: list[str], command: str = "cache"):
        """The cache of ``command`` ("cache": rewriting, "audit") for ``key_parts``."""
        self.folder = folder
        self.path = cache_file(folder, command, key_parts)
        self.entries: dict[str, Entry] = {}
        self.changed = False  # whether ``save`` has anything new to write
        loaded = load_json(self.path)
        if isinstance(loaded, dict):
            for path, value in loaded.items():
                try:
                    self.entries[path] = Entry.from_json(value)
                except ValueError:
                    continue  # a damaged entry is simply missing

    def fresh(self, path: Path, facts: str) -> Entry | None:
        """The entry for ``path`` when the file's content and its facts are those recorded
        (its stamp renewed when only the stat changed); None otherwise."""
        entry = self.entries.get(os.path.abspath(path))
        if entry is None or entry.facts != facts:
            return None
        try:
            stat = path.stat()
            if stat_matches(entry.stamp, stat):
                return entry
            # Touched, checked out again...: the content decides, and is stamped anew.
            if digest(path.read_bytes()) != entry.stamp[2]:
                return None
        except OSError:
            return None
        return Entry(stamp_of(stat, entry.stamp[2]), facts, entry.outcome)

    def record(self, path: Path, entry: Entry | None) -> None:
        """Remember ``entry`` for ``path``, or forget the file when it is None."""
        key = os.path.abspath(path)
        if self.entries.get(key) == entry:
            return
        self.changed = True
        if entry is None:
            del self.entries[key]
        else:
            self.entries[key] = entry

    def save(self) -> None:
        """Write the cache (atomically; failures are ignored); when nothing changed, only
        mark it used (``prune`` goes by that)."""
        if not self.changed and self.path.exists():
            touch(self.path)
            return
        save_json(self.folder, self.path,
                  {path: entry.to_json() for path, entry in self.entries.items()})
        self.changed = False
