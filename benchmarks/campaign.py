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

Usage: ``python benchmarks/campaign.py [--seeds 0:40] [--jobs 2] [--budget 15m]
[--backend inductor] [--keep DIR]``. Exit status 0 when the warm rate reaches the target.
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


def main() -> int:
    arguments = _arguments()
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
