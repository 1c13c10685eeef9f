"""Throughput of eqrewrite on a large real corpus, side by side with the tools it competes with.

The corpus is every ``*.py`` file of the installed ``torch`` package (about 2,300
files, 46 MB), copied to a temporary folder so site-packages is never touched. Timed,
in one run of this script:

* the ``ast.parse`` bound: one process parsing every file of the corpus with
  ``ast.parse`` and nothing else (every rewriter that proves its operands parses);
* eqrewrite cold: ``eqrewrite CORPUS --cache-dir EMPTY -j 2 --format json`` on a fresh
  copy, which rewrites it in place and fills the cache;
* eqrewrite warm: the identical command again, on the now rewritten and cached copy;
* ast-grep (``ast-grep-cli`` on PyPI, if installed): ``ast-grep run -p '$A + $B' -r
  'torch.add($A, $B)' -U`` on a fresh copy, rewriting every addition, unguarded;
* libcst baseline: an unguarded ``a + b -> torch.add(a, b)`` ``CSTTransformer`` run
  over the pristine corpus by a 2-process ``multiprocessing.Pool``, which parses
  every file with ``libcst.parse_module`` and writes every result to a folder.

The bound and the cold run are repeated ``--repeat`` times, interleaved (the machines
here are shared, and load hits both alike); medians are reported. Every command runs
as a subprocess, so its times include interpreter start-up and imports; the libcst
baseline runs in this process (its workers start inside the timing). Wall-clock and
CPU time (user + system of the child processes, ``resource.getrusage``) are printed,
and each as a ratio to the ``ast.parse`` bound. Targets, checked and printed as
measured: cold CPU time at most 2x the bound, a cold run at least 10x faster than the
libcst baseline, and a warm rerun under 2 s.

The script then verifies the last cold run: exit status, that rewritten files still
parse, that untouched files are byte-identical with unchanged mtimes, that the files
reported changed are exactly those that differ, and that a second
``--check --no-cache`` run finds nothing more to do.

Usage: ``python benchmarks/rewrite_throughput.py [--limit N] [--repeat N]
[--skip-baseline] [--sample N] [--workdir DIR]``; ast-grep is timed when
``ast-grep-cli`` is installed.
Exit status 1 means a verification failed; missed speed targets are reported but do
not fail the run.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import multiprocessing
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

JOBS = 2
BOUND_RATIO_TARGET = 2.0  # cold CPU time at most this many times the ast.parse bound's
COLD_SPEEDUP_TARGET = 10.0  # cold run at least this many times faster than the baseline
WARM_SECONDS_TARGET = 2.0  # warm rerun under this many seconds
EXIT_OK, EXIT_FILE_ERROR = 0, 123
MB = 1_000_000


@dataclass
class Corpus:
    """A copied set of Python files, addressed by paths relative to ``root``."""

    root: Path
    files: list[Path]
    size: int
    lines: int


@dataclass
class Timing:
    """One timed run: wall-clock and CPU seconds, exit status and eqrewrite's JSON report."""

    seconds: float
    cpu_seconds: float
    returncode: int
    report: dict = field(default_factory=dict)
    stderr: str = ""


@dataclass
class BaselineResult:
    """The libcst baseline's wall-clock and CPU time, edits made and unparsable files."""

    seconds: float
    cpu_seconds: float
    edits: int
    failures: list[tuple[str, str]]


@dataclass
class Check:
    """One verification: what was checked, whether it held, and supporting detail."""

    name: str
    ok: bool
    details: list[str] = field(default_factory=list)


# -- corpus -----------------------------------------------------------------


def torch_source_root() -> Path:
    """The installed torch package's folder, found without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def list_sources(package: Path, limit: int | None) -> list[Path]:
    """The package's ``*.py`` files relative to its parent, sorted, at most ``limit``."""
    files = sorted(p.relative_to(package.parent) for p in package.rglob("*.py") if p.is_file())
    return files[:limit] if limit is not None else files


def copy_corpus(source_root: Path, files: list[Path], destination: Path) -> Corpus:
    """Copy ``files`` from ``source_root`` to ``destination``; count bytes and lines."""
    size = lines = 0
    for relative in files:
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source_root / relative, target)
        data = target.read_bytes()
        size += len(data)
        lines += data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    return Corpus(destination, files, size, lines)


