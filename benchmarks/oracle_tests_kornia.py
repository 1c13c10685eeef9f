"""``--oracle-tests`` on a real library no one here wrote: kornia and its own test suite.

Two runs of the real command line on a kornia source folder (``KORNIA``: a project folder
holding ``pyproject.toml``, ``conftest.py``, ``kornia/``, ``testing/`` and ``tests/``):

* ``graphbreaks``: ``eqrewrite KORNIA/kornia --rules graphbreaks --check --format json`` (which
  files, how many edits), then the same with ``--oracle-tests "PYTHON -m pytest -q ..."``:
  every test outcome should be equal (none changed, flaky ones reported apart).
* ``planted``: a test-only pack with one wrong rule (``tests/data/planted_wrong_rule.yaml``:
  ``torch.hypot(a, b)`` -> ``a + b``, which edits ``kornia/contrib/distance_transform.py``
  and ``kornia/feature/adalam/utils.py``) with ``--oracle-tests ... --rollback --check``: some
  outcomes must change, every changed test must be blamed on files the planted rule edited
  (and on no other), and after the rollback every one must have its original outcome back.

``--pack default`` (repeatable ``--pack``) also runs the default pack like ``graphbreaks``.

The kornia folder. PyPI's sdists hold no tests (0.7.0 to 0.9.0 checked), so the folder used
for the figures in docs/oracle-tests.md is the PyPI sdist of kornia 0.8.2 (``pip download
kornia==0.8.2 --no-binary :all: --no-deps``; its ``kornia/`` is byte for byte the ``v0.8.2``
tag's, less a README) plus ``tests/``, ``testing/`` and ``conftest.py`` from the kornia
repository at tag ``v0.8.2``. kornia itself is not installed: ``--oracle-tests`` puts each copy
first on ``PYTHONPATH``. Run this script with the interpreter of a virtual environment that
has torch, kornia's dependencies (``kornia_rs``, ``numpy``, ``packaging``; ``pillow`` for a few
tests), ``pytest``, ``coverage`` and eqrewrite; the test command is that interpreter's
``-m pytest``.

The tests (``--tests``, default ``SUBSET``): the whole suite has 10,795 tests, and 2,919 of
them (these folders and all of ``tests/contrib``) already took 10 min 52 s for one plain run
on a shared 2-core machine (``--oracle-tests`` runs the command three times, once under
coverage, and a fourth time with ``--rollback``), so the default is the test folders
exercising the modules the graph-break pack rewrites (``kornia.geometry``: boxes,
keypoints, homography, transform/affwarp; ``kornia.feature``: integrated, adalam, dedode;
``kornia.utils``: helpers; ``kornia.contrib``: extract_patches; the transplantation
augmentation) and the planted rule's ``distance_transform`` test, without the ViT/SAM model
tests of ``tests/contrib`` that compile whole models with Inductor for minutes.
Tests that download pretrained weights fail without a network, the same way on every tree.

Usage: ``python benchmarks/oracle_tests_kornia.py KORNIA [--tests "PATHS"] [--pack NAME]
[--planted PACK] [--skip-planted] [--nice N]``. Prints the figures, and a JSON document
with ``--json FILE``. Exit status 0 when no graph-break (or ``--pack``) outcome changed and
the planted rule was caught, attributed to the files it edited and rolled back.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLANTED = ROOT / "tests" / "data" / "planted_wrong_rule.yaml"
SUBSET = ("tests/geometry tests/feature tests/utils tests/augmentation/test_augmentation_mix.py "
          "tests/contrib/test_extract_tensor_patch.py "
          "tests/contrib/test_combine_tensor_patch.py "
          "tests/contrib/test_conv_distance_transformer.py")


def eqrewrite_command() -> list[str]:
    """The ``eqrewrite`` console script beside this interpreter, else the one on PATH."""
    beside = Path(sys.executable).parent / "eqrewrite"
    found = str(beside) if beside.exists() else shutil.which("eqrewrite")
    if found is None:
        sys.exit("eqrewrite is not installed for this interpreter (pip install -e .)")
    return [found]


def run_json(args: list[str], nice: int) -> tuple[dict, int, float]:
    """Run eqrewrite with ``--format json``; its document, exit status and wall seconds."""
    command = (["nice", "-n", str(nice)] if nice and shutil.which("nice") else []) + args
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - start
    try:
        document = json.loads(done.stdout)
    except json.JSONDecodeError:
        sys.stderr.write(done.stderr[-4000:])
        sys.exit(f"no JSON document from {' '.join(args)} (exit {done.returncode})")
    return document, done.returncode, seconds


def edits_by_file(document: dict, root: Path) -> dict[str, int]:
    """Edits per file, the paths relative to the project folder (as the oracle reports)."""
    found: dict[str, int] = {}
    for edit in document.get("edits", []):
        path = Path(edit["file"]).resolve().relative_to(root).as_posix()
        found[path] = found.get(path, 0) + 1
    return found


def measure(project: Path, pack: str, tests: str, rollback: bool, nice: int) -> dict:
    """``--check`` (the edits), then ``--oracle-tests`` with ``pack``: the figures."""
    base = eqrewrite_command() + [str(project / "kornia"), "--rules", pack, "--no-cache",
                                  "--check", "--format", "json"]
    check, _, _ = run_json(base, nice)
    edits = edits_by_file(check, project)
    suite = f"{sys.executable} -m pytest -q -p no:cacheprovider {tests}"
    with tempfile.TemporaryDirectory(prefix="oracle-tests-kornia-") as scratch:
        # --out, not --check: with --check the oracle redoes the rewrite file by file, and
        # the graph-break pack's `traced` rules then leave 6 of its 11 files unchanged.
        oracle = (eqrewrite_command()
                  + [str(project / "kornia"), "--rules", pack, "--no-cache", "--format",
                     "json", "--out", str(Path(scratch) / "out"), "--oracle-tests", suite]
                  + (["--rollback"] if rollback else []))
        document, status, seconds = run_json(oracle, nice)
    report = document.get("steps", {}).get("oracle_tests")
    if report is None:
        sys.exit(f"no steps.oracle_tests in the report of {pack} (exit {status}): "
                 f"{json.dumps(document.get('errors', []))[:2000]}")
    return {"pack": pack, "files_edited": len(edits), "edits": sum(edits.values()),
            "edited": edits, "exit": status, "wall_seconds": round(seconds, 1),
            "report": report}


def show(result: dict) -> None:
    report = result["report"]
    changed = report["outcomes_changed"]
    print(f"== {result['pack']}: {result['edits']} edits in {result['files_edited']} files; "
          f"eqrewrite exit {result['exit']}")
    print(f"   tests run: {report['tests_run']}, outcomes changed: {len(changed)}, "
          f"flaky: {len(report['flaky'])}, unresolved: {report['unresolved']}, "
          f"seconds: {report['seconds']:.0f} (wall {result['wall_seconds']:.0f})")
    print(f"   files cleared: {len(report['files_cleared'])}, unexercised: "
          f"{len(report['files_unexercised'])}, rolled back: {len(report['files_rolled_back'])}")
    for name in ("files_cleared", "files_unexercised", "files_rolled_back"):
        for path in report[name]:
            print(f"     {name[6:]}: {path}")
    for flaky in report["flaky"]:
        print(f"   FLAKY {flaky['test']}: {flaky['first']['status']} / "
              f"{flaky['second']['status']}")
    for change in changed:
        back = change["after_rollback"]
        print(f"   CHANGED {change['test']}: {change['before']['status']} -> "
              f"{change['after']['status']}; files: {', '.join(change['files']) or '-'}"
              + (f"; after rollback: {back['status']}" if back else ""))


def planted_verdict(result: dict) -> list[str]:
    """What is wrong with the planted run (empty: caught, attributed, rolled back)."""
    report, edited = result["report"], set(result["edited"])
    problems = []
    if not report["outcomes_changed"]:
        problems.append("the planted wrong rule changed no outcome")
    for change in report["outcomes_changed"]:
        if not change["files"] or not set(change["files"]) <= edited:
            problems.append(f"{change['test']} blamed on {change['files']}, "
                            f"not on the planted rule's files {sorted(edited)}")
        back = change["after_rollback"]
        if back is None or back["status"] != change["before"]["status"]:
            problems.append(f"{change['test']} not restored by the rollback: {back}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kornia", type=Path, help="kornia project folder (kornia/, tests/)")
    parser.add_argument("--tests", default=SUBSET, help="test paths, relative to KORNIA")
    parser.add_argument("--pack", action="append", default=None,
                        help="packs judged by the tests (default: graphbreaks); repeatable")
    parser.add_argument("--planted", default=str(PLANTED), help="the planted wrong pack")
    parser.add_argument("--skip-planted", action="store_true")
    parser.add_argument("--nice", type=int, default=10, help="nice level (0: none)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    options = parser.parse_args()
    project = options.kornia.resolve()
    if not (project / "kornia").is_dir() or not (project / "tests").is_dir():
        parser.error(f"{project} has no kornia/ and tests/ folders")
    print(f"kornia folder: {project}; tests: {options.tests}; load: {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    results, ok = [], True
    for pack in options.pack or ["graphbreaks"]:
        result = measure(project, pack, options.tests, rollback=False, nice=options.nice)
        show(result)
        results.append(result)
        ok = ok and not result["report"]["outcomes_changed"]
    if not options.skip_planted:
        result = measure(project, options.planted, options.tests, rollback=True,
                         nice=options.nice)
        show(result)
        results.append(result)
        problems = planted_verdict(result)
        for problem in problems:
            print(f"   PLANTED RULE NOT HANDLED: {problem}")
        if not problems:
            print("   planted rule: caught, attributed to the files it edited, rolled back")
        ok = ok and not problems
    print(f"load at end: {os.getloadavg()[0]:.1f}")
    if options.json:
        options.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
