"""Rewrite identity: the rewriter of a baseline revision and of the working tree, same output.

A refactoring of the rewriter (folders renamed, helper code moved) must leave every rewrite
as it was. This script runs the command line of a baseline revision of this repository and
that of the working tree (or of ``--current REV``) on the same inputs and compares what they
print, byte for byte:

* the baseline is checked out with ``git worktree add --detach`` (default
  ``/tmp/eqrw-base-<sha>``; removed at the end unless ``--keep-worktree``; a clean checkout
  of the same commit already there is used as it is). The working tree's ``rewriter/``,
  ``oracle/`` and ``rules/`` are copied once at the start, so that edits others make while
  the script runs cannot change the current side between runs;
* each side runs as ``python -m eqrewrite.rewriter`` (through ``runpy``) with a folder first
  on ``PYTHONPATH`` that holds ``eqrewrite/rewriter``, ``eqrewrite/oracle`` and
  ``eqrewrite/rules``, links into that side's checkout (``baseline.py``): the editable
  install's finder comes after the path, so the side's own code and packaged packs are
  imported. Every run records
  the file of each ``eqrewrite`` module it imported; a module from outside the side's
  checkout stops the script (exit 2);
* the targets (default: the installed transformers, 5.24.0 at ``/tmp/tf524`` when it is
  there, and torch's package folder) are copied, ``*.py`` files only, into a temporary
  folder outside any git checkout: the installed libraries are never written to, and no
  ``.gitignore`` above them (torch lies under this repository's ignored ``.venv``) or
  project configuration changes what is scanned;
* every shipped rule pack (``rules/*.yaml`` of either side) runs on its own, and again with
  ``--unsafe`` when it has unsafe rules: ``eqrewrite TARGET --rules PACK --diff --no-cache
  -j N``, the cache off so both sides really rewrite, ``PYTHONHASHSEED=0`` for both;
* compared: the diffs (stdout), the report (stderr: a line per changed, skipped or failed
  file, notes, the summary) and the exit status. Only absolute folders are replaced by
  placeholders, on both sides alike: the copy of the target (``<corpus>``), the side's link
  folder and package folders (in tracebacks); nothing else is stripped (the text report
  holds no timings).

It prints, per target and run: files scanned, files changed, edits, diff bytes, whether
the two sides are identical and each side's wall and CPU time (the sides alternate which
goes first; the machines here are shared, so compare the two columns, not runs of the
script); for a difference, the first file whose diffs differ and a short unified diff of
the two diffs (or the end of a side's traceback). Exit status: 0 all identical, 1 some
output differs, 2 the comparison could not be made (a bad revision, code imported from the
wrong checkout). ``--save DIR`` keeps every diff and report.

    python benchmarks/rewrite_identity.py --baseline c040a23
    python benchmarks/rewrite_identity.py --baseline c040a23 --current HEAD --pack default
    python benchmarks/rewrite_identity.py --baseline HEAD --target nn=PATH/TO/torch/nn
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from baseline import (
    PACKAGE_FOLDERS,
    ROOT,
    SetupError,
    add_worktree,
    command,
    environment,
    git,
    make_links,
    read_imports,
    remove_worktree,
    snapshot,
)
from baseline import (
    check_imports as check_origin,
)

TF524 = Path("/tmp/tf524")  # transformers 5.24.0, installed with pip --target
JOBS = 2
TRACEBACK = "Traceback (most recent call last):"

# One file's diff starts with these two lines (rewriter/running/runner.py, _diff).
HEADER = re.compile(r"^--- (?P<path>[^\n]*)\t\(original\)\n\+\+\+ (?P=path)\t\(rewritten\)\n",
                    re.MULTILINE)
COUNTS = {"changed": r"(\d+) files? would be rewritten", "edits": r"rewritten \((\d+) edits?\)",
          "unchanged": r"(\d+) files? would be left unchanged",
          "generated": r"(\d+) @generated skipped", "skipped": r"(\d+) files? skipped",
          "failed": r"(\d+) files? failed"}

@dataclass(frozen=True)
class Side:
    """One rewriter: the checkout whose folders it runs, and its link folder."""

    name: str  # "baseline" or "current"
    label: str  # what it is: a revision or "working tree"
    checkout: Path
    links: Path


@dataclass(frozen=True)
class Job:
    """One rewrite command: a pack, with or without its unsafe rules."""

    pack: str
    unsafe: bool
    note: str = ""  # e.g. "only in current"

    @property
    def label(self) -> str:
        return self.pack + (" --unsafe" if self.unsafe else "")

    def arguments(self, jobs: int) -> list[str]:
        return ["--rules", self.pack, "--diff", "--no-cache", "-j", str(jobs),
                *(["--unsafe"] if self.unsafe else [])]


@dataclass(frozen=True)
class Target:
    name: str
    source: Path  # the installed folder (or file) it was copied from
    copy: Path  # what the rewriter is given


@dataclass
class Output:
    """What one side printed for one target and job, placeholders in."""

    diff: bytes
    report: str
    status: int
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    modules: dict[str, str] = field(default_factory=dict)

    def counts(self) -> dict[str, int] | None:
        """The report's summary line as numbers (None when it has none)."""
        lines = [line for line in self.report.splitlines() if "would be left unchanged" in line]
        if not lines:
            return None
        found = {key: re.search(pattern, lines[-1]) for key, pattern in COUNTS.items()}
        counts = {key: int(match.group(1)) if match else 0 for key, match in found.items()}
        counts["files"] = sum(counts[k] for k in ("changed", "unchanged", "generated",
                                                  "skipped", "failed"))
        return counts


