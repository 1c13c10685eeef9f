"""End-to-end test of ``.pre-commit-hooks.yaml`` with the real pre-commit package.

The checkout's current working tree (tracked files plus untracked, not ignored
ones) is committed into a temporary git repository, which a throwaway project
then uses as its hook repository, exactly as a user would use a tag of this
repository. ``git commit`` runs the hook that ``pre-commit install`` wrote.

Building the hook's virtualenv pip-installs eqrewrite and its dependencies; that
happens once per module, in a private PRE_COMMIT_HOME (never ~/.cache/pre-commit).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

BAD = "import torch\n\n\ndef f(x: torch.Tensor, y: torch.Tensor):\n    return x + y\n"
FIXED = "import torch\n\n\ndef f(x: torch.Tensor, y: torch.Tensor):\n    return torch.add(x, y)\n"
CLEAN = "def g(a, b):\n    return a + b\n"

IDENTITY = ["-c", "user.name=eqrewrite tests", "-c", "user.email=tests@example.invalid"]
SETUP_TIMEOUT = 900  # the first pre-commit run builds the hook's virtualenv
TIMEOUT = 300


def _run(args: list[str], cwd: Path, env: dict[str, str], *, check: bool = True,
         timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} exited {proc.returncode} in {cwd}:\n{proc.stdout}")
    return proc


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A subprocess environment isolated from the user's git and pre-commit set-up."""
    base = tmp_path_factory.mktemp("precommit-env")
    empty_gitconfig = base / "gitconfig"
    empty_gitconfig.write_text("", encoding="utf-8")
    result = {k: v for k, v in os.environ.items()
              # GIT_DIR & co. are set when pytest itself runs inside a git hook.
              if not k.startswith(("GIT_", "PRE_COMMIT")) and k != "SKIP"}
    bin_dir = str(Path(sys.executable).parent)
    result.update(
        PATH=os.pathsep.join([bin_dir, result.get("PATH", os.defpath)]),
        PRE_COMMIT_HOME=str(base / "pre-commit-home"),
        PRE_COMMIT_COLOR="never",
        # No global or system config: no core.hooksPath, templates, gpg signing...
        GIT_CONFIG_GLOBAL=str(empty_gitconfig),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        XDG_CACHE_HOME=str(base / "xdg-cache"),
    )
    return result


def _git(cwd: Path, env: dict[str, str], *args: str, check: bool = True):
    return _run(["git", *args], cwd, env, check=check)


def _working_tree_files(env: dict[str, str]) -> list[str]:
    """Tracked files that exist plus untracked, not ignored ones, skipping virtualenvs."""
    def ls(*args: str) -> list[str]:
        out = subprocess.run(["git", "ls-files", "-z", *args], cwd=ROOT, env=env, check=True,
                             stdout=subprocess.PIPE, timeout=TIMEOUT).stdout.decode()
        return [p for p in out.split("\0") if p]

    files = ls("--cached")
    for entry in ls("--others", "--exclude-standard", "--directory"):
        if not entry.endswith("/"):
            files.append(entry)
        elif not (ROOT / entry / "pyvenv.cfg").exists():  # e.g. CI's unignored .venv/
            files.extend(ls("--others", "--exclude-standard", "--", entry))
    return sorted({f for f in files
                   if (ROOT / f).is_file()
                   and not any((ROOT / parent / "pyvenv.cfg").exists()
                               for parent in Path(f).parents)})


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> tuple[str, str]:
    """(path, sha) of a git repository holding the checkout's working tree as one commit."""
    repo = tmp_path_factory.mktemp("hook-repo")
    for name in _working_tree_files(env):
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target, follow_symlinks=False)
    assert (repo / ".pre-commit-hooks.yaml").is_file(), "no .pre-commit-hooks.yaml to test"
    _git(repo, env, "init", "-q")
    _git(repo, env, "add", "-A")
    _git(repo, env, *IDENTITY, "commit", "-q", "--no-verify", "-m", "working tree")
    sha = _git(repo, env, "rev-parse", "HEAD").stdout.strip()
    return str(repo), sha


def _config(hook_repo: tuple[str, str], hook_ids: list[str]) -> str:
    path, sha = hook_repo
    hooks = "".join(f"      - id: {hook_id}\n" for hook_id in hook_ids)
    return f"repos:\n  - repo: {path}\n    rev: {sha}\n    hooks:\n{hooks}"


@pytest.fixture(scope="module")
def hook_envs(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str],
              hook_repo: tuple[str, str]) -> None:
    """Clone the hook repository and build the hooks' virtualenv once for the module."""
    project = tmp_path_factory.mktemp("install-hooks")
    _git(project, env, "init", "-q")
    (project / ".pre-commit-config.yaml").write_text(
        _config(hook_repo, ["eqrewrite-check", "eqrewrite", "eqrewrite-audit"]),
        encoding="utf-8")
    _run([sys.executable, "-m", "pre_commit", "install-hooks"], project, env,
         timeout=SETUP_TIMEOUT)


@pytest.fixture
def make_project(tmp_path: Path, env: dict[str, str], hook_repo: tuple[str, str],
                 hook_envs: None) -> Callable[[list[str]], Path]:
    """A fresh git repository whose pre-commit hook runs the given hook ids."""
    def make(hook_ids: list[str]) -> Path:
        project = tmp_path / "project"
        project.mkdir()
        _git(project, env, "init", "-q")
        _git(project, env, "config", "user.name", "eqrewrite tests")
        _git(project, env, "config", "user.email", "tests@example.invalid")
        _git(project, env, "config", "commit.gpgsign", "false")
        (project / ".pre-commit-config.yaml").write_text(_config(hook_repo, hook_ids),
                                                         encoding="utf-8")
        _run([sys.executable, "-m", "pre_commit", "install"], project, env)
        assert (project / ".git" / "hooks" / "pre-commit").is_file()
        _git(project, env, "add", ".pre-commit-config.yaml")
        return project
    return make


