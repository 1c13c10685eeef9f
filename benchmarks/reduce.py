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
judged ahead and dropped, the serial run's Inductor confirmations and the kept candidates
they undid (findings screened with ``aot_eager``), the load average before each run, and
the cores the run used (CPU seconds of the command and its processes over its wall time: on
a machine shared with other jobs, what ``-j N`` can gain is bounded by the cores it gets).
A CASE may also be a finding folder of ``findings/`` (its ``program.py``).

With ``--baseline REV`` as well, each case is first reduced by the reducer of commit REV of
this repository (a git worktree of it, imported ahead of the installed package, as
``baseline.py`` arranges; its own ``eqrewrite oracle`` writes its reproducer), serially,
under the same ``--max-tests``, and the rows compare this reducer's throughput, serial and
parallel, with that one's. The minutes of reduction are timed the same way for every run,
from outside: from the progress line that says the unchanged program reproduces (start-up
and baseline done) to the command's end (``--no-verify``).

Usage: ``python benchmarks/reduce.py [CASE ...] [--generated LOW:HIGH] [--max-tests N]
[--jobs N [--baseline REV]] [--keep]``. Times depend on the machine's load (every candidate
is compiled).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from baseline import SetupError, add_worktree, make_links, remove_worktree

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


def eqrewrite(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
              package: Path | None = None) -> subprocess.CompletedProcess:
    """``eqrewrite ARGS`` in a fresh interpreter; ``package``: a folder holding another
    build's ``eqrewrite`` package, imported ahead of the installed one."""
    return subprocess.run([sys.executable, "-m", "eqrewrite.rewriter", *args],
                          capture_output=True, text=True, env=_environment(cwd, env, package))


def _environment(cwd: Path | None, env: dict[str, str] | None,
                 package: Path | None) -> dict[str, str]:
    return dict(os.environ, **(env or {}), PYTHONPATH=os.pathsep.join(filter(None, [
        str(package or ""), str(cwd or ""), os.environ.get("PYTHONPATH", "")])))