def snapshot(corpus: Corpus) -> dict[Path, tuple[int, bytes]]:
    """Each file's mtime (ns) and content, keyed by relative path."""
    return {f: ((corpus.root / f).stat().st_mtime_ns, (corpus.root / f).read_bytes())
            for f in corpus.files}


# -- eqrewrite --------------------------------------------------------------


def eqrewrite_command() -> list[str]:
    """How to start eqrewrite: ``python -m`` if possible, else its console script."""
    if importlib.util.find_spec("eqrewrite.rewriter.__main__") is not None:
        return [sys.executable, "-m", "eqrewrite.rewriter"]
    beside = Path(sys.executable).parent / "eqrewrite"
    found = str(beside) if beside.is_file() else shutil.which("eqrewrite")
    if found is None:
        sys.exit("cannot find the eqrewrite command; run 'pip install -e .' first")
    return [found]


def run_eqrewrite(args: list[str]) -> Timing:
    """Run eqrewrite with ``--format json`` and time it."""
    command = [*eqrewrite_command(), *args, "--format", "json"]
    cpu_start, start = children_cpu_seconds(), time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds, cpu_seconds = time.perf_counter() - start, children_cpu_seconds() - cpu_start
    try:
        report = json.loads(completed.stdout)
    except ValueError:
        report = {}
    return Timing(seconds, cpu_seconds, completed.returncode, report, completed.stderr)


def children_cpu_seconds() -> float:
    """User plus system CPU time of all waited-for descendants so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def relative_to_corpus(corpus: Corpus, shown: str) -> Path:
    """A path printed by eqrewrite, relative to the corpus root."""
    return Path(shown).resolve().relative_to(corpus.root.resolve())


# -- ast.parse bound and ast-grep --------------------------------------------

PARSE_ALL = """
import ast, pathlib, sys
for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.py")):
    try:
        ast.parse(path.read_bytes())
    except (SyntaxError, ValueError):
        pass