@dataclass(frozen=True)
class Verdict:
    identical: bool
    what: list[str]  # which parts differ: diff, report, exit status
    first_file: str | None = None  # the first file whose diffs differ
    detail: str = ""  # a short unified diff of the two sides' texts


# -- comparing -----------------------------------------------------------------------------


def split_diff(text: str) -> dict[str, str]:
    """The ``--diff`` output file by file, in the order printed: path -> that file's diff."""
    starts = list(HEADER.finditer(text))
    chunks: dict[str, str] = {}
    if starts and starts[0].start() > 0:
        chunks["(before the first file)"] = text[:starts[0].start()]
    elif not starts and text:
        chunks["(no file header)"] = text
    for match, following in zip(starts, [*starts[1:], None]):
        end = following.start() if following is not None else len(text)
        chunks[match.group("path")] = text[match.start():end]
    return chunks


def short_diff(old: str, new: str, old_name: str, new_name: str, max_lines: int = 40) -> str:
    """A unified diff of two texts, cut after ``max_lines`` lines."""
    lines = list(difflib.unified_diff(old.splitlines(keepends=True),
                                      new.splitlines(keepends=True), old_name, new_name, n=2))
    lines = [line if line.endswith("\n") else line + "\n" for line in lines]
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"... ({len(lines) - max_lines} more lines)\n"]
    return "".join(lines)


def compare(baseline: Output, current: Output, max_lines: int = 40) -> Verdict:
    """Whether the two sides printed the same, and if not, where they first differ."""
    what = [name for name, a, b in (("diff", baseline.diff, current.diff),
                                    ("report", baseline.report, current.report),
                                    ("exit status", baseline.status, current.status))
            if a != b]
    if not what:
        return Verdict(True, [])
    crashes = [f"{name} crashed ({output.status}): ...\n{_traceback_tail(output.report)}"
               for name, output in (("baseline", baseline), ("current", current))
               if TRACEBACK in output.report]
    if crashes:
        return Verdict(False, what, None, "\n".join(crashes))
    if "diff" in what:
        old = split_diff(baseline.diff.decode("utf-8", "surrogateescape"))
        new = split_diff(current.diff.decode("utf-8", "surrogateescape"))
        for path in _union(old, new):
            if old.get(path) != new.get(path):
                detail = short_diff(old.get(path, ""), new.get(path, ""),
                                    f"baseline: {path}", f"current: {path}", max_lines)
                return Verdict(False, what, path, detail)
    if "report" in what:
        return Verdict(False, what, None, short_diff(baseline.report, current.report,
                                                     "baseline report", "current report",
                                                     max_lines))
    return Verdict(False, what, None, f"exit status {baseline.status} -> {current.status}\n")


def _traceback_tail(report: str, lines: int = 6) -> str:
    """The last lines of the last traceback in a report."""
    tail = report[report.rindex(TRACEBACK):].rstrip("\n").splitlines()[-lines:]
    return "".join(f"    {line}\n" for line in tail)


def _union(first: dict[str, str], second: dict[str, str]) -> list[str]:
    return [*first, *(key for key in second if key not in first)]


def placeholders(text: str, replacements: Iterable[tuple[str, str]]) -> str:
    """``text`` with each absolute folder replaced by its placeholder (longest first)."""
    for old, new in sorted(replacements, key=lambda pair: -len(pair[0])):
        text = text.replace(old, new)
    return text


