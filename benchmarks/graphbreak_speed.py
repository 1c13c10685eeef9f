"""The graph-break pack's speed on a real package: cold, warm, after edits, as a hook, audited.

The corpus is a copy of a package (default: the installed transformers; the figures in
docs/benchmarks/graph-break-pack-speed.md are transformers 4.57.6's sources) inside a
throwaway project folder (a ``pyproject.toml`` beside it, so the cache lives in
``project/.eqrewrite_cache`` as it would in a user's
repository). Timed, in one run of this script, every command a subprocess run from the
project folder:

* the ``ast.parse`` bound: one process parsing every file of the copy and nothing else;
* cold: ``eqrewrite PACKAGE --rules graphbreaks --check --format json -j 2`` with an empty
  cache (the default graph-break command: ``traced`` scope included);
* warm: the same again, nothing changed;
* after a comment is appended to one model file (no summary changes: the stored traced
  scope answers), and after a function is appended to it (its summary changes: the scope
  is solved again from the cached summaries);
* the ``eqrewrite-check`` pre-commit hook with the graph-break pack
  (``eqrewrite --check --rules graphbreaks F1 F2 F3``, as pre-commit calls it), given three
  model files just edited (a function appended to each), with the cache warm;
* ``eqrewrite audit PACKAGE --format json``, cold then warm, and the same with
  ``--scope traced``.

Beside them, the parts of a cold run no implementation of this design can skip, each in a
process of its own: the call-graph summaries of every file (the ``traced`` scope needs the
whole package's before any file is rewritten: one parse and one walk per file), and the
LibCST parse of the statements around the cold run's edits (edits are applied through LibCST,
statement by statement, so that comments and formatting stay; whole files were measured here
before: 3.8-4.7x the bound where the statements take 0.05x); with the rewrite's own parse of
every file (a second ``ast`` parse: the summaries' trees are not kept across the run) they
make the floor a cold run cannot go below, printed as a ratio to the bound. A second floor
leaves that parse out: what a design keeping every file's tree from the call graph to the
rewrite could reach (1.46 GB of trees for transformers 4.57.6), before any rule is tried.

Each run's report must list the same edits and notes as the cold run's (the edits in the
files appended to keep their lines: text is only added at the end). Wall-clock and CPU
time (user + system of the child processes) are printed with the machine's load average;
CPU ratios are to the bound measured in the same run.

Usage: ``python benchmarks/graphbreak_speed.py [--tree PATH] [--workdir DIR] [-j N]``.
Exit status 1 when a report differs; missed targets are printed, not failed.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from rewrite_throughput import PARSE_ALL  # the same bound, measured the same way

EDITED = ["models/llama/modeling_llama.py", "models/mistral/modeling_mistral.py",
          "models/qwen2/modeling_qwen2.py"]
TARGETS = {"cold CPU / bound": 3.0, "warm wall s": 2.0, "one file edited wall s": 5.0,
           "hook wall s": 3.0, "audit warm wall s": 5.0}


def _installed_transformers() -> Path:
    """The installed transformers package's folder (never imported), or exit with a hint."""
    import importlib.util

    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.origin:
        sys.exit("error: transformers is not installed; pass --tree PATH "
                 "(e.g. pip install transformers==4.57.6)")
    return Path(spec.origin).parent


@dataclass
class Timing:
    """One timed command: wall and CPU seconds, exit status, stdout."""

    wall: float
    cpu: float
    returncode: int
    stdout: str


def children_cpu() -> float:
    """User plus system CPU time of the waited-for children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], cwd: Path) -> Timing:
    """Run ``command`` in ``cwd`` and time it."""
    cpu, start = children_cpu(), time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return Timing(time.perf_counter() - start, children_cpu() - cpu, done.returncode,
                  done.stdout)


def eqrewrite() -> list[str]:
    """How to start eqrewrite from this interpreter."""
    return [sys.executable, "-m", "eqrewrite.rewriter"]


def outcome(stdout: str, skip: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """The edits and notes of a ``--format json`` report, sorted, without lines of the
    files in ``skip`` (their text moved) but with their rules."""
    document = json.loads(stdout)
    records = []
    for key in ("edits", "notes"):
        rows = []
        for row in document[key]:
            if row["file"].endswith(skip):
                row = {"file": row["file"], "rule": row["rule"]}
            rows.append(json.dumps(row, sort_keys=True))
        records.append(sorted(rows))
    return records[0], records[1]


SUMMARIES_ALL = """
import pathlib, sys
from eqrewrite.rewriter.analysis.modulesummary import summarize
for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.py")):
    summarize(str(path), path.read_text(encoding="utf-8", errors="replace"))
"""

# What the apply stage parses with LibCST: the innermost statement around each edit (a
# "unit", rewriting/layout.py), not the whole file (see edited_units).
LIBCST_UNITS = """
import json, sys, libcst
for unit in json.load(open(sys.argv[1])):
    libcst.parse_module(unit)
"""


def edited_units(stdout: str, root: Path) -> list[str]:
    """The innermost statement around each edit of a ``--check --format json`` report, as
    text (dedented): approximately what the apply stage hands LibCST."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for edit in json.loads(stdout)["edits"]:
        spans.setdefault(edit["file"], []).append((edit["start"]["line"], edit["end"]["line"]))
    units = []
    for name, edits in spans.items():
        text = (root / name).read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        statements = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.stmt)]
        found = set()
        for first, last in edits:
            around = [n for n in statements
                      if n.lineno <= first and (n.end_lineno or n.lineno) >= last]
            if around:
                inner = max(around, key=lambda n: n.lineno)
                found.add((inner.lineno, inner.end_lineno or inner.lineno))
        units += [textwrap.dedent("".join(lines[a - 1:b])) for a, b in sorted(found)]
    return units


