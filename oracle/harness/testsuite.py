"""``--oracle-tests``: the project's own pytest suite as the oracle of a rewrite.

The test command runs in scratch copies of the project (the folder ``find_project_root``
finds), never in the user's tree: twice on the original copy (a test whose outcome differs
between those two runs is flaky, never blamed on a rewrite) and once on the rewritten copy,
under ``coverage run`` with ``dynamic_context = test_function`` so that each rewritten line
is known with the tests that executed it. Outcomes come from pytest's JUnit XML
(``--junitxml`` and ``--continue-on-collection-errors`` are appended to the command), keyed
``classname::name``. A test whose outcome changed is attributed to the rewritten files it
executed (one that executed none, to the files whose rewritten lines ran outside every test
function: at import, in a fixture); with rollback, those files get their original text back
in the rewritten copy and the command runs once more.

Nothing here imports torch, the rewriter, coverage or the project: the tests run in
subprocesses with the test command's own interpreter (``coverage`` must be installed
there), and coverage's data is read back as ``coverage json --show-contexts``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any, TypedDict

PYTEST_ONLY = ("--oracle-tests needs a pytest invocation ('pytest ARGS...' or "
               "'python -m pytest ARGS...'): its outcomes are read from pytest's JUnit XML")
# Never copied into the scratch trees: version control, caches, virtual environments.
_SKIPPED_NAMES = {".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".mypy_cache",
                  ".ruff_cache", ".eqrewrite_cache", ".tox", ".nox", "node_modules"}
_STATUSES = {"failure": "failed", "error": "error", "skipped": "skipped"}
# A module that no longer imports (a rewrite broke it) is an error outcome, not a stopped run.
_ADDED = ("--continue-on-collection-errors",)
_OUTPUT_TAIL = 4000  # characters of a failed command's output kept for the error message


class SuiteError(Exception):
    """The test command cannot be used, or did not run (the message says why)."""


@dataclass(frozen=True)
class TestCommand:
    """A pytest invocation: the interpreter that runs it and pytest's own arguments."""

    text: str
    python: str
    args: tuple[str, ...]

    def argv(self, junit: Path) -> list[str]:
        """The command as run on a tree, writing its JUnit XML to ``junit``."""
        return [self.python, "-m", "pytest", *self.args, *_ADDED, f"--junitxml={junit}"]

    def coverage_argv(self, junit: Path, rcfile: Path) -> list[str]:
        """The command under ``coverage run`` (per-test contexts come from ``rcfile``)."""
        return [self.python, "-m", "coverage", "run", f"--rcfile={rcfile}", "-m", "pytest",
                *self.args, *_ADDED, f"--junitxml={junit}"]


def parse_command(text: str) -> TestCommand:
    """``text`` as a pytest invocation; SuiteError when it is not one."""
    try:
        argv = shlex.split(text)
    except ValueError as error:
        raise SuiteError(f"--oracle-tests: cannot parse {text!r}: {error}") from None
    if not argv:
        raise SuiteError(f"{PYTEST_ONLY}; got an empty command")
    name = Path(argv[0]).name
    if name in ("pytest", "py.test"):
        script = shutil.which(argv[0])
        if script is None:
            raise SuiteError(f"--oracle-tests: {argv[0]!r} not found on PATH")
        return TestCommand(text, _interpreter(Path(script)), tuple(argv[1:]))
    if name.startswith("python") and argv[1:3] == ["-m", "pytest"]:
        python = shutil.which(argv[0])
        if python is None:
            raise SuiteError(f"--oracle-tests: {argv[0]!r} not found on PATH")
        return TestCommand(text, str(Path(python).absolute()), tuple(argv[3:]))
    raise SuiteError(f"{PYTEST_ONLY}; got {text!r}")


def _interpreter(script: Path) -> str:
    """The Python a ``pytest`` script runs with (its shebang), else this one."""
    try:
        with script.open("rb") as handle:
            first = handle.readline().decode("utf-8", "replace").strip()
    except OSError:
        return sys.executable
    if not first.startswith("#!"):
        return sys.executable
    words = first[2:].split()
    if words and Path(words[0]).name == "env" and len(words) > 1:
        found = shutil.which(words[1])
        return found if found is not None else sys.executable
    return words[0] if words and "python" in Path(words[0]).name else sys.executable


def check_coverage(command: TestCommand) -> None:
    """Coverage must be importable by the test command's interpreter (attribution)."""
    probe = subprocess.run([command.python, "-c", "import coverage"], capture_output=True,
                           check=False)
    if probe.returncode != 0:
        raise SuiteError(f"--oracle-tests: coverage is not installed for {command.python} "
                         "(needed to attribute changed tests to files): pip install coverage")


# -- outcomes ---------------------------------------------------------------------------------

class OutcomeRecord(TypedDict):
    """An ``Outcome`` as JSON."""

    status: str
    message: str


