"""The oracle on the whole corpus of real miscompilations and expected-numerics controls.

Runs ``eqrewrite oracle tests/miscompilations --format json`` (Inductor, each target's header
settings), compares every verdict with the ``Expect:`` line of its file, then runs every
reproducer the oracle wrote and checks that it exits 1 exactly for the ``compiler-bug`` and
``compile-error`` verdicts. Prints one row per case and the totals: bugs flagged, controls
left alone, confidence of the flagged bugs, and reproducer agreement.

Usage: ``python benchmarks/miscompilations.py [--parallel N] [--keep]``. Exit status 0 when
every verdict is the expected one and every reproducer agrees.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "miscompilations"


def expectation(path: Path) -> tuple[str, bool]:
    """``(Expect: value, disputed)`` of a case file."""
    text = path.read_text()
    return re.search(r"^Expect: (\S+)", text, re.MULTILINE).group(1), "\nDisputed:" in text


def run_oracle(work: Path, parallel: int) -> tuple[dict, float]:
    report = work / "report.json"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "eqrewrite.rewriter", "oracle", str(CORPUS),
                           "--format", "json", "-o", str(report), "--parallel", str(parallel),
                           "--no-breaks", "--timeout", "900"],
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        sys.exit(f"eqrewrite oracle failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(report.read_text()), seconds


def run_reproducer(script: str) -> int:
    return subprocess.run([sys.executable, script], capture_output=True, text=True,
                          cwd=Path(script).parent, timeout=1800).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parallel", type=int, default=2, help="targets at once (2)")
    parser.add_argument("--keep", action="store_true", help="keep the report and reproducers")
    options = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="eqrewrite-miscompilations-"))
    try:
        document, seconds = run_oracle(work, options.parallel)
        return report(document, seconds)
    finally:
        if options.keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def report(document: dict, seconds: float) -> int:
    rows, ok, tally = [], True, Counter()
    started = time.perf_counter()
    for target in sorted(document["targets"], key=lambda t: t["target"]):
        name = target["target"].split("::")[0]
        expect, disputed = expectation(CORPUS / name)
        got = target["verdict"]
        scripts = [f["reproducer"] for f in target["findings"] if f.get("reproducer")]
        exits = [run_reproducer(script) for script in scripts]
        # A reproducer is written for a compiler bug and for a compile crash (it exits 1
        # while compiling raises), and for nothing else.
        agrees = (exits == [1] * len(exits)) and (
            bool(exits) == (got in ("compiler-bug", "compile-error")))
        group = "disputed" if disputed else {"compiler-bug": "bug",
                                             "numerical-noise": "control"}.get(expect, expect)
        tally[(group, got == expect)] += 1
        if got == "compiler-bug":
            tally[("confidence", target["confidence"])] += 1
        ok &= got == expect and agrees
        rows.append((name, group, expect, got, target.get("confidence") or "",
                     ",".join(map(str, exits)) or "-", "" if got == expect and agrees else "!!"))
    reproducing = time.perf_counter() - started
    widths = [max(len(str(row[i])) for row in rows + [HEADER]) for i in range(len(HEADER))]
    for row in [HEADER, *rows]:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)))
    for group in ("bug", "control", "compile-error", "disputed"):
        right, total = tally[(group, True)], tally[(group, True)] + tally[(group, False)]
        if total:
            print(f"{group}: {right} of {total} as expected")
    confidence = {k[1]: n for k, n in tally.items() if k[0] == "confidence"}
    print(f"compiler-bug confidence: {confidence}")
    print(f"torch {document['torch']}; oracle {seconds:.0f} s for {len(rows)} targets; "
          f"reproducers {reproducing:.0f} s; all as expected and every reproducer agrees: {ok}")
    return 0 if ok else 1


HEADER = ("case", "group", "expected", "verdict", "confidence", "repro exit", "")


if __name__ == "__main__":
    sys.exit(main())
