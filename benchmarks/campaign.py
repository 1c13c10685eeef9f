"""Campaign throughput: generated programs validated four ways per minute, with Inductor.

Runs the real command, ``eqrewrite campaign --seeds S:S+N -j JOBS --backend inductor -o
TMP`` (generate, rewrite with the equivalence pack, original eager twice, rewritten eager,
both compiled), with an empty Inductor cache of its own (cold compiles, as a campaign over
new programs has), and prints from the summary and the journal:

* programs per minute over the whole run (worker start-up included) and warm (from the
  first finished program to the last), against the target of 10 per minute;
* the generator's validity rate (valid programs of drafted candidates) and op coverage
  (table ops used of all);
* the classes of outcome, unique findings, and findings per CPU-hour (CPU seconds of every
  process of the campaign: jobs, oracle workers, Inductor's compilers);
* the CPU seconds per program, and the rate they would allow on idle cores (an estimate:
  on a shared machine the wall-clock rate measures the share of the cores the campaign got);
* the load average at start and end: above the CPU count, other processes share the cores.

``--phases`` instead profiles where the CPU time of the campaign's programs goes: the
seeds run one after another in this process, exactly as a job runs them (``job.py``), with
the oracle's worker in-process (``oracle/campaign/inprocess.py``) and Inductor compiling
in-process (``TORCHINDUCTOR_COMPILE_THREADS=1``), so that every CPU second is this process's
or its C++ compiler's. It prints CPU seconds per phase: imports, the worker's warm-up,
generation, rewriting, eager runs, compiled runs split into Dynamo tracing with AOT
autograd, Inductor's Python, the C++ compiler and the rest (running the compiled code,
backward, observing), triage runs, and the comparison and classification in the job.
Dynamo's and Inductor's shares come from torch's own compile timers (wall time, which
in-process and single-threaded is CPU time up to waits on the C++ compiler).

Usage: ``python benchmarks/campaign.py [--seeds 0:40] [--jobs 2] [--budget 15m]
[--backend inductor] [--keep DIR] [--phases]``. Exit status 0 when the warm rate reaches
the target (always 0 with ``--phases``).
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

TARGET_PER_MINUTE = 10.0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0:40", help="START:STOP (default 0:40)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--budget", default="15m", help="time budget (default 15m)")
    parser.add_argument("--backend", default="inductor")
    parser.add_argument("--keep", type=Path, help="campaign folder to keep (default: temporary)")
    parser.add_argument("--phases", action="store_true",
                        help="profile CPU seconds per phase in this process instead")
    return parser.parse_args()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(arguments: argparse.Namespace) -> tuple[dict, list[dict], float, float]:
    """Run the campaign; its summary, journal, wall seconds and CPU seconds."""
    scratch = Path(tempfile.mkdtemp(prefix="eqrewrite-bench-campaign-"))
    out = arguments.keep or scratch / "campaign"
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(scratch / "inductor-cache"))
    command = [sys.executable, "-m", "eqrewrite.rewriter", "campaign", "--seeds",
               arguments.seeds, "-j", str(arguments.jobs), "--time-budget", arguments.budget,
               "--backend", arguments.backend, "-o", str(out), "--no-progress"]
    print("$", " ".join(command[2:]), flush=True)
    cpu, started = _children_cpu(), time.perf_counter()
    completed = subprocess.run(command, env=env, stderr=subprocess.PIPE, text=True)
    wall, cpu = time.perf_counter() - started, _children_cpu() - cpu
    if completed.returncode not in (0, 1):
        sys.exit(f"campaign failed ({completed.returncode}):\n{completed.stderr[-3000:]}")
    summary = json.loads((out / "summary.json").read_text())
    journal = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]
    if arguments.keep is None:
        shutil.rmtree(scratch, ignore_errors=True)
    return summary, journal, wall, cpu


def warm_rate(journal: list[dict]) -> float:
    """Programs per minute from the first finished program to the last."""
    times = sorted(r["at"] for r in journal if "at" in r)
    if len(times) < 2 or times[-1] <= times[0]:
        return 0.0
    return 60 * (len(times) - 1) / (times[-1] - times[0])


def _cpu() -> tuple[float, float]:
    """CPU seconds of this process and of its finished children (the C++ compiler)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time(), children.ru_utime + children.ru_stime