"""


def run_parse_bound(corpus: Corpus) -> Timing:
    """Time one process doing nothing but ``ast.parse`` of every file."""
    return timed([sys.executable, "-c", PARSE_ALL, str(corpus.root)])


def ast_grep_command() -> str | None:
    """The ast-grep executable, if installed (``pip install ast-grep-cli``)."""
    beside = Path(sys.executable).parent / "ast-grep"
    return str(beside) if beside.is_file() else shutil.which("ast-grep")


def run_ast_grep(command: str, corpus: Corpus) -> Timing:
    """Rewrite every ``a + b`` of ``corpus`` in place with ast-grep (unguarded)."""
    return timed([command, "run", "-p", "$A + $B", "-r", "torch.add($A, $B)", "-U",
                  "-l", "python", str(corpus.root)])


def timed(command: list[str]) -> Timing:
    """Run ``command``; its wall-clock and CPU seconds and exit status."""
    cpu_start, start = children_cpu_seconds(), time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    return Timing(time.perf_counter() - start, children_cpu_seconds() - cpu_start,
                  completed.returncode, stderr=completed.stderr)


def restore(work: Corpus, pristine: Corpus) -> None:
    """Make ``work`` an untouched copy of ``pristine`` again (mtimes included)."""
    shutil.rmtree(work.root)
    shutil.copytree(pristine.root, work.root)


# -- libcst baseline --------------------------------------------------------


class AddToTorchAdd(cst.CSTTransformer):
    """Rewrite every ``a + b`` to ``torch.add(a, b)``, with no type check at all."""

    def __init__(self) -> None:
        super().__init__()
        self.edits = 0

    def leave_BinaryOperation(self, original_node: cst.BinaryOperation,
                              updated_node: cst.BinaryOperation) -> cst.BaseExpression:
        """Replace an addition by a call; other operators are left alone."""
        if not isinstance(updated_node.operator, cst.Add):
            return updated_node
        self.edits += 1
        function = cst.Attribute(value=cst.Name("torch"), attr=cst.Name("add"))
        arguments = [cst.Arg(updated_node.left), cst.Arg(updated_node.right)]
        return cst.Call(func=function, args=arguments, lpar=updated_node.lpar,
                        rpar=updated_node.rpar)


def baseline_file(task: tuple[Path, Path]) -> tuple[str, int, str | None]:
    """Codemod one file into its destination; return (path, edits, error or None)."""
    source, destination = task
    try:
        module = cst.parse_module(source.read_bytes())
    except (cst.ParserSyntaxError, RecursionError) as error:
        return str(source), 0, (str(error).splitlines() or [type(error).__name__])[0]
    transformer = AddToTorchAdd()
    rewritten = module.visit(transformer)
    destination.parent.mkdir(parents=True, exist_ok=True)
    destination.write_bytes(rewritten.bytes)
    return str(source), transformer.edits, None


def run_baseline(corpus: Corpus, out_root: Path, processes: int) -> BaselineResult:
    """Time the libcst codemod over the corpus with a process pool, printing progress."""
    tasks = [(corpus.root / f, out_root / f) for f in corpus.files]
    edits, failures, done, step = 0, [], 0, max(1, len(tasks) // 10)
    cpu_start, start = children_cpu_seconds(), time.perf_counter()
    with multiprocessing.Pool(processes) as pool:
        for path, count, error in pool.imap_unordered(baseline_file, tasks, chunksize=4):
            edits += count
            done += 1
            if error is not None:
                failures.append((path, error))
            if done % step == 0 or done == len(tasks):
                elapsed = time.perf_counter() - start
                progress(f"  libcst baseline: {done}/{len(tasks)} files, {elapsed:.1f} s")
        pool.close()
        pool.join()  # reap the workers so that their CPU time is counted
    return BaselineResult(time.perf_counter() - start, children_cpu_seconds() - cpu_start,
                          edits, failures)


# -- verification -----------------------------------------------------------


def unparsable_originals(corpus: Corpus, pristine: Corpus, report: dict) -> set[Path]:
    """Files eqrewrite reported as errors whose original really fails ``ast.parse``."""
    return {relative for relative in error_files(corpus, report)
            if not parses_ok((pristine.root / relative).read_bytes())}


def error_files(corpus: Corpus, report: dict) -> set[Path]:
    """Files reported as errors in an eqrewrite JSON report."""
    return {relative_to_corpus(corpus, e["file"]) for e in report.get("errors", [])}


def exit_ok(corpus: Corpus, timing: Timing, legitimate: set[Path]) -> bool:
    """Exit 0, or 123 when the only failed files are ones that do not parse."""
    if not timing.report:
        return False
    if timing.returncode == EXIT_FILE_ERROR:
        return error_files(corpus, timing.report) <= legitimate
    return not timing.report.get("errors")


def check_exit(corpus: Corpus, pristine: Corpus, timing: Timing,
               legitimate: set[Path]) -> Check:
    """The cold run exits 0, or 123 only for files whose original does not parse."""
    check = Check(f"cold run: no crash (exit status {timing.returncode})",
                  timing.returncode in (EXIT_OK, EXIT_FILE_ERROR)
                  and exit_ok(corpus, timing, legitimate))
    if not timing.report:
        check.details.append("no JSON report on stdout")
        check.details += timing.stderr.strip().splitlines()[-20:]
    for error in timing.report.get("errors", []):
        relative = relative_to_corpus(corpus, error["file"])
        verdict = ("original does not parse either" if relative in legitimate
                   else "ORIGINAL PARSES: eqrewrite bug")
        check.details.append(f"{relative}:{error['line']}: {error['message']} ({verdict})")
    return check


def parses_ok(data: bytes) -> bool:
    """Whether ``ast.parse`` accepts the source."""
    try:
        ast.parse(data)
    except (SyntaxError, ValueError):
        return False
    return True


def changed_files(corpus: Corpus, report: dict) -> set[Path]:
    """Files with at least one edit in an eqrewrite JSON report."""
    return {relative_to_corpus(corpus, e["file"]) for e in report.get("edits", [])}


def verify_in_place(work: Corpus, pristine: Corpus, before: dict[Path, tuple[int, bytes]],
                    report: dict) -> list[Check]:
    """Compare the rewritten copy with the pristine one and with eqrewrite's report."""
    reported = changed_files(work, report)
    unparsable, differing, touched = [], set(), []
    for relative in work.files:
        data = (work.root / relative).read_bytes()
        mtime = (work.root / relative).stat().st_mtime_ns
        if data != (pristine.root / relative).read_bytes():
            differing.add(relative)
            if not parses_ok(data):
                unparsable.append(str(relative))
        elif relative not in reported and mtime != before[relative][0]:
            touched.append(str(relative))
    leftovers = [str(p.relative_to(work.root)) for p in work.root.rglob("*.eqrw")]
    return [
        Check(f"rewritten files re-parse with ast.parse ({len(differing)} files)",
              not unparsable, unparsable),
        Check("unchanged files byte-identical with unchanged mtime", not touched, touched),
        Check("files that differ are exactly the files reported changed",
              differing == reported,
              [f"differs but not reported: {p}" for p in sorted(differing - reported)]
              + [f"reported but identical: {p}" for p in sorted(reported - differing)]),
        Check("no temporary files left behind", not leftovers, leftovers),
    ]


