"""The minimiser on real miscompilations: how much smaller, how many candidates, how long.

For each case of ``tests/miscompilations/`` named on the command line (default: four with
some bulk), runs ``eqrewrite oracle`` on it (Inductor, the file's header settings) to write
its reproducer folder, then ``eqrewrite reduce`` on that folder, and prints one row per case:
statements, tokens and input elements before and after, candidates judged and kept, seconds,
and the exit status of the reduced reproducer and of ``minimal.py`` (1: still failing).

With ``--generated LOW:HIGH`` it reduces generated programs instead (``eqrewrite gen``, the
programs of a campaign) with a planted bug: a Dynamo backend that adds one to the first
element of every integer output, so findings are the programs with an integer output.

With ``--jobs N`` (N > 1) it measures reduction throughput side by side instead: each case is
reduced twice, serially (``-j 1``) and with ``-j N``, under the same ``--max-tests``, each run
with a fresh Inductor cache folder of its own (so neither reuses the other's compiled
kernels; the workers of one run share theirs), and one row per case gives the candidates
judged per minute of reduction (start-up, baseline and final check left out) of both, their
ratio, whether the two reduced programs and candidate counts are identical, the candidates
judged ahead and dropped, the load average before each run, and the cores the run used (CPU
seconds of the command and its processes over its wall time: on a machine shared with other
jobs, what ``-j N`` can gain is bounded by the cores it gets). A CASE may also be a finding
folder of ``findings/`` (its ``program.py``).

Usage: ``python benchmarks/reduce.py [CASE ...] [--generated LOW:HIGH] [--max-tests N]
[--jobs N] [--keep]``. Times depend on the machine's load (every candidate is compiled).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
CORPUS = REPOSITORY / "tests" / "miscompilations"
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


def eqrewrite(*args: str, cwd: Path | None = None,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, **(env or {}), PYTHONPATH=os.pathsep.join(filter(None, [
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


def reproducer(case: str, work: Path) -> Path | str:
    """The reproducer folder the oracle writes for ``case`` (a corpus file name, or a
    finding folder holding ``program.py``), or why there is none."""
    finding = REPOSITORY / case
    if (finding / "program.py").is_file():
        name, original = f"{finding.name.replace('-', '_')}.py", finding / "program.py"
    else:
        name, original = case, CORPUS / case
    source = work / "src" / name
    source.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(original, source)
    repros = work / "repros" / source.stem
    found = eqrewrite("oracle", str(source), "--reproducers", str(repros), "--no-breaks",
                      "--timeout", "900")
    folders = sorted(repros.glob("repro_*"))
    if found.returncode != 1 or not folders:
        return f"no reproducer (oracle exit {found.returncode})"
    return folders[0]


def reduce_case(case: str, work: Path, max_tests: int) -> dict:
    folder = reproducer(case, work)
    if isinstance(folder, str):
        return {"case": case, "error": folder}
    started = time.perf_counter()
    done = eqrewrite("reduce", str(folder), "--format", "json", "--max-tests",
                     str(max_tests), "-q")
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1) or not done.stdout.strip():
        return {"case": case, "error": f"reduce exit {done.returncode}: {done.stderr[-500:]}"}
    return {"case": case, "wall": seconds, **json.loads(done.stdout)}


def compare_case(case: str, work: Path, max_tests: int, jobs: int) -> dict:
    """``case`` reduced serially and with ``jobs`` checking processes: throughput of both,
    and whether they reduced the same program with the same candidates."""
    folder = reproducer(case, work)
    if isinstance(folder, str):
        return {"case": case, "error": folder}
    runs = {}
    for count in (1, jobs):
        out = work / "out" / f"{Path(case).stem}-j{count}"
        load = os.getloadavg()[0]
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = eqrewrite("reduce", str(folder), "-o", str(out), "--format", "json",
                         "--max-tests", str(max_tests), "-j", str(count), "--no-verify", "-q",
                         env={"TORCHINDUCTOR_CACHE_DIR": str(work / "cache" / out.name)})
        if done.returncode not in (0, 1) or not done.stdout.strip():
            return {"case": case, "error": f"reduce -j {count} exit {done.returncode}: "
                                           f"{done.stderr[-500:]}"}
        result = json.loads(done.stdout)
        reduced = sorted((out / "reduced" / "tree").rglob("*.py"))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (used.ru_utime + used.ru_stime)
        result.update(wall=time.perf_counter() - started, load=load, cpu=cpu,
                      program=reduced[0].read_text() if reduced else "")
        runs[count] = result
    serial, parallel = runs[1], runs[jobs]
    counted = ("tried", "accepted", "repeated", "by_pass")
    same = serial["program"] == parallel["program"] and all(
        serial["candidates"][k] == parallel["candidates"][k] for k in counted)
    return {"case": case, "serial": serial, "parallel": parallel, "jobs": jobs,
            "identical": same}


def compare_row(result: dict) -> str:
    if "error" in result:
        return f"{result['case']:45} {result['error']}"
    serial, parallel = result["serial"], result["parallel"]
    rates = [run["candidates"]["per_minute"] for run in (serial, parallel)]
    ratio = rates[1] / rates[0] if rates[0] else 0.0
    return (f"{Path(result['case']).name[:45]:45} {serial['candidates']['tried']:>5} "
            f"{parallel['candidates']['tried']:>5} {rates[0]:>8.1f} {rates[1]:>8.1f} "
            f"{ratio:>6.2f}x {serial['reducing_seconds']:>7.0f} "
            f"{parallel['reducing_seconds']:>7.0f} {serial['load']:>5.1f} "
            f"{parallel['load']:>5.1f}  {'yes' if result['identical'] else 'NO':>9} "
            f"{parallel['candidates']['speculative']:>5} "
            f"{serial['cpu'] / serial['wall']:>5.2f} {parallel['cpu'] / parallel['wall']:>5.2f}")


def compare(cases: list[str], work: Path, max_tests: int, jobs: int) -> int:
    print(f"{os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.1f}; "
          f"--max-tests {max_tests}; -j 1 vs -j {jobs}")
    print(f"{'case':45} {'tried':>5} {'':>5} {'cand/min':>8} {'':>8} {'ratio':>7} "
          f"{'seconds':>7} {'':>7} {'load':>5} {'':>5}  {'identical':>9} {'ahead':>5} "
          f"{'cores':>5} {'':>5}")
    print(f"{'':45} {'-j 1':>5} {f'-j {jobs}':>5} {'-j 1':>8} {f'-j {jobs}':>8} {'':>7} "
          f"{'-j 1':>7} {f'-j {jobs}':>7} {'-j 1':>5} {f'-j {jobs}':>5}  {'':>9} {'':>5} "
          f"{'-j 1':>5} {f'-j {jobs}':>5}")
    results = []
    for case in cases:
        results.append(compare_case(case, work, max_tests, jobs))
        print(compare_row(results[-1]), flush=True)
    good = [r for r in results if "error" not in r]
    if good:
        minutes = [sum(r[k]["reducing_seconds"] for r in good) / 60 for k in ("serial",
                                                                           "parallel")]
        tried = [sum(r[k]["candidates"]["tried"] for r in good) for k in ("serial", "parallel")]
        rates = [t / m if m else 0.0 for t, m in zip(tried, minutes)]
        print(f"all: {rates[0]:.1f} vs {rates[1]:.1f} candidates/minute, "
              f"{rates[1] / rates[0] if rates[0] else 0:.2f}x; identical programs and counts "
              f"in {sum(r['identical'] for r in good)} of {len(good)}; load average at end "
              f"{os.getloadavg()[0]:.1f}")
    return 0 if good and len(good) == len(results) and all(r["identical"] for r in good) else 1


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
    parser.add_argument("--jobs", type=int, default=1,
                        help="above 1: reduce each case serially and with this many jobs, "
                             "side by side")
    parser.add_argument("--keep", action="store_true", help="keep the folders written")
    options = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="eqrewrite-reduce-bench-"))
    if options.jobs > 1:
        try:
            return compare(options.cases, work, options.max_tests, options.jobs)
        finally:
            if options.keep:
                print(f"kept {work}")
            else:
                shutil.rmtree(work, ignore_errors=True)
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
