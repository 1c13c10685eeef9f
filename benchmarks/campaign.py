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

``--baseline REV`` instead shows that a revision of this repository and the working tree
find the same things: the same seeds run with the same settings, one campaign after the
other, each side's own code imported (``baseline.py``: a worktree of REV, and a copy of the
working tree's package folders taken at the start, so edits made meanwhile change nothing),
each with an empty Inductor cache of its own and ``PYTHONHASHSEED=0``, and no time budget
unless ``--budget`` is given. Then, per seed: the outcome class, verdict, signature, known
issue, excused rule, kinds, ops and error of the journal, the rules that edited it, the
finding or excused folder it belongs to, and, for the folder's first seed, its program,
rewritten program and ``finding.json`` (less the campaign's settings and the oracle's
record). Times, worker pids and paths are not compared. It prints a table of the seeds that
differ, or "identical: N of N seeds"; a seed that timed out on one side only is listed as
timing-dependent, not as a difference.

Usage: ``python benchmarks/campaign.py [--seeds 0:40] [--jobs 2] [--budget 15m]
[--backend inductor] [--keep DIR] [--phases | --baseline REV]``. Exit status 0 when the warm
rate reaches the target (always 0 with ``--phases``); with ``--baseline``, 0 when every seed
compares identical (timing-dependent ones aside), 1 when any differs or is missing on a
side, 2 when the comparison cannot be made (a bad revision, code imported from the wrong
checkout).
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

from baseline import Checkout, SetupError, read_imports

TARGET_PER_MINUTE = 10.0


def _arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0:40", help="START:STOP (default 0:40)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--budget", help="time budget (default 15m; none with --baseline)")
    parser.add_argument("--backend", default="inductor")
    parser.add_argument("--keep", type=Path, help="campaign folder to keep (default: temporary;"
                        " with --baseline, a folder for both campaigns and the checkouts)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--phases", action="store_true",
                      help="profile CPU seconds per phase in this process instead")
    mode.add_argument("--baseline", metavar="REV",
                      help="run the same seeds with this revision too and compare per seed")
    arguments = parser.parse_args(argv)
    if arguments.budget is None and not arguments.baseline:
        arguments.budget = "15m"
    return arguments


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(arguments: argparse.Namespace, out: Path | None = None, side: Checkout | None = None,
        ) -> tuple[dict, list[dict], float, float]:
    """Run the campaign (into ``out``, default ``--keep`` or a temporary folder; with
    ``side``, that checkout's command, its imports recorded and checked); its summary,
    journal, wall seconds and CPU seconds."""
    scratch = Path(tempfile.mkdtemp(prefix="eqrewrite-bench-campaign-"))
    out = out or arguments.keep or scratch / "campaign"
    cache = {"TORCHINDUCTOR_CACHE_DIR": str(scratch / "inductor-cache")}
    imports = scratch / "imports.json"
    words = ["campaign", "--seeds", arguments.seeds, "-j", str(arguments.jobs),
             *(["--time-budget", arguments.budget] if arguments.budget else []),
             "--backend", arguments.backend, "-o", str(out), "--no-progress"]
    if side is None:
        env = dict(os.environ, **cache)
        command = [sys.executable, "-m", "eqrewrite.rewriter", *words]
    else:
        env = side.environment(imports, PYTHONHASHSEED="0", **cache)
        command = side.command(*words)
    print("$", " ".join(command[2:]), flush=True)
    cpu, started = _children_cpu(), time.perf_counter()
    completed = subprocess.run(command, env=env, stderr=subprocess.PIPE, text=True)
    wall, cpu = time.perf_counter() - started, _children_cpu() - cpu
    try:
        if completed.returncode not in (0, 1):
            sys.exit(f"campaign failed ({completed.returncode}):\n{completed.stderr[-3000:]}")
        if side is not None:
            print("  " + side.check_imports(read_imports(imports),
                                            f" (exit {completed.returncode})"), flush=True)
        summary = json.loads((out / "summary.json").read_text())
        journal = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]
    finally:  # the Inductor cache (and the campaign, unless it is kept elsewhere)
        shutil.rmtree(scratch, ignore_errors=True)
    return summary, journal, wall, cpu


def warm_rate(journal: list[dict]) -> float:
    """Programs per minute from the first finished program to the last."""
    times = sorted(r["at"] for r in journal if "at" in r)
    if len(times) < 2 or times[-1] <= times[0]:
        return 0.0
    return 60 * (len(times) - 1) / (times[-1] - times[0])