def _write(project: Path, name: str, text: str) -> Path:
    path = project / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _commit(project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return _git(project, env, "commit", "-m", "change", check=False)


def _has_commits(project: Path, env: dict[str, str]) -> bool:
    return _git(project, env, "rev-parse", "-q", "--verify", "HEAD", check=False).returncode == 0


def test_check_hook_blocks_commit_and_leaves_file_alone(make_project, env):
    project = make_project(["eqrewrite-check"])
    source = _write(project, "pkg/model.py", BAD)
    _git(project, env, "add", "pkg/model.py")

    result = _commit(project, env)

    assert result.returncode != 0, result.stdout
    assert "eqrewrite (check)" in result.stdout and "Failed" in result.stdout, result.stdout
    assert "- hook id: eqrewrite-check" in result.stdout, result.stdout
    assert "would rewrite pkg/model.py" in result.stdout, result.stdout
    assert "files were modified by this hook" not in result.stdout, result.stdout
    assert source.read_text(encoding="utf-8") == BAD
    assert not _has_commits(project, env)


def test_check_hook_checks_the_staged_version(make_project, env):
    project = make_project(["eqrewrite-check"])
    source = _write(project, "model.py", BAD)
    _git(project, env, "add", "model.py")
    source.write_text(FIXED, encoding="utf-8")  # fixed in the work tree, but not staged

    result = _commit(project, env)

    assert result.returncode != 0, result.stdout
    assert "would rewrite model.py" in result.stdout, result.stdout
    assert source.read_text(encoding="utf-8") == FIXED  # pre-commit restored the unstaged edit
    assert not _has_commits(project, env)


def test_fix_hook_rewrites_then_commit_passes(make_project, env):
    project = make_project(["eqrewrite"])
    source = _write(project, "pkg/model.py", BAD)
    _git(project, env, "add", "pkg/model.py")

    blocked = _commit(project, env)

    assert blocked.returncode != 0, blocked.stdout
    assert "- hook id: eqrewrite" in blocked.stdout, blocked.stdout
    assert "- files were modified by this hook" in blocked.stdout, blocked.stdout
    assert "pkg/model.py" in blocked.stdout, blocked.stdout
    assert source.read_text(encoding="utf-8") == FIXED
    assert not _has_commits(project, env)

    _git(project, env, "add", "pkg/model.py")
    passed = _commit(project, env)

    assert passed.returncode == 0, passed.stdout
    assert "eqrewrite" in passed.stdout and "Passed" in passed.stdout, passed.stdout
    committed = _git(project, env, "show", "HEAD:pkg/model.py").stdout
    assert committed == FIXED
    # The hook leaves nothing behind: its cache folder ignores itself.
    assert _git(project, env, "status", "--porcelain").stdout == ""


def test_commit_with_nothing_to_rewrite_passes(make_project, env):
    project = make_project(["eqrewrite-check", "eqrewrite"])
    source = _write(project, "util.py", CLEAN)
    _write(project, "notes.txt", "x + y\n")
    _git(project, env, "add", "util.py", "notes.txt")

    result = _commit(project, env)

    assert result.returncode == 0, result.stdout
    assert "Failed" not in result.stdout, result.stdout
    assert result.stdout.count("Passed") == 2, result.stdout
    assert source.read_text(encoding="utf-8") == CLEAN
    assert _has_commits(project, env)

    # Only non-Python files staged: both hooks are skipped (types: [python]).
    _write(project, "notes.txt", "a + b\n")
    _git(project, env, "add", "notes.txt")
    skipped = _commit(project, env)
    assert skipped.returncode == 0, skipped.stdout
    assert skipped.stdout.count("(no files to check)Skipped") == 2, skipped.stdout


BREAKING = ("import torch\n\n\nclass M(torch.nn.Module):\n"
            "    def forward(self, x: torch.Tensor):\n        print(x.sum())\n        return x\n")


def test_audit_hook_fails_on_new_break_patterns_only(make_project, env):
    project = make_project(["eqrewrite-audit"])
    _write(project, "model.py", BREAKING)
    _git(project, env, "add", "model.py")

    blocked = _commit(project, env)

    assert blocked.returncode != 0, blocked.stdout
    assert "eqrewrite audit (graph breaks)" in blocked.stdout, blocked.stdout
    assert "model.py" in blocked.stdout and "print(x.sum())" in blocked.stdout, blocked.stdout
    assert not _has_commits(project, env)

    # Accept today's findings as a baseline: the commit passes, a new break fails again.
    _write(project, "pyproject.toml",
           '[tool.eqrewrite.audit]\nbaseline = "audit-baseline.json"\n')
    _run([sys.executable, "-m", "eqrewrite.rewriter", "audit", ".", "--format", "json", "-o",
          "audit-baseline.json", "--exit-zero"], project, env)
    _git(project, env, "add", "model.py", "pyproject.toml", "audit-baseline.json")
    passed = _commit(project, env)
    assert passed.returncode == 0, passed.stdout
    assert "eqrewrite audit (graph breaks)" in passed.stdout and "Passed" in passed.stdout

    _write(project, "model.py", "import os\n" + BREAKING.replace(
        "        return x", "        y = x.sum().item()\n        return x"))
    _git(project, env, "add", "model.py")
    again = _commit(project, env)
    assert again.returncode != 0, again.stdout
    assert "1 new, 1 known, 0 fixed" in again.stdout and "x.sum().item()" in again.stdout