# -- the two sides ------------------------------------------------------------------------


def shipped_packs(checkout: Path) -> dict[str, bool]:
    """The packs of ``checkout/rules``: name -> whether it has unsafe rules."""
    packs = {}
    for path in sorted((checkout / "rules").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        rules = data.get("rules") or []
        packs[path.stem] = any(isinstance(rule, dict) and rule.get("safety") == "unsafe"
                               for rule in rules)
    return packs


def plan(baseline: dict[str, bool], current: dict[str, bool],
         only: list[str] | None = None, safe_only: bool = False) -> list[Job]:
    """Each pack of either side, and again with --unsafe when either side's has unsafe rules
    (unless ``safe_only``)."""
    jobs = []
    for pack in sorted(set(baseline) | set(current)):
        if only and pack not in only:
            continue
        note = ("" if pack in baseline and pack in current
                else f"only in {'baseline' if pack in baseline else 'current'}")
        jobs.append(Job(pack, False, note))
        if (baseline.get(pack) or current.get(pack)) and not safe_only:
            jobs.append(Job(pack, True, note))
    return jobs


def run_side(side: Side, target: Target, job: Job, jobs: int, scratch: Path) -> Output:
    """One side's ``eqrewrite TARGET --diff ...`` on one target, timed, placeholders in."""
    imports = scratch / f"imports-{side.name}.json"
    imports.unlink(missing_ok=True)
    env = environment(side.links, imports, PYTHONHASHSEED="0")
    arguments = command(side.links, str(target.copy), *job.arguments(jobs))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # Its own process group: stopping this script stops the run and its workers too.
    process = subprocess.Popen(arguments, cwd=scratch, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True)
    try:
        stdout, stderr = process.communicate()
    except BaseException:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    result = subprocess.CompletedProcess(arguments, process.returncode, stdout, stderr)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    corpus = str(target.copy.parent)
    checkout = side.checkout.resolve()
    swaps = [(corpus, "<corpus>"), (str(side.links), "<links>"),
             *((str(checkout / name), f"<checkout>/{name}") for name in PACKAGE_FOLDERS)]
    diff = placeholders(result.stdout.decode("utf-8", "surrogateescape"), swaps[:1])
    report = placeholders(result.stderr.decode("utf-8", "surrogateescape"), swaps)
    modules = read_imports(imports)
    return Output(diff.encode("utf-8", "surrogateescape"), report, result.returncode, seconds,
                  cpu, modules)


def check_imports(side: Side, output: Output) -> str:
    """One line saying where the side's eqrewrite came from; SetupError when not its own."""
    return check_origin(side.name, side.label, side.checkout, output.modules,
                        f" (exit {output.status}):\n{output.report[-2000:]}")


# -- targets ------------------------------------------------------------------------------


def default_targets() -> dict[str, Path]:
    """transformers (5.24.0 at /tmp/tf524 if there, else what ``import transformers`` finds)
    and torch's package folder, without importing either."""
    targets = {}
    if (TF524 / "transformers" / "__init__.py").is_file():
        targets["transformers"] = TF524 / "transformers"
    elif (spec := importlib.util.find_spec("transformers")) and spec.submodule_search_locations:
        targets["transformers"] = Path(list(spec.submodule_search_locations)[0])
    if (spec := importlib.util.find_spec("torch")) and spec.submodule_search_locations:
        targets["torch"] = Path(list(spec.submodule_search_locations)[0])
    return targets


def parse_target(text: str) -> tuple[str, Path]:
    name, separator, path = text.partition("=")
    if not separator or not name or not path:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=PATH")
    if not Path(path).exists():
        raise argparse.ArgumentTypeError(f"{path}: no such file or folder")
    return name, Path(path)


def copy_target(name: str, source: Path, corpus: Path) -> Target:
    """``source``'s ``*.py`` files under ``corpus/NAME/<source's name>``, folders kept."""
    destination = corpus / name / source.name
    if source.is_file():
        destination.parent.mkdir(parents=True)
        shutil.copy2(source, destination)
        return Target(name, source, destination)
    for path in sorted(source.rglob("*.py")):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        copied = destination / path.relative_to(source)
        copied.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, copied)
    return Target(name, source, destination)