def changed_files(stdout: str) -> list[str]:
    """The files a ``--check --format json`` report says would be rewritten."""
    return sorted({row["file"] for row in json.loads(stdout)["edits"]})


def load() -> str:
    """The load averages, as ``uptime`` prints them."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def append(path: Path, text: str) -> None:
    """Add ``text`` at the end of ``path`` (every earlier line keeps its place)."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)


def main() -> None:
    """Run the measurements and print them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", type=Path, default=None,
                        help="the package to copy (default: the installed transformers)")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("-j", "--jobs", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="eqrw-gb-", dir=args.workdir))
    try:
        sys.exit(measure(args.tree or _installed_transformers(), work, args.jobs))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(tree: Path, project: Path, jobs: int) -> int:
    """Every measurement over a copy of ``tree`` in ``project``; the exit status."""
    (project / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
    package = project / tree.name
    shutil.copytree(tree, package, symlinks=True)
    rows: list[tuple[str, Timing]] = []
    failures: list[str] = []
    check = [*eqrewrite(), tree.name, "--rules", "graphbreaks", "--check", "--format", "json",
             "-q", "-j", str(jobs)]
    print(f"{len(list(package.rglob('*.py')))} files; {load()}", flush=True)
    bound = timed([sys.executable, "-c", PARSE_ALL, tree.name], project)
    rows.append(("ast.parse bound", bound))
    cold = timed(check, project)
    rows.append(("cold (empty cache)", cold))
    summaries = timed([sys.executable, "-c", SUMMARIES_ALL, tree.name], project)
    rows.append(("floor: call-graph summaries, every file", summaries))
    changed = changed_files(cold.stdout)
    units = edited_units(cold.stdout, project)
    (project / "edited-units.json").write_text(json.dumps(units))
    libcst_parse = timed([sys.executable, "-c", LIBCST_UNITS, "edited-units.json"], project)
    rows.append((f"floor: LibCST of {len(units)} edited units ({len(changed)} files)",
                 libcst_parse))

    def again(label: str, command: list[str], skip: tuple[str, ...] = ()) -> Timing:
        timing = timed(command, project)
        rows.append((label, timing))
        if outcome(timing.stdout, skip) != outcome(cold.stdout, skip):
            failures.append(f"{label}: the report differs from the cold run's")
        print(f"  {label}: {timing.wall:.2f} s wall; {load()}", flush=True)
        return timing

    warm = again("warm, nothing changed", check)
    model = package / EDITED[0]
    append(model, "# a comment\n")
    commented = again("one model file: comment appended", check)
    append(model, "\n\ndef _bench_added():\n    return 1\n")
    edited = again("one model file: function appended", check, (EDITED[0],))
    for name in EDITED:
        append(package / name, "\n\ndef _bench_hook_edit():\n    return 2\n")
    hook = timed([*eqrewrite(), "--check", "--rules", "graphbreaks", "--format", "json",
                  "-q", *[f"{tree.name}/{name}" for name in EDITED]], project)
    rows.append(("eqrewrite-check hook, 3 edited files", hook))
    hook_outcome = outcome(hook.stdout, tuple(EDITED))
    expected = [[r for r in part if any(json.loads(r)["file"].endswith(n) for n in EDITED)]
                for part in outcome(cold.stdout, tuple(EDITED))]
    if list(hook_outcome) != expected:
        failures.append("hook: its report differs from the cold run's for those files")
    audit = [*eqrewrite(), "audit", tree.name, "--format", "json", "-q", "--exit-zero",
             "-j", str(jobs)]
    rows.append(("audit cold", timed(audit, project)))
    audit_warm = timed(audit, project)
    rows.append(("audit warm", audit_warm))
    rows.append(("audit --scope traced cold", timed([*audit, "--scope", "traced"], project)))
    rows.append(("audit --scope traced warm", timed([*audit, "--scope", "traced"], project)))
    print(f"\n{'command':42} {'wall s':>8} {'CPU s':>8} {'CPU/bound':>10}")
    for label, timing in rows:
        print(f"{label:42} {timing.wall:8.2f} {timing.cpu:8.2f} "
              f"{timing.cpu / bound.cpu:10.2f}")
    once = (summaries.cpu + libcst_parse.cpu) / bound.cpu
    print(f"\nfloor of a cold run (summaries + a second parse of every file + LibCST of "
          f"the edited units): {once + 1:.2f} x bound; with each file parsed once (trees "
          f"kept): {once:.2f} x; cold run: {cold.cpu / bound.cpu:.2f} x")
    measured = {"cold CPU / bound": cold.cpu / bound.cpu, "warm wall s": warm.wall,
                "one file edited wall s": max(commented.wall, edited.wall),
                "hook wall s": hook.wall, "audit warm wall s": audit_warm.wall}
    print(f"\n{load()}")
    for name, target in TARGETS.items():
        verdict = "met" if measured[name] <= target else "MISSED"
        print(f"target {name} <= {target}: {measured[name]:.2f} {verdict}")
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    main()
