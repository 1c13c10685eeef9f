"""Which files to process: walk folders, honour .gitignore and include/exclude globs.

Explicitly named files are always processed unless an exclude glob names them
(pre-commit passes file names, and users expect their excludes to hold there).
Virtualenvs, build output and VCS folders are skipped without being listed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pathspec

SKIPPED_FOLDERS = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".eqrewrite_cache", "build", "dist", "node_modules",
    ".eggs", "site-packages",
})


def _spec(patterns: list[str]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def _git_root(start: Path) -> Path | None:
    for folder in [start, *start.parents]:
        if (folder / ".git").exists():
            return folder
    return None


class _Ignores:
    """The .gitignore files that apply to a walk, each matched relative to its folder."""

    def __init__(self) -> None:
        self.specs: list[tuple[Path, pathspec.GitIgnoreSpec]] = []

    def add_folder(self, folder: Path) -> None:
        ignore = folder / ".gitignore"
        if ignore.is_file():
            lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
            self.specs.append((folder, _spec(lines)))

    def ignored(self, path: Path, is_dir: bool) -> bool:
        for folder, spec in self.specs:
            try:
                relative = path.relative_to(folder).as_posix()
            except ValueError:
                continue
            if spec.match_file(relative + ("/" if is_dir else "")):
                return True
        return False


def _relative(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` when under it (globs are written that way), else as is."""
    try:
        return Path(os.path.abspath(path)).relative_to(base).as_posix()
    except ValueError:
        return path.as_posix()


def discover(paths: list[Path], include: list[str], exclude: list[str], base: Path,
             use_gitignore: bool = True, skip: Path | None = None) -> Iterator[Path]:
    """Yield the Python files under ``paths``, each once, in a stable order.

    Include and exclude globs are gitignore-style and relative to ``base``, the
    project root holding the configuration. The folder ``skip`` (eqrewrite's own
    ``--out`` tree) is never entered, however it is spelt.
    """
    includes, excludes = _spec(include), _spec(exclude)
    base = Path(os.path.abspath(base))
    skipped = _identity(skip) if skip is not None else None
    seen: set[Path] = set()
    for root in paths:
        if root.is_file():
            if not excludes.match_file(_relative(root, base)) and root not in seen:
                seen.add(root)
                yield root
            continue
        ignores = _Ignores()
        git_root = _git_root(Path(os.path.abspath(root))) if use_gitignore else None
        if git_root is not None:
            for folder in reversed(Path(os.path.abspath(root)).parents):
                if folder == git_root or git_root in folder.parents:
                    ignores.add_folder(folder)
        for walked, dirs, files in os.walk(root):
            here = Path(walked)
            absolute = Path(os.path.abspath(here))
            if use_gitignore:
                ignores.add_folder(absolute)
            dirs[:] = sorted(d for d in dirs if _keep_folder(here / d, base, excludes, ignores,
                                                               use_gitignore, skipped))
            for name in sorted(files):
                path = here / name
                relative = _relative(path, base)
                if not includes.match_file(relative) or excludes.match_file(relative):
                    continue
                if use_gitignore and ignores.ignored(absolute / name, False):
                    continue
                if path not in seen:
                    seen.add(path)
                    yield path


def _identity(folder: Path) -> tuple[int, int] | None:
    """What makes a folder the same however it is named (None when it does not exist)."""
    try:
        info = folder.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _keep_folder(folder: Path, base: Path, excludes: pathspec.GitIgnoreSpec, ignores: _Ignores,
                 use_gitignore: bool, skipped: tuple[int, int] | None = None) -> bool:
    if folder.name in SKIPPED_FOLDERS or folder.name.endswith(".egg-info"):
        return False
    if skipped is not None and _identity(folder) == skipped:
        return False
    if (folder / "pyvenv.cfg").exists():
        return False  # a virtualenv under another name
    if excludes.match_file(_relative(folder, base) + "/"):
        return False
    return not (use_gitignore and ignores.ignored(Path(os.path.abspath(folder)), True))


def package_files(files: list[Path], paths: list[Path], include: list[str],
                  exclude: list[str], base: Path) -> list[Path]:
    """The Python files of the packages holding ``files`` that ``files`` lacks: what a call
    graph over ``files`` needs besides them (a hook given three files of a package still
    follows calls through the whole package). A package is a file's outermost folder with
    an ``__init__.py``; one inside a folder of ``paths`` was walked already."""
    walked = [Path(os.path.abspath(p)) for p in paths if p.is_dir()]
    roots: set[Path] = set()
    for file in files:
        folder = Path(os.path.abspath(file)).parent
        if not (folder / "__init__.py").is_file():
            continue
        while (folder.parent / "__init__.py").is_file() and folder.parent != folder:
            folder = folder.parent
        if not any(folder == w or w in folder.parents for w in walked):
            roots.add(folder)
    known = {os.path.abspath(f) for f in files}
    return [f for f in discover(sorted(roots), include, exclude, base)
            if os.path.abspath(f) not in known]
