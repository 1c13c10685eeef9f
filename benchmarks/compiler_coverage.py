"""Compiler coverage: statements of torch's Python package that a campaign's programs reach.

The measure of the study this project grew from (its operator rewrites of LLM-written
modules reached 27 % of torch overall). For the programs of ``--seeds`` it prints, side by
side, statements covered / total and % for all of torch, ``torch/_inductor`` and
``torch/_dynamo``, at three points of one run:

* **start**: ``import torch`` plus the oracle worker's Inductor warm-up (what any campaign
  executes before its first program);
* **(a) generator**: every generated program validated as the campaign's oracle does,
  without the rewrite: original eager twice, original compiled (Inductor, CPU), and the
  triage runs (float64 reference, perturbed inputs) when they differ;
* **(b) + equivalence pack**: the same, plus each program's rewritten form (the
  ``equivalences`` pack, safe rules) validated the same way, for the programs the pack
  changed; and how many statements only (b) reaches.

How it measures what the campaign really executes. A campaign runs each program in an
oracle worker process (``oracle/harness/pool.py``), a spawned child of a spawned job process. The
worker's edit-coverage tracer (``observe.LineTracer``, on for every campaign run) calls
``sys.settrace`` and then ``sys.settrace(None)``, which would switch coverage.py's tracer off
for good inside a worker measured with ``COVERAGE_PROCESS_START``. So this script runs the
oracle's worker code in-process instead (``oracle/campaign/inprocess.py``):
``Harness.validate`` unchanged, with its worker replaced by one that hands each request to
a ``worker.Session`` in this process (the same ``Session.handle`` the worker process calls),
and no edit-coverage files (the rewritten form is validated as its own tree, so none are
needed). Inductor compiles in-process (``TORCHINDUCTOR_COMPILE_THREADS=1``), so the Python
of its C++ build steps, which a campaign runs in Inductor's compile subprocesses, is
measured too; Inductor's subprocess-pool management is then not. Programs are generated and
rewritten with coverage paused (the generator's own eager runs are the job's, not the
programs'). Seeds are split over ``--jobs`` processes, each measuring its share with
coverage's Python API (``source=[torch]``); their data files are combined per point, with
an empty Inductor cache shared by all (cold compiles, as in a campaign over new programs).
There is no per-run timeout in-process: generated programs are valid and short.

coverage.py slows Python several times over (each cold compile takes 15-40 s under it), so
the default is 30 seeds on 2 jobs, about 10-15 minutes on a loaded 2-core machine.

Programs are generated with ``--compile-settings varied`` (the default: each seed's header
says how it is compiled, ``oracle/generate/compiling.py``) or ``fixed`` (every program
compiled alike: the figures of releases before the variation). The seeds whose verdict is
not ``passed`` are listed with their header, to check each candidate by hand.

Usage: ``python benchmarks/compiler_coverage.py [--seeds 0:30] [--jobs 2] [--keep DIR]
[--compile-settings varied|fixed]``
(``pip install -e '.[bench]'`` installs coverage).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

STUDY_FIGURE = 27.0   # % of torch overall: the study's operator rewrites of LLM programs
POINTS = ("start", "generator", "pack")
SCOPES = (("torch", ""), ("torch/_inductor", "_inductor/"), ("torch/_dynamo", "_dynamo/"))
TORCH = Path(importlib.util.find_spec("torch").origin).parent  # type: ignore[union-attr, arg-type]


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0:30", help="START:STOP (default 0:30)")
    parser.add_argument("--jobs", type=int, default=2, help="measuring processes (default 2)")
    parser.add_argument("--keep", type=Path, help="keep the coverage data files here")
    parser.add_argument("--compile-settings", choices=("varied", "fixed"), default="varied",
                        help="vary how each program is compiled (default) or not")
    parser.add_argument("--shard", help=argparse.SUPPRESS)   # internal: seeds of one process
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args()


# -- one measuring process ----------------------------------------------------------------------

def _programs(seeds: range, compile_settings: str) -> list[tuple[Any, str | None]]:
    """Each seed's program and its rewrite by the equivalence pack (None: unchanged)."""
    from eqrewrite.oracle.generate import GenConfig, GenerationError, generate
    from eqrewrite.rewriter.api import RewriteOptions, load_packs, rewrite_text, select_rules

    options = RewriteOptions()
    rules = select_rules([r for pack in load_packs(["equivalences"]) for r in pack.rules],
                         options)
    config, programs = GenConfig(compile_settings=compile_settings), []
    for seed in seeds:
        with contextlib.suppress(GenerationError):  # counted by the campaign, not here
            program = generate(seed, config)
            rewrite = rewrite_text(program.source, rules, options)
            programs.append((program, rewrite.text if rewrite.changed else None))
    return programs