@dataclass(frozen=True)
class Outcome:
    """One test's outcome: passed, failed, error or skipped (missing: not in that run), and
    the first line of its failure, error or skip message."""

    status: str
    message: str = ""

    def to_json(self) -> OutcomeRecord:
        return {"status": self.status, "message": self.message}

    def __str__(self) -> str:
        return f"{self.status}: {self.message}" if self.message else self.status


MISSING = Outcome("missing")


@dataclass(frozen=True)
class SuiteRun:
    """One run of the test command on one tree."""

    outcomes: dict[str, Outcome]
    exit_code: int
    seconds: float


def read_junit(path: Path) -> dict[str, Outcome]:
    """``classname::name -> Outcome`` from pytest's JUnit XML; a test listed twice (a
    failure, then a teardown error) keeps its first non-passing outcome."""
    found: dict[str, Outcome] = {}
    for case in ElementTree.parse(path).iter("testcase"):
        key = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome = Outcome("passed")
        for tag in ("failure", "error", "skipped"):
            child = case.find(tag)
            if child is not None:
                message = _first_line(child.get("message") or child.text or "")
                if message == "collection failure":  # the exception is the last ``E`` line
                    raised = [line[1:].strip() for line in (child.text or "").splitlines()
                              if line.startswith("E ")]
                    message = f"{message}: {raised[-1]}" if raised else message
                outcome = Outcome(_STATUSES[tag], message)
                break
        if found.get(key, Outcome("passed")).status == "passed":
            found[key] = outcome
    return found


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines()]
    return lines[0] if lines else ""


# -- the report -------------------------------------------------------------------------------

class ChangedTestRecord(TypedDict):
    """A ``ChangedTest`` as JSON."""

    test: str
    before: OutcomeRecord
    after: OutcomeRecord
    files: list[str]
    after_rollback: OutcomeRecord | None


class FlakyTestRecord(TypedDict):
    """A ``FlakyTest`` as JSON."""

    test: str
    first: OutcomeRecord
    second: OutcomeRecord


class SuiteRecord(TypedDict):
    """A ``SuiteReport`` as JSON: what ``--oracle-tests`` adds to the rewrite's JSON
    document (the step adds ``written``)."""

    command: str
    tests_run: int
    outcomes_changed: list[ChangedTestRecord]
    flaky: list[FlakyTestRecord]
    files_cleared: list[str]
    files_rolled_back: list[str]
    files_unexercised: list[str]
    unresolved: int
    seconds: float


@dataclass(frozen=True)
class ChangedTest:
    """A test whose outcome differs between the original and the rewritten tree, the
    rewritten files it executed, and its outcome once those were rolled back."""

    test: str
    before: Outcome
    after: Outcome
    files: tuple[str, ...]
    after_rollback: Outcome | None = None

    @property
    def resolved(self) -> bool:
        """Whether the rollback brought the original outcome back."""
        return self.after_rollback is not None and self.after_rollback.status == \
            self.before.status

    def to_json(self) -> ChangedTestRecord:
        return {"test": self.test, "before": self.before.to_json(),
                "after": self.after.to_json(), "files": list(self.files),
                "after_rollback": (None if self.after_rollback is None
                                   else self.after_rollback.to_json())}


@dataclass(frozen=True)
class FlakyTest:
    """A test whose outcome differed between the two runs on the original tree."""

    test: str
    first: Outcome
    second: Outcome

    def to_json(self) -> FlakyTestRecord:
        return {"test": self.test, "first": self.first.to_json(),
                "second": self.second.to_json()}


