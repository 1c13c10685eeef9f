"""The two trees the graph-break benchmarks compare: the installed package and its rewrite.

``copy_original`` copies the installed package (``transformers``, ``timm``) to
``WORKDIR/orig/PACKAGE`` (kept while it is the same release); ``prepare_trees`` then runs
``eqrewrite orig/PACKAGE --rules PACK --out rew/PACKAGE`` (the whole package, or only the
model folders the cases use) and copies every file the rewrite did not write, and returns a
summary of the edits. ``_check_pack`` resolves the rule pack; ``_fail`` stops a driver with a
message.
"""

from __future__ import annotations

import filecmp
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path


def _fail(message: str) -> None:
    """Print an error and exit with status 2."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def _check_pack(spec: str) -> str:
    """The pack file for ``spec`` (path or packaged name); exit with a clear message if none."""
    from eqrewrite.rewriter.api import RuleError, resolve_pack

    try:
        return str(resolve_pack(spec))
    except RuleError as error:
        hint = (" (the graph-break pack rules/graphbreaks.yaml is not written yet)"
                if spec in ("graphbreaks", "graphbreaks.yaml") else "")
        _fail(f"rule pack {spec!r} not found{hint}: {error}. Pass --rules PATH, or "
              "--rules default to check the plumbing.")
    return ""


def _copy_if_missing(src: str, dst: str) -> str:
    """shutil.copy2 unless ``dst`` exists (keeps eqrewrite's output)."""
    return dst if os.path.exists(dst) else shutil.copy2(src, dst)


def _exclude_globs(orig: Path, keep: set[str]) -> list[str]:
    """--exclude globs that skip the model folders not in ``keep``, and TF/Flax files."""
    globs = [f"models/{d.name}/" for d in sorted((orig / "models").iterdir())
             if d.is_dir() and d.name not in keep]
    return globs + ["*_tf_*.py", "*_flax_*.py", "*tf_utils.py", "*flax_utils.py"]


def copy_original(workdir: Path, package: str, reuse: bool) -> Path:
    """Copy the installed ``package`` to ``workdir/orig/`` (unless ``reuse`` and it is there)."""
    spec = importlib.util.find_spec(package)  # the installed copy, not imported
    if spec is None or not spec.origin:
        _fail(f"{package} is not installed (e.g. pip install transformers==4.46.3)")
    src, orig = Path(spec.origin).parent, workdir / "orig" / package
    if reuse and (orig / "__init__.py").is_file() and filecmp.cmp(
            src / "__init__.py", orig / "__init__.py", shallow=False):  # same release
        return orig
    if orig.exists():
        shutil.rmtree(orig)
    shutil.copytree(src, orig,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return orig


def prepare_trees(workdir: Path, pack: str, scope: str, folders: list[str], reuse: bool,
                  extra: list[str], package: str = "transformers") -> dict:
    """Copy the installed ``package`` to orig/, rewrite it into rew/; a summary of the rewrite.

    ``scope`` "all" rewrites the whole package, "cases" leaves out the model folders (under
    ``models/``) not in ``folders``; ``extra`` are more eqrewrite arguments."""
    orig, rew = workdir / "orig" / package, workdir / "rew" / package
    if reuse and orig.is_dir() and rew.is_dir():
        print(f"reusing {orig} and {rew}", file=sys.stderr)
        return {"reused": True}
    if rew.exists():
        shutil.rmtree(rew)
    # The same release already copied stays (a scan may be importing it right now).
    copy_original(workdir, package, True)
    # This interpreter's eqrewrite, whether or not its scripts folder is on PATH.
    cmd = [sys.executable, "-m", "eqrewrite.rewriter", str(orig), "--rules", pack,
           "--out", str(rew), "--no-cache", "--quiet", "--format", "json", *extra]
    if scope == "cases":
        for glob in _exclude_globs(orig, set(folders)):
            cmd += ["--exclude", glob]
    print(f"rewriting {orig} with {pack} (scope {scope}) ...", file=sys.stderr)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode not in (0, 123):  # 123: some files failed, the others were written
        _fail(f"eqrewrite exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    try:
        document = json.loads(proc.stdout)
    except ValueError:
        document = {}
    # --out writes only the Python files it processed: add everything else unchanged.
    shutil.copytree(orig, rew, dirs_exist_ok=True, copy_function=_copy_if_missing)
    edits = document.get("edits", [])
    by_rule: dict[str, int] = {}
    for edit in edits:
        by_rule[edit.get("rule", "?")] = by_rule.get(edit.get("rule", "?"), 0) + 1
    summary = {"command": cmd, "seconds": round(seconds, 1), "exit_code": proc.returncode,
               "summary": document.get("summary"), "errors": document.get("errors", []),
               "files_changed": len({e["file"] for e in edits}), "edits": len(edits),
               "edits_by_rule": dict(sorted(by_rule.items(), key=lambda kv: -kv[1]))}
    print(f"rewrite done in {seconds:.0f} s: {summary['edits']} edits in "
          f"{summary['files_changed']} files, {len(summary['errors'])} file errors",
          file=sys.stderr)
    return summary