def verify_warm(work: Corpus, before: dict[Path, tuple[int, bytes]], timing: Timing,
                legitimate: set[Path]) -> Check:
    """The warm run changes nothing and reports no edits."""
    summary = timing.report.get("summary", {})
    modified = [str(f) for f in work.files
                if (work.root / f).stat().st_mtime_ns != before[f][0]]
    ok = exit_ok(work, timing, legitimate) and summary.get("edits") == 0 and not modified
    return Check(f"warm run: exit {timing.returncode}, {summary.get('edits')} edits, "
                 f"{len(modified)} files modified", ok, modified)


def verify_idempotent(work: Corpus, legitimate: set[Path]) -> Check:
    """``eqrewrite --check --no-cache`` on the rewritten copy finds nothing to change."""
    timing = run_eqrewrite([str(work.root), "--check", "--no-cache", "-j", str(JOBS)])
    summary = timing.report.get("summary", {})
    details = [f"{relative_to_corpus(work, e['file'])}:{e['start']['line']}: {e['rule']}: "
               f"{e['before']!r} -> {e['after']!r}" for e in timing.report.get("edits", [])]
    details += [f"error: {relative_to_corpus(work, e['file'])}: {e['message']}"
                for e in timing.report.get("errors", [])
                if relative_to_corpus(work, e["file"]) not in legitimate]
    ok = exit_ok(work, timing, legitimate) and summary.get("changed") == 0
    return Check(f"second run is a no-op: --check exit {timing.returncode}, "
                 f"{summary.get('changed')} files would change", ok, details)


# -- reporting --------------------------------------------------------------


def progress(message: str) -> None:
    """Print a progress line to stderr."""
    print(message, file=sys.stderr, flush=True)


