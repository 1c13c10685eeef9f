"""A revision of this repository, importable beside the installed package, and gone again.

The benchmarks that compare this tree with an earlier revision (``rewrite_identity.py``,
``reduce.py --baseline``, ``campaign.py --baseline``) run that revision's own code:

* ``add_worktree`` checks the revision out with ``git worktree add --detach`` (default
  ``/tmp/eqrw-KIND-<sha>``; a clean checkout of the same commit already there is used as it
  is) and ``remove_worktree`` removes it; ``snapshot`` copies a checkout's package folders
  instead (the working tree, which others may edit while a benchmark runs);
* ``make_links`` makes a folder holding ``eqrewrite/rewriter``, ``eqrewrite/oracle`` and
  ``eqrewrite/rules``, links into the checkout, and ``RUN`` (the runner below). With that
  folder first on ``PYTHONPATH`` (``environment``) the checkout's code and packaged rule
  packs are imported: the editable install's finder comes after the path, and processes
  the command spawns inherit the path;
* ``command(links, ARGS)`` is ``python -m eqrewrite.rewriter ARGS`` through the runner,
  which writes the file of every ``eqrewrite`` module the process imported, when it exits,
  to ``$EQRW_BASELINE_IMPORTS``; ``check_imports`` reads that record and refuses a module
  from outside the checkout (``SetupError``);
* ``Checkout`` does all of it as a context manager, removing what it made on exit.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_FOLDERS = ("rewriter", "oracle", "rules")  # eqrewrite.<name> -> <checkout>/<name>
RUN = "eqrewrite_baseline_run.py"  # in the link folder
IMPORTS = "EQRW_BASELINE_IMPORTS"  # where the runner writes what was imported

# ``python RUN ARGS`` is ``python -m eqrewrite.rewriter ARGS``, recording the file of every
# eqrewrite module the process imported when it exits (when $EQRW_BASELINE_IMPORTS is set).
RUNNER = '''\
import atexit, json, os, runpy, sys

PID = os.getpid()


def record():
    if os.getpid() != PID or not os.environ.get("EQRW_BASELINE_IMPORTS"):  # a worker process
        return
    modules = {name: os.path.realpath(module.__file__)
               for name, module in list(sys.modules.items())
               if (name == "eqrewrite" or name.startswith("eqrewrite."))
               and getattr(module, "__file__", None)}
    with open(os.environ["EQRW_BASELINE_IMPORTS"], "w") as handle:
        json.dump(modules, handle)


if __name__ == "__main__":
    atexit.register(record)
    sys.argv[0] = "eqrewrite"
    runpy.run_module("eqrewrite.rewriter", run_name="__main__", alter_sys=True)
'''


class SetupError(Exception):
    """The revision cannot be checked out or run as its own code (the message says why)."""


def git(*args: str, cwd: Path = ROOT) -> str:
    result = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise SetupError(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip()


def add_worktree(revision: str, folder: Path | None, kind: str = "base"
                 ) -> tuple[Path, str, bool]:
    """A detached checkout of ``revision``: its folder (default /tmp/eqrw-KIND-<sha>), its
    commit, whether it was made here (a clean checkout of the commit there is used as is)."""
    commit = git("rev-parse", "--verify", f"{revision}^{{commit}}")
    folder = folder or Path(tempfile.gettempdir()) / f"eqrw-{kind}-{commit[:7]}"
    if folder.exists():
        if (folder / ".git").exists() and git("rev-parse", "HEAD", cwd=folder) == commit:
            status = git("status", "--porcelain", "--untracked-files=no", cwd=folder)
            if status:
                raise SetupError(f"{folder} holds edits to {commit[:7]}: remove it")
            return folder, commit, False
        raise SetupError(f"{folder} exists and is no checkout of {commit[:7]}")
    git("worktree", "add", "--detach", str(folder), commit)
    return folder, commit, True


def remove_worktree(folder: Path) -> None:
    git("worktree", "remove", "--force", str(folder))


def snapshot(checkout: Path, folder: Path) -> Path:
    """A copy of ``checkout``'s package folders: a working tree others edit meanwhile stays
    one state for every run."""
    for name in PACKAGE_FOLDERS:
        shutil.copytree(checkout / name, folder / name, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def make_links(checkout: Path, folder: Path) -> Path:
    """``folder/eqrewrite/{rewriter,oracle,rules}`` -> ``checkout``'s folders, and the runner."""
    package = folder / "eqrewrite"
    package.mkdir(parents=True)
    for name in PACKAGE_FOLDERS:
        (package / name).symlink_to(checkout.resolve() / name, target_is_directory=True)
    (folder / RUN).write_text(RUNNER)
    return folder