# -- --baseline: the same findings from two revisions ------------------------------------

# What a seed's journal line must keep (not ``seconds``, ``at`` or ``pid``: times and the
# worker that ran it).
SEED_KEYS = ("class", "verdict", "rule", "signature", "known", "confidence", "kinds",
             "signature_ops", "error", "edits", "ops", "features", "focus", "attempts")
# What a finding folder's ``finding.json`` must keep (not the campaign's settings, the torch
# version or the oracle's record, whose details hold paths and timings).
FOLDER_KEYS = ("class", "signature", "verdict", "rule", "confidence", "tree", "kinds",
               "signature_ops", "error", "ops", "features", "focus", "edits", "seeds",
               "first_seed", "file", "reproducer", "compile_settings")
FOLDER_FILES = ("program.py", "rewritten.py")
TIMING_DEPENDENT = "timeout"  # a class that says how long a run took, not what it did


def seed_outcomes(folder: Path) -> dict[int, dict]:
    """Per seed of the campaign in ``folder``, what must not change between revisions: the
    journal's ``SEED_KEYS``, ``folder`` (``findings/NAME`` or ``excused/NAME``, the folder
    listing the seed) and, for a folder's first seed, ``content`` (``FOLDER_KEYS`` and the
    programs); a seed asked but not journaled has ``missing`` (the job's error, if any)."""
    summary = json.loads((folder / "summary.json").read_text())
    outcomes: dict[int, dict] = {}
    first, last = summary["seeds"]["first"], summary["seeds"]["last"]
    failures = {f["seed"]: f["error"] for f in summary.get("job_failures", [])}
    for seed in range(first, last + 1) if first is not None else ():
        outcomes[seed] = {"missing": failures.get(seed, "not run")}
    for line in (folder / "journal.jsonl").read_text().splitlines():
        try:
            result = json.loads(line)
        except json.JSONDecodeError:  # cut short by an interruption
            continue
        outcomes[result["seed"]] = {k: result[k] for k in SEED_KEYS if k in result}
    for parent in ("findings", "excused"):
        for finding in sorted((folder / parent).glob("*/finding.json")):
            if finding.parent.name.startswith("."):
                continue
            record = json.loads(finding.read_text())
            name = f"{parent}/{finding.parent.name}"
            for seed in record.get("seeds", []):
                outcomes.setdefault(seed, {})["folder"] = name
            content = {k: record.get(k) for k in FOLDER_KEYS}
            for file in FOLDER_FILES:
                path = finding.parent / file
                content[file] = path.read_text() if path.exists() else None
            outcomes.setdefault(record.get("first_seed"), {})["content"] = content
    return outcomes


def differing(old: dict, new: dict) -> list[str]:
    """The keys whose values differ (``content`` as ``content.KEY``)."""
    keys = sorted(set(old) | set(new), key=lambda k: (k == "content", k))
    found = [k for k in keys if k != "content" and old.get(k) != new.get(k)]
    before, after = old.get("content") or {}, new.get("content") or {}
    if ("content" in old) != ("content" in new):
        found.append("content")
    else:
        found += [f"content.{k}" for k in sorted(set(before) | set(after))
                  if before.get(k) != after.get(k)]
    return found


def compare_campaigns(old: Path, new: Path) -> dict:
    """Seed by seed: ``seeds`` (all), ``identical``, ``differ`` (seed -> differing keys),
    ``timing`` (seed -> differing keys, a timeout on one side) and ``missing`` (seed ->
    which side lacks it and why)."""
    before, after = seed_outcomes(old), seed_outcomes(new)
    report: dict = {"seeds": sorted(set(before) | set(after)), "identical": [], "differ": {},
                    "timing": {}, "missing": {}, "before": before, "after": after}
    for seed in report["seeds"]:
        a, b = before.get(seed, {"missing": "not asked"}), after.get(seed,
                                                                  {"missing": "not asked"})
        if "missing" in a or "missing" in b:
            report["missing"][seed] = "; ".join(
                f"{side}: {outcome['missing']}" for side, outcome in (("baseline", a),
                                                                      ("current", b))
                if "missing" in outcome)
            continue
        keys = differing(a, b)
        if not keys:
            report["identical"].append(seed)
        elif TIMING_DEPENDENT in (a.get("class"), b.get("class")):
            report["timing"][seed] = keys
        else:
            report["differ"][seed] = keys
    return report


