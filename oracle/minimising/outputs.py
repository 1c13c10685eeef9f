"""What a reduction leaves behind, and the check that it holds: ``reduced/`` (a reproducer
folder in the original's format, with the reduced program in ``reduced/tree/`` and the
settings the finding needs), ``minimal.py`` (``standalone.py``), the ``Result`` that
``reduction.json`` records, and both scripts run once more on their own (``verify``).
"""

from __future__ import annotations

import ast
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eqrewrite.rewriter.api import write_atomic

from .. import formats
from ..formats import Probe, Recipe, ReductionRecord
from .judge import Judge
from .schedule import Scheduler
from .signature import Signature, Tally
from .standalone import BROKEN, minimal_script, uses_reference


@dataclass
class Result:
    """What a reduction did, for the report."""

    folder: Path
    target: str
    signature: Signature
    before: dict[str, int]
    after: dict[str, int]
    tally: Tally
    seconds: float
    stopped: str | None
    weights_dropped: bool
    reduced: Path
    minimal: Path
    verified: dict[str, int | None] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # why a verified script broke
    jobs: int = 1
    reducing: float = 0.0  # seconds spent on the candidates (after the baseline)
    screen_backend: str | None = None
    confirm_every: int = 0  # with a screen backend (see Budget.confirm_every)
    dropped: list[str] = field(default_factory=list)  # settings the finding does not need

    @property
    def status(self) -> int:
        """``eqrewrite reduce``'s exit status: 1 when verification failed (the reduced
        reproducer must fail on its own, as every candidate kept did, and minimal.py must at
        least run: exit 0 or 1, since it may not show a finding that needs more than it
        compares, but a broken script is never a result), else 0."""
        verified = self.verified
        failed = bool(verified) and (verified["reduced/repro.py"] != 1
                                     or verified["minimal.py"] not in (0, 1, None))
        return 1 if failed else 0

    @property
    def per_minute(self) -> float:
        """Candidates judged per minute while reducing."""
        return 60 * self.tally.tried / self.reducing if self.reducing > 0 else 0.0

    def to_dict(self) -> ReductionRecord:
        """The record of ``reduced/reduction.json`` and of ``--format json``."""
        return {"folder": str(self.folder), "target": self.target,
                "signature": {"verdict": self.signature.verdict,
                              "exceptions": list(self.signature.exceptions),
                              "differences": [list(d) for d in self.signature.differences],
                              "error": self.signature.error},
                "before": self.before, "after": self.after,
                "candidates": {"tried": self.tally.tried, "accepted": self.tally.accepted,
                               "timeouts": self.tally.timeouts, "errors": self.tally.errors,
                               "repeated": self.tally.cached, "by_pass": self.tally.by_pass,
                               "screened_eager": self.tally.screened_eager,
                               "screened_backend": self.tally.screened_backend,
                               "screened_triage": self.tally.screened_triage,
                               "screened_forward": self.tally.screened_forward,
                               "screened_layout": self.tally.screened_layout,
                               "speculative": self.tally.speculative,
                               "confirmations": self.tally.confirmations,
                               "reverted": self.tally.reverted,
                               "per_minute": round(self.per_minute, 2)},
                "settings_dropped": self.dropped,
                "jobs": self.jobs, "screen_backend": self.screen_backend,
                "confirm_every": self.confirm_every,
                "reducing_seconds": round(self.reducing, 1),
                "seconds": round(self.seconds, 1), "stopped": self.stopped,
                "weights_dropped": self.weights_dropped, "reduced": str(self.reduced),
                "minimal": str(self.minimal), "verified": self.verified,
                "errors": self.errors}


