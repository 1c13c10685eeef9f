"""The minimiser on real miscompilations: how much smaller, how many candidates, how long.

For each case of ``tests/miscompilations/`` named on the command line (default: four with
some bulk), runs ``eqrewrite oracle`` on it (Inductor, the file's header settings) to write
its reproducer folder, then ``eqrewrite reduce`` on that folder, and prints one row per case:
statements, tokens and input elements before and after, candidates judged and kept, seconds,
and the exit status of the reduced reproducer and of ``minimal.py`` (1: still failing).

With ``--generated LOW:HIGH`` it reduces generated programs instead (``eqrewrite gen``, the
programs of a campaign) with a planted bug: a Dynamo backend that adds one to the first
element of every integer output, so findings are the programs with an integer output.

Usage: ``python benchmarks/reduce.py [CASE ...] [--generated LOW:HIGH] [--max-tests N]
[--keep]``. Times depend on the machine's load (every candidate is compiled).
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

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "miscompilations"
DEFAULT = ("bug_adam_item_graph_break_loop.py", "bug_adaptive_max_pool_indices_transposed.py",
           "bug_bf16_div_eq_tie_count.py", "bug_index_put_then_add_flip.py")


PLANTED = '''
"""A planted miscompilation: integer outputs come back with their first element plus one."""
import torch


def off_by_one(gm, example_inputs):
    def bump(t):
        if isinstance(t, torch.Tensor) and not t.is_floating_point() and t.dtype != torch.bool \\
                and t.numel():
            t = t.clone()
            t.view(-1)[0] += 1
        return t

    def run(*args):
        out = gm(*args)
        return type(out)(bump(t) for t in out) if isinstance(out, (tuple, list)) else bump(out)
    return run
'''


def eqrewrite(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [
        str(cwd) if cwd else "", os.environ.get("PYTHONPATH", "")])))
    return subprocess.run([sys.executable, "-m", "eqrewrite.rewriter", *args],
                          capture_output=True, text=True, env=env)


def reduce_generated(seeds: str, work: Path, max_tests: int) -> list[dict]:
    """Generated programs with the planted bug: every finding reduced."""
    (work / "planted.py").write_text(PLANTED)
    low, _, high = seeds.partition(":")
    programs = work / "gen"
    eqrewrite("gen", "--seed", low, "--count", str(int(high) - int(low)), "-o", str(programs))
    eqrewrite("oracle", str(programs), "--backend", "planted:off_by_one", "--reproducers",
              str(work / "found"), "--no-breaks", cwd=work)
    results = []
    for folder in sorted((work / "found").glob("repro_*")):
        started = time.perf_counter()
        done = eqrewrite("reduce", str(folder), "--format", "json", "--max-tests",
                         str(max_tests), "-q", cwd=work)
        name = folder.name.removeprefix("repro_")
        if done.returncode not in (0, 1) or not done.stdout.strip():
            results.append({"case": name, "error": f"reduce exit {done.returncode}"})
        else:
            results.append({"case": name, "wall": time.perf_counter() - started,
                            **json.loads(done.stdout)})
        print(row(results[-1]), flush=True)
    return results


def reduce_case(case: str, work: Path, max_tests: int) -> dict:
    source = work / "src" / case
    source.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CORPUS / case, source)
    repros = work / "repros" / source.stem
    found = eqrewrite("oracle", str(source), "--reproducers", str(repros), "--no-breaks",
                      "--timeout", "900")
    folders = sorted(repros.glob("repro_*"))
    if found.returncode != 1 or not folders:
        return {"case": case, "error": f"no reproducer (oracle exit {found.returncode})"}
    started = time.perf_counter()
    done = eqrewrite("reduce", str(folders[0]), "--format", "json", "--max-tests",
                     str(max_tests), "-q")
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1) or not done.stdout.strip():
        return {"case": case, "error": f"reduce exit {done.returncode}: {done.stderr[-500:]}"}
    return {"case": case, "wall": seconds, **json.loads(done.stdout)}


def row(result: dict) -> str:
    if "error" in result:
        return f"{result['case']:45} {result['error']}"
    before, after, tried = result["before"], result["after"], result["candidates"]
    sizes = "  ".join(f"{before[k]:>5} → {after[k]:<4}"
                      for k in ("statements", "tokens", "input_elements"))
    verified = result["verified"]
    return (f"{result['case']:45} {sizes}  {tried['tried']:>5} {tried['accepted']:>4} "
            f"{result['wall']:>7.0f}  {verified.get('reduced/repro.py')!s:>5} "
            f"{verified.get('minimal.py')!s:>5}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", default=list(DEFAULT))
    parser.add_argument("--generated", metavar="LOW:HIGH",
                        help="reduce generated programs with a planted bug instead")
    parser.add_argument("--max-tests", type=int, default=200)
    parser.add_argument("--keep", action="store_true", help="keep the folders written")
    options = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="eqrewrite-reduce-bench-"))
    print(f"{'case':45} {'statements':>12}  {'tokens':>12}  {'elements':>12}  {'tried':>5} "
          f"{'kept':>4} {'seconds':>7}  {'repro':>5} {'minimal':>5}")
    results = []
    try:
        if options.generated:
            results = reduce_generated(options.generated, work, options.max_tests)
        for case in [] if options.generated else options.cases:
            results.append(reduce_case(case, work, options.max_tests))
            print(row(results[-1]), flush=True)
    finally:
        if options.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    good = [r for r in results if "error" not in r]
    failing = sum(r["verified"].get("reduced/repro.py") == 1 for r in good)
    print(f"{len(good)} of {len(results)} reduced; {failing} reduced reproducers still fail")
    return 0 if failing == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