def _validate_all(folder: Path, sources: list[tuple[str, str]]) -> tuple[Counter[str], dict]:
    """Validate each ``(filename, text)`` as a tree of its own, as the campaign's oracle
    validates a program (two-way: eager twice, compiled, triage); the verdicts counted, and
    each file whose verdict is not ``passed`` with it."""
    from eqrewrite.oracle.campaign.inprocess import in_process
    from eqrewrite.oracle.harness import harness
    from eqrewrite.oracle.harness.targets import find_target
    from eqrewrite.oracle.judging.settings import CompileSettings

    verdicts: Counter[str] = Counter()
    unpassed: dict[str, str] = {}
    folder.mkdir(parents=True, exist_ok=True)
    _forget_programs(folder.parent)
    options = harness.HarnessOptions(CompileSettings(), {"backend": "inductor"}, count_breaks=False)
    with in_process():
        runner = harness.Harness(folder, None, options)
    for filename, text in sources:
        for old in folder.glob("*.py"):
            old.unlink()
        path = folder / filename
        path.write_text(text, encoding="utf-8")
        target = find_target(folder, path)
        if target is None:
            raise RuntimeError(f"{path}: no target found")
        verdict = runner.validate(target).verdict.value
        verdicts[verdict] += 1
        if verdict != "passed":
            unpassed[filename] = verdict
    return verdicts, unpassed


def _forget_programs(work: Path) -> None:
    """Drop the modules of earlier phases: a rewritten program has its original's module
    name, and a session purges only the modules of its own folder (a campaign's one worker
    serves both trees, so there the purge covers both)."""
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(work)):
            del sys.modules[name]


def measure(shard: str, data: Path, compile_settings: str) -> None:
    """Measure the seeds ``START:STOP`` of one process; data files ``data.<point>``."""
    import coverage

    start, _, stop = shard.partition(":")
    cov = coverage.Coverage(source=[str(TORCH)], data_file=None)
    cov.start()
    import torch  # noqa: F401  (measured: every campaign worker imports it)
    from eqrewrite.oracle.judging import worker

    worker._warm_up()
    cov.stop()
    _save(cov, data, "start")
    programs = _programs(range(int(start), int(stop)), compile_settings)
    work = Path(tempfile.mkdtemp(prefix="eqrewrite-cov-"))
    phases = {"generator": [(p.filename, p.source) for p, _ in programs],
              "pack": [(p.filename, text) for p, text in programs if text is not None]}
    report: dict[str, Any] = {"programs": len(programs), "rewritten": len(phases["pack"])}
    for point, sources in phases.items():
        began = time.perf_counter()
        cov.start()
        verdicts, unpassed = _validate_all(work / point, sources)
        cov.stop()
        _save(cov, data, point)
        report[point] = {"verdicts": dict(verdicts), "seconds": time.perf_counter() - began,
                         "unpassed": {name: [verdict, _header(programs, name)]
                                      for name, verdict in unpassed.items()}}
    shutil.rmtree(work, ignore_errors=True)
    Path(f"{data}.json").write_text(json.dumps(report))
    os._exit(0)  # skip interpreter teardown with torch loaded


def _header(programs: list[tuple[Any, str | None]], filename: str) -> str:
    """The compile settings of the program written as ``filename``."""
    program = next(p for p, _ in programs if p.filename == filename)
    return " ".join(f"{k}={v}" for k, v in program.settings.items())


def _save(cov: Any, data: Path, point: str) -> None:
    """The data so far (cumulative) to ``data.<point>``."""
    import coverage

    saved = coverage.CoverageData(basename=f"{data}.{point}")
    saved.update(cov.get_data())
    saved.write()


# -- the parent: shards, then the figures -------------------------------------------------------