class _Phases:
    """CPU seconds accumulated per phase."""

    def __init__(self) -> None:
        self.own: dict[str, float] = {}
        self.children: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    def timed(self, phase: str, call):  # noqa: ANN001, ANN201 - any callable, its result
        own, children = _cpu()
        try:
            return call()
        finally:
            after = _cpu()
            self.own[phase] = self.own.get(phase, 0.0) + after[0] - own
            self.children[phase] = self.children.get(phase, 0.0) + after[1] - children
            self.counts[phase] = self.counts.get(phase, 0) + 1

    def wrap(self, owner: object, name: str, phase: str) -> None:
        """Time every call of ``owner.name`` as ``phase``."""
        original = getattr(owner, name)
        setattr(owner, name, lambda *a, **k: self.timed(phase, lambda: original(*a, **k)))


def _request_phase(request: object) -> str:
    variant = getattr(request, "variant", None)
    name = getattr(variant, "value", "other")
    if name == "eager" and getattr(request, "tree", "original") != "original":
        return "eager runs"  # the rewritten tree's eager run
    return {"eager": "eager runs", "compiled": "compiled runs"}.get(name, "triage runs")


def profile_phases(arguments: argparse.Namespace) -> int:
    """Run the seeds as a job does, in this process; print CPU seconds per phase."""
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    scratch = Path(tempfile.mkdtemp(prefix="eqrewrite-bench-phases-"))
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(scratch / "inductor-cache")
    phases = _Phases()
    started = time.perf_counter()

    def imports():  # noqa: ANN202
        import eqrewrite.oracle.campaign.job  # noqa: F401
        import eqrewrite.oracle.generate  # noqa: F401
        import eqrewrite.rewriter.api  # noqa: F401
        import torch  # noqa: F401

    phases.timed("imports", imports)
    import eqrewrite.oracle.generate as generator
    import eqrewrite.rewriter.api as api
    from eqrewrite.oracle.campaign import job
    from eqrewrite.oracle.campaign.inprocess import InProcessWorker, in_process
    from eqrewrite.oracle.judging import worker

    phases.timed("warm-up (once per worker)", worker._warm_up)
    spec = job.JobSpec(settings={"backend": arguments.backend}, work_root=str(scratch))
    with in_process():
        state = phases.timed("job set-up (once per job)", lambda: job._job(spec))
    InProcessWorker.observer = lambda request, call: phases.timed(_request_phase(request), call)
    phases.wrap(generator, "generate", "generation")
    phases.wrap(api, "rewrite_text", "rewrite")
    start, _, stop = arguments.seeds.partition(":")
    classes: dict[str, int] = {}
    for seed in range(int(start), int(stop)):
        result = phases.timed("per program (all)", lambda s=seed: job._validate(state, s))
        classes[result["class"]] = classes.get(result["class"], 0) + 1
    InProcessWorker.observer = None
    _print_phases(phases, classes, time.perf_counter() - started)
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


def _compile_split() -> dict[str, float]:
    """Dynamo (with AOT autograd) and Inductor's Python, from torch's compile timers."""
    from torch._dynamo.utils import compilation_time_metrics as metrics

    def total(name: str) -> float:
        return sum(metrics.get(name, []))

    forward = total("compile_fx.<locals>.fw_compiler_base")
    backward = total("compile_fx.<locals>.bw_compiler")
    return {"dynamo": total("_compile.compile_inner") - forward,
            "inductor": forward + backward - total("compile_file")}