@dataclass
class SuiteReport:
    """What ``--oracle-tests`` found (relative file paths, test keys ``classname::name``)."""

    command: str
    tests_run: int = 0
    changed: list[ChangedTest] = field(default_factory=list)
    flaky: list[FlakyTest] = field(default_factory=list)
    # A test executed a rewritten line of these files, and no changed outcome blames them.
    files_cleared: list[str] = field(default_factory=list)
    files_rolled_back: list[str] = field(default_factory=list)   # original text kept
    # No test executed any of their rewritten lines (and none blames them).
    files_unexercised: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def unresolved(self) -> list[ChangedTest]:
        """Changed tests whose original outcome is not back (all of them without rollback)."""
        return [c for c in self.changed if not c.resolved]

    def to_json(self) -> SuiteRecord:
        return {"command": self.command, "tests_run": self.tests_run,
                "outcomes_changed": [c.to_json() for c in self.changed],
                "flaky": [f.to_json() for f in self.flaky],
                "files_cleared": self.files_cleared,
                "files_rolled_back": self.files_rolled_back,
                "files_unexercised": self.files_unexercised,
                "unresolved": len(self.unresolved), "seconds": round(self.seconds, 2)}

    def text(self) -> str:
        lines = [f"oracle-tests: {self.command}",
                 f"  tests run: {self.tests_run}, outcomes changed: {len(self.changed)}, "
                 f"flaky: {len(self.flaky)}, files cleared: {len(self.files_cleared)}, "
                 f"files rolled back: {len(self.files_rolled_back)} "
                 f"({self.seconds:.1f}s)"]
        for change in self.changed:
            blamed = ", ".join(change.files) or "no rewritten file executed (unattributed)"
            lines.append(f"  CHANGED {change.test}: {change.before} -> {change.after}")
            lines.append(f"    executed: {blamed}")
            if change.after_rollback is not None:
                verdict = "back to the original" if change.resolved else "still changed"
                lines.append(f"    after rollback: {change.after_rollback} ({verdict})")
        for flaky in self.flaky:
            lines.append(f"  FLAKY {flaky.test}: {flaky.first} / {flaky.second} on the "
                         "original tree (not blamed on the rewrite)")
        for name, files in (("cleared", self.files_cleared),
                            ("rolled back", self.files_rolled_back),
                            ("rewritten lines no test executed", self.files_unexercised)):
            if files:
                lines.append(f"  {name}: {', '.join(files)}")
        return "\n".join(lines)


# -- the run ----------------------------------------------------------------------------------

def copy_project(root: Path, destination: Path, skip: tuple[Path, ...] = ()) -> None:
    """Copy the project ``root`` to ``destination`` (links as links), without version
    control, caches, virtual environments and the ``skip`` folders."""
    skipped = {p.resolve() for p in skip}

    def ignore(folder: str, names: list[str]) -> set[str]:
        here = Path(folder)
        return {name for name in names if name in _SKIPPED_NAMES
                or (here / name / "pyvenv.cfg").is_file()
                or (here / name).resolve() in skipped}

    shutil.copytree(root, destination, symlinks=True, ignore=ignore)


class Suite:
    """The test command run on the scratch trees ``work/original`` and ``work/rewritten``."""

    def __init__(self, command: TestCommand, work: Path,
                 say: Callable[[str], None] = lambda text: None):
        self.command, self.work, self.say = command, work, say
        self.original, self.rewritten = work / "original", work / "rewritten"
        self._runs = 0

    def _environment(self, tree: Path) -> dict[str, str]:
        """The tree (and its ``src/``) first on the import path: the tests import the copy,
        not the user's tree, even without an install."""
        env = dict(os.environ)
        paths = [str(tree)] + ([str(tree / "src")] if (tree / "src").is_dir() else [])
        if env.get("PYTHONPATH"):
            paths.append(env["PYTHONPATH"])
        env["PYTHONPATH"] = os.pathsep.join(paths)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        return env

    def run(self, tree: Path, rcfile: Path | None = None) -> SuiteRun:
        """Run the command on ``tree``; SuiteError when pytest did not produce outcomes."""
        self._runs += 1
        junit = self.work / f"junit-{self._runs}.xml"
        argv = (self.command.argv(junit) if rcfile is None
                else self.command.coverage_argv(junit, rcfile))
        start = time.monotonic()
        done = subprocess.run(argv, cwd=tree, env=self._environment(tree),
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, check=False)
        seconds = time.monotonic() - start
        # pytest: 0 passed, 1 some failed, 5 no tests; 2, 3, 4: interrupted, internal, usage.
        if done.returncode not in (0, 1, 5) or (done.returncode != 5 and not junit.is_file()):
            output = done.stdout.decode("utf-8", "replace")[-_OUTPUT_TAIL:]
            raise SuiteError(f"--oracle-tests: the test command exited {done.returncode} on "
                             f"the {tree.name} tree:\n{output}")
        outcomes = read_junit(junit) if junit.is_file() else {}
        return SuiteRun(outcomes, done.returncode, seconds)

    def covered(self, rcfile: Path) -> dict[str, dict[int, set[str]]]:
        """``relative file -> line -> contexts`` of the last coverage run: test functions,
        and ``""`` for code run outside any (imports, fixtures)."""
        report = self.work / "coverage.json"
        subprocess.run([self.command.python, "-m", "coverage", "json", f"--rcfile={rcfile}",
                        "--show-contexts", "-o", str(report)], cwd=self.rewritten,
                       env=self._environment(self.rewritten), capture_output=True, check=False)
        if not report.is_file():
            return {}  # nothing measured: no test executed a rewritten file
        files: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))["files"]
        found: dict[str, dict[int, set[str]]] = {}
        for name, data in files.items():
            path = Path(name) if Path(name).is_absolute() else self.rewritten / name
            try:
                relative = path.resolve().relative_to(self.rewritten.resolve()).as_posix()
            except ValueError:
                continue
            found[relative] = {int(line): set(names)
                               for line, names in data.get("contexts", {}).items()}
        return found