def write_reduced(destination: Path, repro: Path, core: Path | None,
                  schedule: Scheduler) -> None:
    """A reproducer folder in the original's format, whose tree is ``tree/`` beside it."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=".reduced-", dir=destination.parent))
    # The core the candidates were judged with: the folder's own, or a newer one.
    shutil.copytree((core or repro) / formats.CORE_PACKAGE, building / formats.CORE_PACKAGE,
                    ignore=shutil.ignore_patterns("__pycache__"))
    if schedule.state:
        shutil.copyfile(repro / formats.STATE, building / formats.STATE)
    tree = building / formats.TREE
    judge = schedule.judge
    if judge.base_tree is not None:
        shutil.copytree(judge.base_tree, tree,
                        ignore=shutil.ignore_patterns("__pycache__", ".git"))
    (tree / judge.relative).parent.mkdir(parents=True, exist_ok=True)
    (tree / judge.relative).write_text(schedule.text, encoding="utf-8")
    script = _rooted_here((repro / formats.SCRIPT).read_text(encoding="utf-8"))
    (building / formats.SCRIPT).write_text(_with_settings(script, judge), encoding="utf-8")
    old = destination.with_name(f".{destination.name}-old")
    shutil.rmtree(old, ignore_errors=True)
    if destination.exists():
        destination.rename(old)
    building.rename(destination)
    shutil.rmtree(old, ignore_errors=True)


def _rooted_here(script: str) -> str:
    """``repro.py`` with its source tree moved to ``tree/`` inside its own folder."""
    return _assigned(script, "ROOT",
                     f'ROOT = str(Path(__file__).resolve().parent / "{formats.TREE}")\n')


def _with_settings(script: str, judge: Judge) -> str:
    """``repro.py`` judging with the settings the reduction kept: ``SETTINGS`` without those
    the finding does not need, and no input gradients when it needs none."""
    if judge.changed:
        settings: Mapping[str, Any] = judge.settings()
        fields = {key: tuple(map(tuple, value)) if key.endswith("_config") else value
                  for key, value in settings.items()}
        script = _assigned(script, "SETTINGS", "SETTINGS = CompileSettings("
                           + ", ".join(f"{k}={v!r}" for k, v in fields.items()) + ")\n")
    if judge.no_input_grads:
        script = _assigned(script, "REQUEST", "import dataclasses  # noqa: E402\n\n"
                           "# The finding needs no input gradients.\n"
                           "REQUEST = dataclasses.replace(REQUEST, grad_inputs=False)\n",
                           after=True)
    return script


def _assigned(script: str, name: str, text: str, after: bool = False) -> str:
    """``script`` with the top-level statement assigning ``name`` replaced by ``text``, or
    with ``text`` added after it."""
    node = next(n for n in ast.parse(script).body if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == name for t in n.targets))
    lines = script.splitlines(keepends=True)
    end = node.end_lineno or node.lineno
    if after:
        return "".join(lines[:end] + [text] + lines[end:])
    return "".join(lines[:node.lineno - 1] + [text] + lines[end:])


def write_minimal(path: Path, schedule: Scheduler, probe: Probe | None) -> None:
    """``minimal.py`` for the reduced program, with the settings the reduction kept and, from
    ``probe``, whether it needs the seed and how its inputs are passed."""
    signature, answer = schedule.finding()
    description = schedule.judge.description
    if signature.differences:
        first = signature.differences[0]
        message = next(m for p, k, m in answer["differences"] if (p, k) == first)
    else:  # a compile crash: the compiled run raises
        message = answer["detail"]
    recipe = Recipe(
        target=description["target"], settings=schedule.judge.settings(),
        seed=description["seed"], grad_inputs=answer["grad_inputs"],
        grads=any("['grads']" in path for path, _ in signature.differences),
        strict=description["strict"], scale=description["scale"],
        extra_paths=tuple(description["extra_paths"]),
        state=f"{formats.REDUCED}/{formats.STATE}" if schedule.state else None,
        headline=message,
        torch_version=description["torch"], differences=signature.differences,
        reference=uses_reference([kind for _, kind in signature.differences],
                                 answer.get("detail", "")),
        seeded=probe is None or bool(probe["rng"]),
        container=probe["container"] if probe is not None else None)
    write_atomic(path, minimal_script(schedule.text, recipe).encode("utf-8"))


def verify(result: Result, timeout: float, left: float | None = None) -> dict[str, int | None]:
    """Run the reduced reproducer and minimal.py on their own: exit 1 means they fail;
    within ``left`` seconds when the time budget leaves only that (None: timed out). What
    made one exit otherwise than 0 or 1 (minimal.py's 2: the script is broken) goes to
    ``result.errors``."""
    runs = {f"{formats.REDUCED}/{formats.SCRIPT}": (result.reduced / formats.SCRIPT,
                                                     result.reduced),
            "minimal.py": (result.minimal, result.minimal.parent)}
    logs = {name: tempfile.TemporaryFile() for name in runs}
    started = {name: subprocess.Popen([sys.executable, str(script)], cwd=cwd,
                                      stdout=subprocess.DEVNULL, stderr=logs[name],
                                      start_new_session=True)
               for name, (script, cwd) in runs.items()}
    codes: dict[str, int | None] = {}
    allowed = max(300.0, 3 * timeout)
    deadline = time.monotonic() + (allowed if left is None else min(allowed, left))
    for name, process in started.items():
        try:
            codes[name] = process.wait(max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            codes[name] = None
        with logs[name] as log:
            log.seek(0)
            if codes[name] not in (0, 1, None):
                result.errors[name] = _why(log.read().decode(errors="replace"))
    return codes


def _why(stderr: str) -> str:
    """Why a script exited otherwise than 0 or 1: the line minimal.py writes when it is
    broken, else the last line of its error output."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    said = [line for line in lines if line.startswith(BROKEN)]
    if said:
        return said[-1].partition(": ")[2] or said[-1]
    return lines[-1] if lines else "no output"