def timed_reduce(args: list[str], env: dict[str, str],
                 package: Path | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """``eqrewrite reduce ARGS`` (with its progress lines) and the seconds from the line
    saying the unchanged program reproduces to the end: the same clock for every build."""
    command = [sys.executable, "-m", "eqrewrite.rewriter", "reduce", *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=_environment(None, env, package))
    errors: list[str] = []
    reproduced: list[float] = []

    def read_errors() -> None:
        for line in process.stderr:  # type: ignore[union-attr]
            errors.append(line)
            if line.startswith("reduce: reproduces:") and not reproduced:
                reproduced.append(time.perf_counter())
    reader = threading.Thread(target=read_errors)
    reader.start()
    out = process.stdout.read()  # type: ignore[union-attr]
    process.wait()
    reader.join()
    ended = time.perf_counter()
    done = subprocess.CompletedProcess(command, process.returncode, out, "".join(errors))
    return done, ended - reproduced[0] if reproduced else 0.0


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


def reproducer(case: str, work: Path, package: Path | None = None) -> Path | str:
    """The reproducer folder the oracle writes for ``case`` (a corpus file name, or a
    finding folder holding ``program.py``), or why there is none; ``package``: the build
    whose oracle writes it (default: the installed one)."""
    finding = REPOSITORY / case
    if (finding / "program.py").is_file():
        name, original = f"{finding.name.replace('-', '_')}.py", finding / "program.py"
    else:
        name, original = case, CORPUS / case
    source = work / "src" / name
    source.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(original, source)
    repros = work / ("repros-baseline" if package else "repros") / source.stem
    found = eqrewrite("oracle", str(source), "--reproducers", str(repros), "--no-breaks",
                      "--timeout", "900", package=package)
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


def measured_run(folder: Path, out: Path, work: Path, max_tests: int, jobs: int,
                 package: Path | None = None) -> dict:
    """One reduction of ``folder`` into ``out`` with its figures: the JSON report, the
    minutes of reduction (``timed_reduce``), load before, CPU seconds, the program."""
    load = os.getloadavg()[0]
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    args = [str(folder), "-o", str(out), "--format", "json", "--max-tests", str(max_tests),
            "--no-verify"] + (["-j", str(jobs)] if package is None else [])
    done, reducing = timed_reduce(
        args, {"TORCHINDUCTOR_CACHE_DIR": str(work / "cache" / out.name)}, package)
    if done.returncode not in (0, 1) or not done.stdout.strip() or not reducing:
        return {"error": f"reduce exit {done.returncode}: {done.stderr[-500:]}"}
    result = json.loads(done.stdout)
    reduced = sorted((out / "reduced" / "tree").rglob("*.py"))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (used.ru_utime + used.ru_stime)
    return {**result, "wall": time.perf_counter() - started, "reducing": reducing,
            "per_minute": 60 * result["candidates"]["tried"] / reducing, "load": load,
            "cpu": cpu, "program": reduced[0].read_text() if reduced else ""}


def compare_case(case: str, work: Path, max_tests: int, jobs: int,
                 package: Path | None) -> dict:
    """``case`` reduced serially and with ``jobs`` checking processes (and, with a baseline
    ``package``, by that build serially first): throughput of each, and whether the serial
    and parallel runs reduced the same program with the same candidates."""
    folder = reproducer(case, work)
    if isinstance(folder, str):
        return {"case": case, "error": folder}
    runs = {}
    if package is not None:
        old = reproducer(case, work, package)
        if isinstance(old, str):
            return {"case": case, "error": f"baseline: {old}"}
        runs["baseline"] = measured_run(old, work / "out" / f"{Path(case).stem}-baseline",
                                        work, max_tests, 1, package)
    for name, count in (("serial", 1), ("parallel", jobs)):
        runs[name] = measured_run(folder, work / "out" / f"{Path(case).stem}-j{count}", work,
                                  max_tests, count)
    failed = [f"{name}: {run['error']}" for name, run in runs.items() if "error" in run]
    if failed:
        return {"case": case, "error": "; ".join(failed)}
    serial, parallel = runs["serial"], runs["parallel"]
    counted = ("tried", "accepted", "repeated", "by_pass", "confirmations", "reverted")
    same = serial["program"] == parallel["program"] and all(
        serial["candidates"].get(k) == parallel["candidates"].get(k) for k in counted)
    return {"case": case, **runs, "jobs": jobs, "identical": same}


COLUMNS = ("baseline", "serial", "parallel")


def compare_row(result: dict) -> str:
    if "error" in result:
        return f"{result['case']:40} {result['error']}"
    runs = [result[k] for k in COLUMNS if k in result]
    rates = [run["per_minute"] for run in runs]
    ratios = [rates[-1] / rates[-2]] + ([rates[-1] / rates[0]] if len(runs) == 3 else [])
    return (f"{Path(result['case']).name[:40]:40} "
            + " ".join(f"{run['candidates']['tried']:>5}" for run in runs)
            + " " + " ".join(f"{rate:>7.1f}" for rate in rates)
            + " " + " ".join(f"{ratio:>5.2f}x" for ratio in ratios)
            + " " + " ".join(f"{run['after']['statements']:>4}" for run in runs)
            + " " + " ".join(f"{run['reducing']:>5.0f}" for run in runs)
            + " " + " ".join(f"{run['load']:>4.1f}" for run in runs)
            + " " + " ".join(f"{run['cpu'] / run['wall']:>4.2f}" for run in runs)
            + f"  {'yes' if result['identical'] else 'NO':>3} "
              f"{result['parallel']['candidates']['speculative']:>5} "
              f"{result['serial']['candidates'].get('confirmations', 0):>7} "
              f"{result['serial']['candidates'].get('reverted', 0):>6}")


def compare(cases: list[str], work: Path, max_tests: int, jobs: int,
            baseline: str | None) -> int:
    tree = add_worktree(baseline, work / "baseline-tree")[0] if baseline else None
    package = make_links(tree, work / "baseline-package") if tree else None
    names = ["base", "-j 1", f"-j {jobs}"] if baseline else ["-j 1", f"-j {jobs}"]
    print(f"{os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.1f}; "
          f"--max-tests {max_tests}; " + " vs ".join(names)
          + (f" (base: the reducer of {baseline}, serial)" if baseline else ""))
    ratios = [f"{names[-1]}/{names[-2]}"] + ([f"{names[-1]}/base"] if baseline else [])
    print(f"{'case':40} " + " ".join(f"{'tried':>5}" for _ in names) + " "
          + " ".join(f"{'c/min':>7}" for _ in names) + " "
          + " ".join(f"{r:>6}" for r in ratios) + " "
          + " ".join(f"{'stmts':>4}" for _ in names) + " "
          + " ".join(f"{'secs':>5}" for _ in names) + " "
          + " ".join(f"{'load':>4}" for _ in names) + " "
          + " ".join(f"{'core':>4}" for _ in names) + "  same ahead confirm undone")
    print(f"{'':40} " + " ".join(f"{n:>5}" for n in names) + " "
          + " ".join(f"{n:>7}" for n in names))
    results = []
    try:
        for case in cases:
            results.append(compare_case(case, work, max_tests, jobs, package))
            print(compare_row(results[-1]), flush=True)
    finally:
        if tree:
            with contextlib.suppress(SetupError):
                remove_worktree(tree)
    good = [r for r in results if "error" not in r]
    if good:
        kinds = [k for k in COLUMNS if k in good[0]]
        rates = {}
        for kind in kinds:
            minutes = sum(r[kind]["reducing"] for r in good) / 60
            rates[kind] = sum(r[kind]["candidates"]["tried"] for r in good) / minutes
        print("all: " + ", ".join(f"{kind} {rate:.1f}" for kind, rate in rates.items())
              + " candidates/minute; parallel/serial "
              f"{rates['parallel'] / rates['serial']:.2f}x"
              + (f", parallel/baseline {rates['parallel'] / rates['baseline']:.2f}x, "
                 f"serial/baseline {rates['serial'] / rates['baseline']:.2f}x"
                 if "baseline" in rates else "")
              + f"; identical programs and counts in {sum(r['identical'] for r in good)} "
              f"of {len(good)}; load average at end {os.getloadavg()[0]:.1f}")
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
    parser.add_argument("--baseline", metavar="REV",
                        help="with --jobs: also reduce each case with the reducer of this "
                             "commit, serially, and compare")
    parser.add_argument("--keep", action="store_true", help="keep the folders written")
    options = parser.parse_args(argv)
    if options.baseline and options.jobs < 2:
        parser.error("--baseline compares with the serial and parallel runs: give --jobs N")
    work = Path(tempfile.mkdtemp(prefix="eqrewrite-reduce-bench-"))
    if options.jobs > 1:
        try:
            return compare(options.cases, work, options.max_tests, options.jobs,
                           options.baseline)
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