def _matches(context: str, test: str) -> bool:
    """Whether coverage's ``test_function`` context (``module[.Class].function``) names
    the JUnit test ``classname::name`` (parameters ``[...]`` dropped; the module path may be
    written from another root on either side)."""
    classname, _, name = test.partition("::")
    parts = context.split(".")
    if not context or parts[-1] != name.split("[", 1)[0]:
        return False
    prefix, owner = parts[:-1], classname.split(".") if classname else []
    shorter = min(len(prefix), len(owner))
    return shorter > 0 and prefix[len(prefix) - shorter:] == owner[len(owner) - shorter:]


def changed_lines(original: bytes, rewritten: bytes) -> set[int]:
    """The 1-based lines of ``rewritten`` that differ from ``original``."""
    old = original.decode("utf-8", "replace").splitlines()
    new = rewritten.decode("utf-8", "replace").splitlines()
    return {line + 1 for tag, _, _, j1, j2 in
            SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
            if tag != "equal" for line in range(j1, j2)}


def _write_rcfile(path: Path, tree: Path, files: list[str]) -> None:
    include = "".join(f"\n    {(tree / f).resolve()}" for f in files)
    path.write_text(f"[run]\ndynamic_context = test_function\n"
                    f"data_file = {path.parent / 'coverage.data'}\n"
                    f"include ={include}\n", encoding="utf-8")


def run_suite(command: TestCommand, root: Path, rewritten: Mapping[str, bytes],
              rollback: bool, skip: tuple[Path, ...] = (),
              say: Callable[[str], None] = lambda text: None) -> SuiteReport:
    """Run ``command`` on copies of the project ``root``: as it is, and with the files of
    ``rewritten`` (paths relative to ``root``) replaced by their rewritten bytes. ``skip``:
    folders under ``root`` left out of the copies (the ``--out`` tree)."""
    start = time.monotonic()
    report = SuiteReport(command.text)
    with tempfile.TemporaryDirectory(prefix="eqrewrite-tests-") as scratch:
        work = Path(scratch)
        suite = Suite(command, work, say)
        copy_project(root, suite.original, skip)
        copy_project(suite.original, suite.rewritten)
        for file, data in rewritten.items():
            (suite.rewritten / file).write_bytes(data)
        say("oracle-tests: the original tree, first run")
        first = suite.run(suite.original)
        say("oracle-tests: the original tree, second run")
        second = suite.run(suite.original)
        rcfile = work / "coveragerc"
        _write_rcfile(rcfile, suite.rewritten, sorted(rewritten))
        say("oracle-tests: the rewritten tree, under coverage")
        after = suite.run(suite.rewritten, rcfile)
        covered = suite.covered(rcfile)

        report.tests_run = len(after.outcomes)
        flaky = {test for test in first.outcomes.keys() | second.outcomes.keys()
                 if first.outcomes.get(test, MISSING).status
                 != second.outcomes.get(test, MISSING).status}
        report.flaky = [FlakyTest(t, first.outcomes.get(t, MISSING),
                                  second.outcomes.get(t, MISSING)) for t in sorted(flaky)]
        edited = {f: changed_lines((suite.original / f).read_bytes(), data)
                  for f, data in rewritten.items()}
        # Rewritten lines run outside every test function (at import, in a fixture): the
        # files blamed for a changed test that executed no rewritten file itself.
        outside = tuple(sorted(f for f, lines in edited.items()
                               if any("" in covered.get(f, {}).get(n, ()) for n in lines)))
        for test in sorted(first.outcomes.keys() | after.outcomes.keys()):
            before, now = first.outcomes.get(test, MISSING), after.outcomes.get(test, MISSING)
            if test in flaky or before.status == now.status:
                continue
            files = tuple(sorted(f for f, lines in covered.items()
                                 if any(_matches(c, test) for cs in lines.values() for c in cs)))
            report.changed.append(ChangedTest(test, before, now, files or outside))
        blamed = sorted({f for change in report.changed for f in change.files})
        # A file is cleared when some test executed one of its rewritten lines.
        tested = {f for f, lines in edited.items()
                  if any(c for n in lines for c in covered.get(f, {}).get(n, ()))}
        report.files_cleared = sorted(tested - set(blamed))
        report.files_unexercised = sorted(set(rewritten) - tested - set(blamed))
        if rollback and blamed:
            for file in blamed:
                shutil.copyfile(suite.original / file, suite.rewritten / file)
            report.files_rolled_back = blamed
            say(f"oracle-tests: rolled back {', '.join(blamed)}; the rewritten tree again")
            again = suite.run(suite.rewritten)
            report.changed = [ChangedTest(c.test, c.before, c.after, c.files,
                                          again.outcomes.get(c.test, MISSING))
                              for c in report.changed]
    report.seconds = time.monotonic() - start
    return report
