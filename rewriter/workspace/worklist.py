"""From discovered paths to work: links followed once, ``--out`` destinations, refusals.

- A symlinked file is processed as the file it points to, once however many links lead
  there, and only when that file lies inside the given paths; a link leading outside them,
  or nowhere, is skipped with the reason. Nothing is ever written at a link's own path
  (``files.py`` writes through links anyway).
- Under ``--out``, each file goes to the same place relative to the given folder it was
  found in, and a symlink is mirrored as a symlink: to the rewritten copy of its target
  when that is inside the given paths, else to the same outside file.
- An ``--out`` folder that is a source folder, or would receive a file over one of the
  sources, is refused before anything is read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


class PlanError(Exception):
    """An ``--out`` folder that would overwrite the sources (a usage error)."""


@dataclass(frozen=True)
class Work:
    """A file to rewrite; ``destination`` is where ``--out`` puts it."""

    path: Path
    destination: Path | None = None


@dataclass(frozen=True)
class Skip:
    """A file not processed, and why."""

    path: Path
    reason: str


@dataclass(frozen=True)
class MirrorLink:
    """Under ``--out``: make ``destination`` a symlink reading ``target``."""

    path: Path
    destination: Path
    target: str


Item = Work | Skip | MirrorLink


def plan(files: list[Path], roots: list[Path], out_root: Path | None) -> list[Item]:
    """The work for ``files`` (discovered under ``roots``), in their order."""
    if out_root is not None:
        _check_out_root(out_root, roots)
    places = _Places(roots, out_root)
    items: list[Item] = []
    if not any(path.is_symlink() for path in files):  # the common case costs one lstat each
        items = [Work(path, places.destination(path)) for path in files]
    else:
        items = _plan_with_links(files, places, out_root is not None)
    if out_root is not None:
        _check_no_source_overwritten(items, out_root)
    return items


def _plan_with_links(files: list[Path], places: _Places, mirror: bool) -> list[Item]:
    regular = [path for path in files if not path.is_symlink()]
    planned = {os.path.realpath(path) for path in regular}
    items: list[Item] = []
    for path in files:
        if not path.is_symlink():
            items.append(Work(path, places.destination(path)))
            continue
        real = os.path.realpath(path)
        if not os.path.isfile(real):
            items.append(Skip(path, f"broken symlink (to {os.readlink(path)})"))
            continue
        inside = places.inside(real)
        if mirror:
            items.append(MirrorLink(path, places.mirrored(path), places.link_text(
                path, inside, real)))
        elif inside is None:
            items.append(Skip(path, f"symlink to {real}, outside the given paths: not "
                                    "followed"))
        if inside is not None and real not in planned:
            planned.add(real)
            items.append(Work(inside, places.destination(inside)))
    return items


class _Places:
    """Where the given roots really are, and where ``--out`` puts what they hold."""

    def __init__(self, roots: list[Path], out_root: Path | None):
        self.roots = [(root, os.path.realpath(root), root.is_dir()) for root in roots]
        self.out_root = out_root

    def inside(self, real: str) -> Path | None:
        """``real`` spelled under the given root holding it, or None when none does."""
        for root, root_real, is_dir in self.roots:
            if real == root_real:
                return root
            if is_dir and real.startswith(root_real.rstrip(os.sep) + os.sep):
                return root / os.path.relpath(real, root_real)
        return None

    def destination(self, path: Path) -> Path | None:
        """Where ``--out`` puts ``path``; None without ``--out``."""
        return None if self.out_root is None else self.mirrored(path)

    def mirrored(self, path: Path) -> Path:
        """Where ``--out`` puts ``path`` (only called when there is an ``--out`` folder)."""
        assert self.out_root is not None
        for root, _, is_dir in self.roots:
            if is_dir and (root == path or root in path.parents):
                return self.out_root / path.relative_to(root)
        return self.out_root / path.name

    def link_text(self, link: Path, inside: Path | None, real: str) -> str:
        """What the mirrored link reads: the copy of its target, or the same outside file."""
        if inside is None:
            return real
        return os.path.relpath(self.mirrored(inside), self.mirrored(link).parent)


def _check_out_root(out_root: Path, roots: list[Path]) -> None:
    out_real = os.path.realpath(out_root)
    for root in roots:
        if root.is_dir() and os.path.realpath(root) == out_real:
            raise PlanError(f"--out {out_root} is the source folder {root}; to rewrite in "
                            "place, leave out --out")


def _check_no_source_overwritten(items: list[Item], out_root: Path) -> None:
    sources = {os.path.realpath(item.path) for item in items if isinstance(item, Work)}
    for item in items:
        if isinstance(item, Work | MirrorLink) and item.destination is not None:
            if os.path.realpath(item.destination) in sources:
                raise PlanError(f"--out {out_root} would overwrite the source "
                                f"{item.destination}; choose a folder outside the sources")