def command(links: Path, *args: str) -> list[str]:
    """``eqrewrite ARGS`` as the checkout behind ``links`` runs it (with ``environment``)."""
    return [sys.executable, str(links / RUN), *args]


def environment(links: Path, imports: Path | None = None,
                base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """``base`` (default: this process's environment) with ``links`` alone on
    ``PYTHONPATH``, ``$EQRW_BASELINE_IMPORTS`` set to ``imports`` (when given) and
    ``extra``; no ``PYTHONSTARTUP``."""
    env = {**(os.environ if base is None else base), "PYTHONPATH": str(links), **extra}
    env.pop("PYTHONSTARTUP", None)
    if imports is not None:
        env[IMPORTS] = str(imports)
    else:
        env.pop(IMPORTS, None)
    return env


def read_imports(path: Path) -> dict[str, str]:
    """The runner's record: module name -> its file (empty when there is none)."""
    return json.loads(path.read_text()) if path.exists() else {}


def check_imports(name: str, label: str, checkout: Path, modules: Mapping[str, str],
                  failure: str = "") -> str:
    """One line saying where a run's eqrewrite came from; SetupError when it recorded no
    eqrewrite modules (``failure``: what it printed, for the message) or imported one from
    outside ``checkout``."""
    root = str(checkout.resolve()) + os.sep
    if "eqrewrite.rewriter" not in modules:
        raise SetupError(f"{name}: the run recorded no eqrewrite modules{failure}")
    strays = sorted(f"{module} ({path})" for module, path in modules.items()
                    if not path.startswith(root))
    if strays:
        raise SetupError(f"{name} imported eqrewrite modules from outside {root}: "
                         + ", ".join(strays[:5]))
    return (f"{name} ({label}): eqrewrite.rewriter from {modules['eqrewrite.rewriter']}, "
            f"{len(modules)} eqrewrite modules, all under {root}")


@dataclass
class Checkout:
    """A revision (or, with ``revision=None``, a snapshot of the working tree) checked out
    under ``work`` with its link folder; ``with Checkout(...) as side:`` removes the worktree
    on exit (the caller owns ``work``)."""

    revision: str | None
    work: Path
    name: str = "baseline"
    folder: Path | None = None  # where to check out (default: work/NAME-tree)
    label: str = ""
    checkout: Path | None = None
    links: Path | None = None
    made: bool = False

    def __enter__(self) -> Checkout:
        self.work.mkdir(parents=True, exist_ok=True)
        if self.revision is None:
            head = git("rev-parse", "--short", "HEAD")
            edits = git("status", "--porcelain", "--untracked-files=all", "--",
                        *PACKAGE_FOLDERS).splitlines()
            self.checkout = snapshot(ROOT, self.work / f"{self.name}-tree")
            self.label = (f"working tree: HEAD {head}, {len(edits)} files of "
                          f"{', '.join(PACKAGE_FOLDERS)} edited or new")
        else:
            self.checkout, commit, self.made = add_worktree(
                self.revision, self.folder or self.work / f"{self.name}-tree")
            self.label = commit[:7]
        self.links = make_links(self.checkout, self.work / f"{self.name}-links")
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self.made and self.checkout is not None:
            self.made = False
            remove_worktree(self.checkout)

    def command(self, *args: str) -> list[str]:
        assert self.links is not None, "use it as a context manager"
        return command(self.links, *args)

    def environment(self, imports: Path | None = None, **extra: str) -> dict[str, str]:
        assert self.links is not None, "use it as a context manager"
        return environment(self.links, imports, None, **extra)

    def check_imports(self, modules: Mapping[str, str], failure: str = "") -> str:
        assert self.checkout is not None, "use it as a context manager"
        return check_imports(self.name, self.label, self.checkout, modules, failure)