def _shards(seeds: str, jobs: int) -> list[str]:
    start, _, stop = seeds.partition(":")
    values = list(range(int(start), int(stop)))
    size = -(-len(values) // max(1, jobs))
    return [f"{values[i]}:{values[min(i + size, len(values)) - 1] + 1}"
            for i in range(0, len(values), size)]


def run_shards(arguments: argparse.Namespace, folder: Path) -> tuple[list[dict], float]:
    """Start one measuring process per shard; their reports and the wall seconds."""
    env = dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS="1",
               TORCHINDUCTOR_CACHE_DIR=str(folder / "inductor-cache"))
    began, processes = time.perf_counter(), []
    for index, shard in enumerate(_shards(arguments.seeds, arguments.jobs)):
        command = [sys.executable, __file__, "--shard", shard, "--data", str(folder / f"s{index}"),
                   "--compile-settings", arguments.compile_settings]
        processes.append(subprocess.Popen(command, env=env))
    for process in processes:
        if process.wait() != 0:
            sys.exit(f"a measuring process failed (status {process.returncode})")
    reports = [json.loads(Path(f"{folder}/s{i}.json").read_text()) for i in range(len(processes))]
    return reports, time.perf_counter() - began


def covered(folder: Path, shards: int, point: str) -> tuple[dict[str, set[int]], dict[str, int]]:
    """Statements covered per torch file at ``point``, all shards combined, as coverage.py's
    own report counts them (multi-line statements by their first line); and the number of
    statements of every torch file, imported or not."""
    import coverage

    combined = coverage.CoverageData(basename=str(folder / f"all.{point}"))
    for index in range(shards):
        part = coverage.CoverageData(basename=str(folder / f"s{index}.{point}"))
        part.read()
        combined.update(part)
    combined.write()
    cov = coverage.Coverage(data_file=str(folder / f"all.{point}"), source=[str(TORCH)])
    cov.load()
    result, counts = {}, {}
    for path in sorted(TORCH.rglob("*.py")):
        with contextlib.suppress(Exception):  # a file coverage cannot parse counts as none
            _, statements, _, missing, _ = cov.analysis2(str(path))
            name = str(path.relative_to(TORCH))
            result[name], counts[name] = set(statements) - set(missing), len(statements)
    return result, counts


def _figures(statements: dict[str, int], points: dict[str, dict[str, set[int]]]) -> None:
    header = f"{'scope':<17} {'statements':>10}   " + "   ".join(
        f"{name:>24}" for name in ("start (import+warm-up)", "(a) generator",
                                   "(b) + equivalence pack")) + f"   {'only (b)':>9}"
    print(header)
    for label, prefix in SCOPES:
        files = [f for f in statements if f.startswith(prefix)]
        total = sum(statements[f] for f in files)
        cells = []
        for point in POINTS:
            count = sum(len(points[point].get(f, ())) for f in files)
            cells.append(f"{count:>8,} ({100 * count / total:5.1f} %)".rjust(24))
        only = sum(len(points["pack"].get(f, set()) - points["generator"].get(f, set()))
                   for f in files)
        print(f"{label:<17} {total:>10,}   " + "   ".join(cells) + f"   {only:>9,}")
    print(f"the study's figure: {STUDY_FIGURE:.0f} % of torch overall")


def main() -> int:
    arguments = _arguments()
    if arguments.shard:
        measure(arguments.shard, arguments.data, arguments.compile_settings)
        return 0
    folder = arguments.keep or Path(tempfile.mkdtemp(prefix="eqrewrite-bench-cov-"))
    folder.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    reports, wall = run_shards(arguments, folder)
    analysed = {point: covered(folder, len(reports), point) for point in POINTS}
    points = {point: lines for point, (lines, _) in analysed.items()}
    statements = analysed["start"][1]
    programs = sum(r["programs"] for r in reports)
    print(f"torch {TORCH}; seeds {arguments.seeds}, {programs} programs "
          f"({sum(r['rewritten'] for r in reports)} changed by the pack), compile settings "
          f"{arguments.compile_settings}, {arguments.jobs} "
          f"processes, {wall:.0f} s measuring; load average {load:.1f} at start, "
          f"{os.getloadavg()[0]:.1f} at end; {os.cpu_count()} cores")
    for point in ("generator", "pack"):
        verdicts: Counter[str] = Counter()
        for report in reports:
            verdicts.update(report[point]["verdicts"])
        seconds = sum(r[point]["seconds"] for r in reports)
        print(f"  {point:<10} verdicts {dict(verdicts)}, {seconds:.0f} s under coverage")
        for report in reports:
            for name, (verdict, header) in sorted(report[point]["unpassed"].items()):
                print(f"    {name}: {verdict} [{header or 'no settings'}]")
    _figures(statements, points)
    if arguments.keep is None:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