def version_of(source: Path) -> str:
    """The ``__version__`` a package folder declares (torch: version.py), or ""."""
    for name in ("__init__.py", "version.py"):
        path = source / name
        if path.is_file():
            match = re.search(r"^__version__\s*(?::\s*str\s*)?=\s*['\"]([^'\"]+)",
                              path.read_text(encoding="utf-8", errors="replace"), re.MULTILINE)
            if match:
                return match.group(1)
    return ""


# -- the run ------------------------------------------------------------------------------


@dataclass
class Row:
    target: str
    job: Job
    baseline: Output
    current: Output
    verdict: Verdict


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min)"


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_all(sides: tuple[Side, Side], targets: list[Target], jobs: list[Job], workers: int,
            scratch: Path) -> list[Row]:
    """Every job on every target, both sides, alternating which side goes first."""
    rows: list[Row] = []
    checked: set[str] = set()
    for target in targets:
        for job in jobs:
            order = sides if len(rows) % 2 == 0 else sides[::-1]
            outputs = {}
            for side in order:
                progress(f"  {target.name}: {job.label}: {side.name} ...")
                outputs[side.name] = run_side(side, target, job, workers, scratch)
                origin = check_imports(side, outputs[side.name])  # every run, said once
                if side.name not in checked:
                    progress("    " + origin)
                    checked.add(side.name)
            baseline, current = outputs["baseline"], outputs["current"]
            rows.append(Row(target.name, job, baseline, current, compare(baseline, current)))
            verdict = "identical" if rows[-1].verdict.identical else "DIFFERENT"
            progress(f"    {verdict}; {baseline.seconds:.1f} s / {current.seconds:.1f} s")
    return rows


def table(rows: list[Row]) -> str:
    """The measured table, Markdown."""
    lines = ["| target | pack | files | changed | edits | diff bytes | identical "
             "| baseline s (CPU s) | current s (CPU s) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        counts = row.current.counts() or {}
        base = row.baseline.counts() or {}

        def cell(key: str, counts: dict[str, int] = counts, base: dict[str, int] = base) -> str:
            if counts.get(key) == base.get(key):
                return f"{counts[key]:,}" if key in counts else "?"
            return f"{base.get(key, '?')} -> {counts.get(key, '?')}"

        size = (f"{len(row.current.diff):,}" if len(row.current.diff) == len(row.baseline.diff)
                else f"{len(row.baseline.diff):,} -> {len(row.current.diff):,}")
        same = "yes" if row.verdict.identical else "**no** (" + ", ".join(row.verdict.what) + ")"
        pack = row.job.label + (f" ({row.job.note})" if row.job.note else "")
        lines.append(f"| {row.target} | {pack} | {cell('files')} | {cell('changed')} "
                     f"| {cell('edits')} | {size} | {same} "
                     f"| {row.baseline.seconds:.1f} ({row.baseline.cpu_seconds:.1f}) "
                     f"| {row.current.seconds:.1f} ({row.current.cpu_seconds:.1f}) |")
    total_base = sum(row.baseline.seconds for row in rows)
    total_current = sum(row.current.seconds for row in rows)
    lines.append(f"| all | | | | | | {'yes' if all(r.verdict.identical for r in rows) else 'no'} "
                 f"| {total_base:.1f} ({sum(r.baseline.cpu_seconds for r in rows):.1f}) "
                 f"| {total_current:.1f} ({sum(r.current.cpu_seconds for r in rows):.1f}) |")
    return "\n".join(lines)


def differences(rows: list[Row]) -> str:
    """For each run whose sides differ: what differs, the first file, a short diff."""
    parts = []
    for row in rows:
        if row.verdict.identical:
            continue
        where = f", first in {row.verdict.first_file}" if row.verdict.first_file else ""
        parts.append(f"{row.target}, {row.job.label}: {', '.join(row.verdict.what)} "
                     f"differ{where}\n{row.verdict.detail}")
    return "\n".join(parts)


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, metavar="REV",
                        help="the git revision of this repository to compare against")
    parser.add_argument("--current", metavar="REV",
                        help="compare against this revision instead of the working tree")
    parser.add_argument("--target", dest="targets", action="append", type=parse_target,
                        metavar="NAME=PATH", help="a folder or file to rewrite (repeatable; "
                        "default: the installed transformers and torch)")
    parser.add_argument("--pack", dest="packs", action="append", metavar="NAME",
                        help="only this shipped pack (repeatable; default: every one)")
    parser.add_argument("--safe-only", action="store_true",
                        help="skip the --unsafe runs (a quick check)")
    parser.add_argument("-j", "--jobs", type=int, default=JOBS,
                        help=f"worker processes of each rewrite (default: {JOBS})")
    parser.add_argument("--worktree", type=Path, metavar="DIR",
                        help="where to check the baseline out (default: /tmp/eqrw-base-<sha>)")
    parser.add_argument("--current-worktree", type=Path, metavar="DIR",
                        help="where to check --current out (default: /tmp/eqrw-current-<sha>)")
    parser.add_argument("--keep-worktree", action="store_true",
                        help="leave the checkouts made here in place afterwards")
    parser.add_argument("--save", type=Path, metavar="DIR",
                        help="write each side's diff and report of every run into DIR")
    return parser.parse_args(argv)