def _short(outcome: dict) -> str:
    if "missing" in outcome:
        return f"missing ({outcome['missing'][:40]})"
    signature = outcome.get("signature")
    return f"{outcome.get('class', '?')}{' ' + signature if signature else ''}"


def _value(value: object, width: int = 70) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[:width - 3] + "..."


def comparison_text(report: dict, baseline: str, current: str) -> str:
    """The table of seeds that differ (then each difference's values), the timing-dependent
    and missing seeds, and the verdict line."""
    before, after = report["before"], report["after"]
    total = len(report["seeds"])
    lines = []
    odd = sorted({**report["differ"], **report["timing"], **report["missing"]})
    if odd:
        lines.append(f"{'seed':>5}  {'baseline ' + baseline:<40} {'current ' + current:<40} "
                     "differs in")
        for seed in odd:
            a, b = before.get(seed, {"missing": "not asked"}), after.get(
                seed, {"missing": "not asked"})
            what = (", ".join(report["differ"].get(seed) or report["timing"].get(seed) or [])
                    or "missing on a side")
            if seed in report["timing"]:
                what += " (timing-dependent: a timeout on one side)"
            lines.append(f"{seed:>5}  {_short(a):<40} {_short(b):<40} {what}")
        for seed in sorted(report["differ"]):
            for key in report["differ"][seed]:
                parent, _, child = key.partition(".")
                old = (before[seed].get(parent) or {}).get(child) if child else \
                    before[seed].get(key)
                new = (after[seed].get(parent) or {}).get(child) if child else \
                    after[seed].get(key)
                lines.append(f"  seed {seed} {key}: {_value(old)}")
                lines.append(f"  {'':>{len(str(seed)) + 5}} {'':>{len(key)}}  -> {_value(new)}")
    differ, timing, missing = report["differ"], report["timing"], report["missing"]
    if not differ and not missing:
        verdict = f"identical: {len(report['identical'])} of {total} seeds"
        if timing:
            verdict += (f" ({len(timing)} more timing-dependent: {sorted(timing)} timed out on "
                        "one side only, not counted as differences)")
    else:
        verdict = (f"DIFFERENT: {len(differ)} of {total} seeds differ"
                   + (f", {len(missing)} missing on a side" if missing else "")
                   + (f", {len(timing)} timing-dependent" if timing else "")
                   + f"; identical: {len(report['identical'])} of {total} seeds")
    return "\n".join([*lines, verdict])


def same_findings(report: dict) -> bool:
    """No seed differs or is missing (a timing-dependent one is neither)."""
    return not report["differ"] and not report["missing"]


def _side_line(name: str, label: str, summary: dict, journal: list[dict], wall: float) -> str:
    programs = summary["seeds"]["this_run"]
    return (f"{name} ({label}): {programs} programs in {wall:.0f} s, "
            f"{60 * programs / wall if wall else 0:.1f}/min overall, {warm_rate(journal):.1f} "
            f"warm; classes {json.dumps(summary['classes'])}; {len(summary['findings'])} "
            f"unique findings, {sum(summary['excused'].values())} excused")


def compare_with_baseline(arguments: argparse.Namespace) -> int:
    """``--baseline REV``: the campaign of REV, then that of the working tree (a copy taken
    now), the same seeds and settings; the comparison printed. Exit status as documented."""
    work = arguments.keep or Path(tempfile.mkdtemp(prefix="eqrewrite-bench-campaign-base-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    print(f"cores {os.cpu_count()}, load average {os.getloadavg()[0]:.1f} at start; "
          f"seeds {arguments.seeds}, {arguments.jobs} jobs, backend {arguments.backend}, "
          f"budget {arguments.budget or 'none'}", flush=True)
    try:
        with Checkout(arguments.baseline, work / "checkouts", "baseline") as old, \
                Checkout(None, work / "checkouts", "current") as new:
            for side in (old, new):
                summary, journal, wall, _ = run(arguments, work / side.name, side)
                print(_side_line(side.name, side.label, summary, journal, wall), flush=True)
        report = compare_campaigns(work / "baseline", work / "current")
        print(f"load average {os.getloadavg()[0]:.1f} at end; "
              f"{time.perf_counter() - started:.0f} s in all")
        print(comparison_text(report, old.label, "working tree"))
        return 0 if same_findings(report) else 1
    except SetupError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    finally:
        if arguments.keep is None:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}")


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


def main(argv: list[str] | None = None) -> int:
    arguments = _arguments(argv)
    if arguments.phases:
        return profile_phases(arguments)
    if arguments.baseline:
        return compare_with_baseline(arguments)
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