def median_timing(timings: list[Timing]) -> Timing:
    """The timing with the median CPU time (its wall-clock time is reported with it)."""
    return sorted(timings, key=lambda t: t.cpu_seconds)[len(timings) // 2]


def rate_row(label: str, seconds: float, cpu_seconds: float, corpus: Corpus,
             bound: Timing) -> str:
    """One table row: wall-clock and CPU seconds, MB/s, and both as ratios to the bound."""
    return (f"{label:<25} {seconds:>8.2f} {cpu_seconds:>8.2f} {corpus.size / MB / seconds:>7.1f} "
            f"{seconds / bound.seconds:>9.2f} {cpu_seconds / bound.cpu_seconds:>9.2f}")


def print_table(corpus: Corpus, bound: Timing, cold: Timing, warm: Timing,
                ast_grep: Timing | None, baseline: BaselineResult | None,
                repeat: int) -> None:
    """The timing table, with ratios to the ast.parse bound, and whether each target is met."""
    print(f"\ncorpus: {len(corpus.files)} files, {corpus.size / MB:.1f} MB, "
          f"{corpus.lines:,} lines; bound and cold: medians of {repeat} interleaved runs\n")
    print(f"{'run':<25} {'wall s':>8} {'CPU s':>8} {'MB/s':>7} {'wall/bound':>9} "
          f"{'CPU/bound':>9}")
    print(rate_row("ast.parse bound (1 proc)", bound.seconds, bound.cpu_seconds, corpus,
                   bound))
    print(rate_row(f"eqrewrite cold (-j {JOBS})", cold.seconds, cold.cpu_seconds, corpus,
                   bound))
    print(rate_row("eqrewrite warm", warm.seconds, warm.cpu_seconds, corpus, bound))
    if ast_grep is not None:
        print(rate_row("ast-grep (unguarded)", ast_grep.seconds, ast_grep.cpu_seconds,
                       corpus, bound))
    if baseline is not None:
        print(rate_row("libcst codemod (-j 2)", baseline.seconds, baseline.cpu_seconds,
                       corpus, bound))
    ratio = cold.cpu_seconds / bound.cpu_seconds
    print(f"\ntarget cold CPU <= {BOUND_RATIO_TARGET:.0f}x the ast.parse bound: "
          f"{'MET' if ratio <= BOUND_RATIO_TARGET else 'NOT MET'} ({ratio:.2f}x)")
    if ast_grep is not None:
        print(f"eqrewrite cold / ast-grep: {cold.seconds / ast_grep.seconds:.2f}x wall-clock, "
              f"{cold.cpu_seconds / ast_grep.cpu_seconds:.2f}x CPU")
    if baseline is not None:
        cold_ratio = baseline.seconds / cold.seconds
        verdict = "MET" if cold_ratio >= COLD_SPEEDUP_TARGET else "NOT MET"
        print(f"libcst baseline / eqrewrite cold: {cold_ratio:.1f}x wall-clock, "
              f"{baseline.cpu_seconds / cold.cpu_seconds:.1f}x CPU; target >= "
              f"{COLD_SPEEDUP_TARGET:.0f}x: {verdict}")
    else:
        print("libcst baseline skipped: cold-speed-up target not evaluated")
    print(f"target warm rerun < {WARM_SECONDS_TARGET:.0f} s: "
          f"{'MET' if warm.seconds < WARM_SECONDS_TARGET else 'NOT MET'} "
          f"({warm.seconds:.2f} s wall-clock)")


def load_average() -> str:
    """The 1-minute load average and the number of CPUs, for judging timing noise."""
    return f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"


def print_edits(corpus: Corpus, report: dict, sample: int) -> None:
    """Counts of edits by rule and an evenly spread sample of individual edits."""
    summary = report.get("summary", {})
    print(f"\neqrewrite cold summary: {json.dumps(summary)}")
    edits = report.get("edits", [])
    for rule, count in Counter(e["rule"] for e in edits).most_common():
        print(f"  {count:6}  {rule}")
    if not edits or sample <= 0:
        return
    print(f"\nsample of {min(sample, len(edits))} edits:")
    stride = max(1, len(edits) // sample)
    for edit in edits[::stride][:sample]:
        where = f"{relative_to_corpus(corpus, edit['file'])}:{edit['start']['line']}"
        print(f"  {where}  [{edit['rule']}]\n      {_one_line(edit['before'])}"
              f"\n   -> {_one_line(edit['after'])}")


def _one_line(code: str, width: int = 150) -> str:
    """Collapse whitespace and shorten ``code`` for display."""
    flat = " ".join(code.split())
    return flat if len(flat) <= width else flat[:width - 3] + "..."


def print_checks(checks: list[Check], max_details: int = 25) -> bool:
    """Print each verification with its details; return whether all held."""
    print("\nverification:")
    for check in checks:
        print(f"  [{'ok' if check.ok else 'FAIL'}] {check.name}")
        for line in check.details[:max_details]:
            print(f"         {line}")
        if len(check.details) > max_details:
            print(f"         ... and {len(check.details) - max_details} more")
    return all(c.ok for c in checks)


# -- main -------------------------------------------------------------------


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, metavar="N",
                        help="use only the first N files of the corpus (a quick smoke run)")
    parser.add_argument("--repeat", type=int, default=3, metavar="N",
                        help="interleaved runs of the bound and the cold run (default: 3)")
    parser.add_argument("--skip-baseline", action="store_true",
                        help="do not run the (slow) libcst baseline")
    parser.add_argument("--sample", type=int, default=20, metavar="N",
                        help="how many individual edits to print (default: 20)")
    parser.add_argument("--workdir", type=Path, metavar="DIR",
                        help="work in DIR (must not exist) and keep it, with the cold "
                             "run's JSON report, instead of a temporary folder")
    return parser.parse_args(argv)


def benchmark(options: argparse.Namespace, workdir: Path) -> bool:
    """Build the corpus, time every run, verify, print; return whether all checks held."""
    package = torch_source_root()
    files = list_sources(package, options.limit)
    progress(f"copying {len(files)} files from {package} to {workdir} ...")
    pristine = copy_corpus(package.parent, files, workdir / "pristine")
    work = copy_corpus(package.parent, files, workdir / "inplace")
    cache_dir = workdir / "cache"
    arguments = [str(work.root), "--cache-dir", str(cache_dir), "-j", str(JOBS)]

    bounds, colds = [], []
    for index in range(options.repeat):
        if index:  # each cold run gets a pristine copy and an empty cache
            restore(work, pristine)
            shutil.rmtree(cache_dir, ignore_errors=True)
        progress(f"ast.parse bound, run {index + 1}/{options.repeat} ({load_average()}) ...")
        bounds.append(run_parse_bound(pristine))
        progress(f"  {bounds[-1].seconds:.2f} s, {bounds[-1].cpu_seconds:.2f} CPU s")
        before = snapshot(work)
        progress(f"eqrewrite cold run {index + 1}/{options.repeat} ...")
        colds.append(run_eqrewrite(arguments))
        progress(f"  {colds[-1].seconds:.2f} s, {colds[-1].cpu_seconds:.2f} CPU s, "
                 f"exit {colds[-1].returncode}")
    cold = colds[-1]  # the run whose output is on disk: the one verified
    after_cold = snapshot(work)
    (workdir / "eqrewrite_cold.json").write_text(json.dumps(cold.report, indent=1))
    progress("eqrewrite warm run ...")
    warm = run_eqrewrite(arguments)
    progress(f"  {warm.seconds:.2f} s, exit {warm.returncode}")

    ast_grep = None
    command = ast_grep_command()
    if command is None:
        progress("ast-grep not installed (pip install ast-grep-cli): skipped")
    else:
        progress("ast-grep over a fresh copy ...")
        grep_copy = Corpus(workdir / "astgrep", pristine.files, pristine.size, pristine.lines)
        shutil.copytree(pristine.root, grep_copy.root)
        ast_grep = run_ast_grep(command, grep_copy)
        progress(f"  {ast_grep.seconds:.2f} s, exit {ast_grep.returncode}")

    baseline = None
    if not options.skip_baseline:
        progress(f"libcst baseline over {len(files)} files with {JOBS} processes ...")
        baseline = run_baseline(pristine, workdir / "libcst_out", JOBS)
        progress(f"  {baseline.seconds:.2f} s, {baseline.edits} edits, "
                 f"{len(baseline.failures)} files libcst could not parse")

    progress(f"verifying ({load_average()}) ...")
    legitimate = unparsable_originals(work, pristine, cold.report)
    checks = [check_exit(work, pristine, cold, legitimate),
              *verify_in_place(work, pristine, before, cold.report),
              verify_warm(work, after_cold, warm, legitimate),
              verify_idempotent(work, legitimate)]

    print(f"\n{load_average()} at the end; other load makes wall-clock times slower")
    print_table(pristine, median_timing(bounds), median_timing(colds), warm, ast_grep,
                baseline, options.repeat)
    if baseline is not None:
        print(f"libcst baseline: {baseline.edits} unguarded edits, "
              f"{len(baseline.failures)} parse failures")
        for path, error in baseline.failures:
            print(f"  {Path(path).relative_to(pristine.root)}: {error}")
    print_edits(work, cold.report, options.sample)
    return print_checks(checks)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit 1 if a verification failed (missed targets do not fail)."""
    options = parse_arguments(argv)
    if options.workdir is not None:
        if options.workdir.exists():
            sys.exit(f"--workdir {options.workdir} already exists")
        options.workdir.mkdir(parents=True)
        ok = benchmark(options, options.workdir.resolve())
        print(f"\nwork folder kept: {options.workdir}")
    else:
        with tempfile.TemporaryDirectory(prefix="eqrewrite-bench-") as folder:
            ok = benchmark(options, Path(folder).resolve())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