def save(rows: list[Row], folder: Path) -> None:
    """Each run's two diffs and reports: TARGET-PACK[-unsafe].{baseline,current}.{diff,report}."""
    folder.mkdir(parents=True, exist_ok=True)
    for row in rows:
        stem = f"{row.target}-{row.job.pack}{'-unsafe' if row.job.unsafe else ''}"
        for name in ("baseline", "current"):
            output: Output = getattr(row, name)
            (folder / f"{stem}.{name}.diff").write_bytes(output.diff)
            (folder / f"{stem}.{name}.report").write_text(output.report)


def main(argv: list[str] | None = None) -> int:
    options = parse_arguments(argv)
    sources = dict(options.targets) if options.targets else default_targets()
    if not sources:
        progress("no targets: neither transformers nor torch is installed; give --target")
        return 2
    # SIGTERM as an exception: the checkouts made here and the scratch folder are removed.
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    made: list[Path] = []
    try:
        with tempfile.TemporaryDirectory(prefix="eqrw-identity-") as name:
            scratch = Path(name)
            base, commit, fresh = add_worktree(options.baseline, options.worktree, "base")
            made += [base] if fresh else []
            if options.current:
                current, current_commit, fresh = add_worktree(
                    options.current, options.current_worktree, "current")
                made += [current] if fresh else []
                current_label = current_commit[:7]
            else:
                head = git("rev-parse", "--short", "HEAD")
                edits = git("status", "--porcelain", "--untracked-files=all", "--",
                            *PACKAGE_FOLDERS).splitlines()
                current = snapshot(ROOT, scratch / "working-tree")
                current_label = (f"the working tree (HEAD {head}, {len(edits)} files of "
                                 f"{', '.join(PACKAGE_FOLDERS)} edited or new), copied at "
                                 f"{time.strftime('%H:%M:%S')}")
            sides = (Side("baseline", commit[:7], base, make_links(base, scratch / "base")),
                     Side("current", current_label, current,
                          make_links(current, scratch / "current")))
            rows = benchmark(options, sources, sides, scratch)
    except SetupError as error:
        progress(f"error: {error}")
        return 2
    finally:
        if not options.keep_worktree:
            for folder in made:
                remove_worktree(folder)
    if rows is None:
        return 2
    return 0 if all(row.verdict.identical for row in rows) else 1


def benchmark(options: argparse.Namespace, sources: dict[str, Path], sides: tuple[Side, Side],
              scratch: Path) -> list[Row] | None:
    """Copy the targets, run every job on both sides, print the table; the rows (None: no
    job to run)."""
    jobs = plan(shipped_packs(sides[0].checkout), shipped_packs(sides[1].checkout),
                options.packs, options.safe_only)
    if not jobs:
        progress(f"error: no shipped pack named {', '.join(options.packs or [])}")
        return None
    targets = []
    for name, source in sources.items():
        progress(f"copying {name} ({source}) ...")
        targets.append(copy_target(name, source.resolve(), scratch / "corpus"))
    start = load_average()
    progress(f"baseline in {sides[0].checkout}, current in {sides[1].checkout}; {start}")
    rows = run_all(sides, targets, jobs, options.jobs, scratch)
    if options.save:
        save(rows, options.save)
    print(f"Rewrite identity: baseline {sides[0].label} against {sides[1].label}")
    for target in targets:
        version = version_of(target.source)
        print(f"  {target.name}{' ' + version if version else ''}: {target.source}")
    print(f"  each run: eqrewrite TARGET {' '.join(Job('PACK', False).arguments(options.jobs))}"
          " [--unsafe]")
    print(f"  {start} at the start, {load_average()} at the end (a shared machine: compare "
          "the two sides' columns, run alternately)\n")
    print(table(rows))
    report = differences(rows)
    if report:
        print("\n" + report)
    return rows


if __name__ == "__main__":
    sys.exit(main())