def _print_phases(phases: _Phases, classes: dict[str, int], wall: float) -> None:
    programs = sum(classes.values())
    split = _compile_split()
    print(f"{programs} programs in one process, {wall:.0f} s wall; load average "
          f"{os.getloadavg()[0]:.1f} ({os.cpu_count()} cores); classes {classes}")
    print(f"{'phase':<34}{'calls':>6}{'CPU s':>9}{'per program':>13}")
    rows = ["imports", "warm-up (once per worker)", "job set-up (once per job)", "generation",
            "rewrite", "eager runs", "compiled runs", "triage runs"]
    for phase in rows:
        if phase not in phases.counts:
            continue
        cpu = phases.own[phase] + phases.children[phase]
        print(f"{phase:<34}{phases.counts[phase]:>6}{cpu:>9.1f}{cpu / max(1, programs):>13.2f}")
        if phase == "compiled runs":
            compiler = phases.children[phase]
            rest = phases.own[phase] - split["dynamo"] - split["inductor"]
            for label, value in (("Dynamo tracing + AOT autograd", split["dynamo"]),
                                 ("Inductor (Python)", split["inductor"]),
                                 ("C++ compiler (child processes)", compiler),
                                 ("running, backward, observing", rest)):
                print(f"  {label:<32}{'':>6}{value:>9.1f}{value / max(1, programs):>13.2f}")
    total = phases.own["per program (all)"] + phases.children["per program (all)"]
    inner = sum(phases.own[p] + phases.children[p] for p in rows[3:] if p in phases.own)
    print(f"{'job: comparing, classifying':<34}{'':>6}{total - inner:>9.1f}"
          f"{(total - inner) / max(1, programs):>13.2f}")
    print(f"{'all programs':<34}{programs:>6}{total:>9.1f}{total / max(1, programs):>13.2f}")
    from torch._dynamo.utils import counters

    inductor, aot = counters["inductor"], counters["aot_autograd"]
    print(f"Inductor FX graph cache: {inductor['fxgraph_cache_hit']} hits, "
          f"{inductor['fxgraph_cache_miss']} misses; AOT autograd cache: "
          f"{aot['autograd_cache_hit']} hits, {aot['autograd_cache_miss']} misses")


def main() -> int:
    arguments = _arguments()
    if arguments.phases:
        return profile_phases(arguments)
    from eqrewrite.oracle.generate import default_table

    load_before = os.getloadavg()
    summary, journal, wall, cpu = run(arguments)
    load_after = os.getloadavg()
    table_ops = len(default_table().ops)
    programs = summary["seeds"]["this_run"]
    warm = warm_rate(journal)
    generation = summary["generation"]
    findings = len(summary["findings"])
    print(f"cores {os.cpu_count()}, load average {load_before[0]:.1f} at start, "
          f"{load_after[0]:.1f} at end; torch {summary['context']['torch']}, "
          f"backend {arguments.backend}, {arguments.jobs} jobs")
    print(f"programs          {programs} in {wall:.0f} s (stopped: {summary['stopped_by']})")
    print(f"programs/min      {60 * programs / wall:.1f} overall (start-up included), "
          f"{warm:.1f} warm   target {TARGET_PER_MINUTE:.0f}   "
          f"ratio {warm / TARGET_PER_MINUTE:.2f}x")
    if programs and cpu:
        per_program = cpu / programs
        print(f"CPU per program   {per_program:.1f} s (every process of the campaign) -> "
              f"{60 * (os.cpu_count() or 1) / per_program:.1f}/min if the cores were idle "
              f"(an estimate, not a measurement)")
    print(f"validity rate     {generation['validity_rate']:.1%} ({generation['programs']} valid "
          f"of {generation['drafted']} drafted)")
    print(f"op coverage       {summary['op_coverage']['ops_used']} of {table_ops} table ops "
          f"({summary['op_coverage']['ops_used'] / table_ops:.0%})")
    print(f"rewritten         {summary['rewritten']} of {programs} programs changed by the pack")
    print(f"classes           {json.dumps(summary['classes'])}")
    print(f"findings          {findings} unique ({len(summary['known'])} known issues matched); "
          f"CPU {cpu / 3600:.3f} h -> {findings / (cpu / 3600) if cpu else 0:.1f} "
          f"findings per CPU-hour")
    for finding in summary["findings"]:
        print(f"  {finding['class']:<26} seeds {finding['seeds'][:5]} ops {finding['ops'][:6]} "
              f"{finding['kinds'] or finding['error'][:60]}")
    return 0 if warm >= TARGET_PER_MINUTE else 1


if __name__ == "__main__":
    sys.exit(main())
