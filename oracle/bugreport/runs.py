"""The report's runs, each a child process under a time limit (killed with its process group,
Inductor's compile workers included): the minimal script as recorded and under other backends
and modes, the compiler bisector, ``python -m torch.utils.collect_env``, and the probe that
says whether the oracle's runs gave the inputs gradients.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..minimising.standalone import BROKEN_EXIT, DIFFERS, minimal_script
from .finding import Finding


@dataclass(frozen=True)
class Completed:
    """One child process: exit status (None: timed out), its output, how long it ran."""

    returncode: int | None
    stdout: str
    stderr: str
    seconds: float


def run_process(command: list[str], cwd: Path, timeout: float,
                env: dict[str, str] | None = None) -> Completed:
    """Run ``command``; past ``timeout`` seconds its whole process group is killed."""
    started = time.monotonic()
    environment = dict(os.environ if env is None else env, PYTHONDONTWRITEBYTECODE="1")
    process = subprocess.Popen(command, cwd=cwd, env=environment, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, errors="replace",
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
        code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        _kill(process)
        stdout, stderr = process.communicate()
        code = None
    return Completed(code, stdout, stderr, time.monotonic() - started)


def _kill(process: subprocess.Popen[str]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


# -- one run of the script ----------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What a run of the script showed."""

    status: str        # differs | raises | eager-raises | broken | agrees | timeout | crashed
    message: str       # the difference line, the exception's last line, or ""
    completed: Completed

    @property
    def reproduces(self) -> bool:
        return self.status in ("differs", "raises")

    def describe(self) -> str:
        """A table cell."""
        text = {"differs": "differs", "raises": "raises", "agrees": "agrees",
                "eager-raises": "eager raises", "broken": "script broken", "crashed": "crashed",
                "timeout": f"timed out ({self.completed.seconds:.0f} s)"}[self.status]
        return f"{text}: `{_cell(self.message)}`" if self.message and self.status not in (
            "differs", "agrees", "timeout") else text


def _cell(text: str, limit: int = 110) -> str:
    text = text.replace("|", "\\|").replace("`", "'")
    return text if len(text) <= limit else text[:limit - 1] + "…"


def classify(completed: Completed) -> Outcome:
    """Read a run of the script: exit 0 agrees; exit 1 with the script's own message differs;
    a traceback raises (in the eager call or the compiled one); exit 2 is a script that says
    it is broken (an exception outside the compiled call), never a reproduction."""
    code, stderr = completed.returncode, completed.stderr
    if code is None:
        return Outcome("timeout", "", completed)
    if code == 0:
        return Outcome("agrees", "", completed)
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        return Outcome("crashed", f"killed by {name}", completed)
    if code == BROKEN_EXIT:  # the script's own verdict: broken, not the finding
        return Outcome("broken", last_line(stderr), completed)
    if "Traceback (most recent call last)" in stderr:
        last = last_line(stderr)
        eager = re.search(r"^\s+(expected|reference) = ", stderr, re.MULTILINE) is not None
        return Outcome("eager-raises" if eager else "raises", last, completed)
    if DIFFERS in stderr:
        return Outcome("differs", stderr[stderr.index(DIFFERS):].strip(), completed)
    return Outcome("crashed", f"exit {code}: {last_line(stderr)}", completed)


def last_line(text: str) -> str:
    """An exception's last line as Python prints it (the line naming its type)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    for index in range(len(lines) - 1, -1, -1):  # the last 'Type: message' line at column 0
        if re.match(r"^[\w.]+(Error|Exception|Failed|Interrupt|Exit|Warning)\b", lines[index]):
            return lines[index].strip()
    return lines[-1].strip() if lines else ""


@dataclass
class Runner:
    """Writes variants of the minimal script into a scratch folder and runs them."""

    finding: Finding
    timeout: float
    scratch: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(
        prefix="eqrewrite-report-")))
    grad_inputs: bool = True
    say: Callable[[str], None] = lambda _: None
    _count: int = 0

    def script(self, **changes: object) -> str:
        return minimal_script(self.finding.program,
                              self.finding.recipe(self.grad_inputs, **changes))

    def write(self, text: str, name: str | None = None) -> Path:
        self._count += 1
        path = self.scratch / (name or f"run{self._count}.py")
        path.write_text(text, encoding="utf-8")
        return path

    def run(self, text: str, env: dict[str, str] | None = None) -> Outcome:
        path = self.write(text)
        return classify(run_process([sys.executable, str(path)], self.scratch, self.timeout,
                                    env))

    def probe(self) -> bool:
        """Whether the oracle's runs gave floating inputs gradients: as its worker does, only
        when the eager call and its backward run with them (an in-place write to an input
        that requires grad raises)."""
        if self.finding.settings.get("inference"):
            return False
        path = self.write(minimal_script(self.finding.program, self.finding.recipe(
            True, differences=(), grads=True)), "probe_script.py")
        code = ("import runpy, sys\n"
                f"sys.argv = [{str(path)!r}]\n"
                f"found = runpy.run_path({str(path)!r}, run_name='eqrewrite_probe')\n"
                # the harness's run(), renamed when the program binds "run" too
                "next(f for f in found.values() if callable(f) and (f.__doc__ or '')"
                ".startswith('The program built and called'))()\n")
        done = run_process([sys.executable, "-c", code], self.scratch, self.timeout)
        return done.returncode == 0


# -- the ablation -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    backend: str
    mode: str | None
    outcome: Outcome | None  # None: not run (``note`` says why)
    note: str = ""


# The ablation's (backend, mode) rows: Dynamo alone, with AOT autograd, Inductor's modes.
ROWS: tuple[tuple[str, str | None], ...] = (
    ("eager", None), ("aot_eager", None), ("inductor", None), ("inductor", "reduce-overhead"),
    ("inductor", "max-autotune-no-cudagraphs"))


def ablation(runner: Runner, recorded: Outcome, cuda: bool,
             rows: tuple[tuple[str, str | None], ...] = ROWS) -> list[Row]:
    """The script under each of ``rows`` (each run apart; the recorded settings' row is
    ``recorded``, and comes first when it is none of them)."""
    settings = runner.finding.settings
    own = (str(settings["backend"]), settings.get("mode"))
    rows = tuple(rows)
    if own not in rows:
        rows = (own, *rows)
    found = []
    for backend, mode in rows:
        if (backend, mode) == own:
            found.append(Row(backend, mode, recorded))
        elif mode == "reduce-overhead" and not cuda:
            found.append(Row(backend, mode, None, "not run: CUDA graphs only; on CPU it "
                                                  "compiles as the default mode"))
        else:
            runner.say(f"ablation: backend={backend} mode={mode or 'default'}")
            found.append(Row(backend, mode, runner.run(runner.script(
                settings={"backend": backend, "mode": mode}))))
    return found


# -- the compiler bisector ----------------------------------------------------------------------


# Run by a child: CompilerBisector.do_bisect with a function that runs the script once more
# (as torch's own ``compiler_bisector run`` does: the bisection's state passed through the
# environment and a shared cache folder) and says whether it passed.
_BISECT = '''\
import json, os, subprocess, sys

from torch._inductor.compiler_bisector import CompilerBisector
from torch._inductor.runtime.cache_dir_utils import cache_dir

script, timeout = sys.argv[1], float(sys.argv[2])
runs = []


def passes():
    env = dict(os.environ)
    backend, subsystem = CompilerBisector.get_backend(), CompilerBisector.get_subsystem()
    if backend:
        env["TORCH_COMPILE_BACKEND"] = env["TORCH_BISECT_BACKEND"] = backend
    if subsystem:
        env["TORCH_BISECT_SUBSYSTEM"] = subsystem
        if CompilerBisector.get_run_state(backend, subsystem) == "test_disable":
            env["TORCH_BISECT_MAX"] = "-1"
    try:
        code = subprocess.run([sys.executable, script], env=env, timeout=timeout,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    except subprocess.TimeoutExpired:
        code = None
    runs.append([backend, subsystem, code])
    return code == 0


CompilerBisector.delete_bisect_status()
CompilerBisector.bisection_enabled = True
CompilerBisector.in_process_cache = cache_dir()
result = CompilerBisector.do_bisect(passes)
found = None if result is None else {
    "backend": result.backend, "subsystem": result.subsystem,
    "bisect_number": result.bisect_number, "debug_info": result.debug_info}
print("EQREWRITE-BISECT " + json.dumps({"result": found, "runs": runs}))
'''


@dataclass(frozen=True)
class Bisection:
    """What the bisector named, or why it named nothing (``note``)."""

    backend: str | None = None
    subsystem: str | None = None
    bisect_number: int | None = None
    debug_info: str | None = None
    runs: int = 0
    seconds: float = 0.0
    note: str = ""

    def describe(self) -> str:
        if self.backend is None:
            return self.note
        return f"{self._named()} ({self.runs} runs of the script, {self.seconds:.0f} s)."

    def _named(self) -> str:
        if self.subsystem is None:
            return (f"`torch._inductor.compiler_bisector` names the `{self.backend}` backend "
                    "(no smaller subsystem)")
        text = (f"`torch._inductor.compiler_bisector` names backend `{self.backend}`, "
                f"subsystem `{self.subsystem}`")
        if self.bisect_number:
            text += f", application {self.bisect_number}"
        if self.debug_info and self.debug_info != self.subsystem:
            text += f": `{_cell(self.debug_info, 200)}`"
        return text


def bisect(runner: Runner, budget: float) -> Bisection:
    """``CompilerBisector.do_bisect`` over the script, in a child with its own Inductor
    cache folder (the bisection's state lives there), within ``budget`` seconds."""
    script = runner.write(runner.script(backend_from_environment=True), "bisect_script.py")
    driver = runner.write(_BISECT, "bisect_driver.py")
    cache = runner.scratch / "inductor-cache"
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache),
               TORCHINDUCTOR_FORCE_DISABLE_CACHES="1")
    done = run_process([sys.executable, str(driver), str(script), str(runner.timeout)],
                       runner.scratch, budget, env)
    if done.returncode is None:
        return Bisection(seconds=done.seconds, note=f"Bisection not finished within "
                         f"{budget:.0f} s (`--bisect-budget`): no pass or switch named.")
    marker = next((line for line in done.stdout.splitlines()
                   if line.startswith("EQREWRITE-BISECT ")), None)
    if done.returncode != 0 or marker is None:
        return Bisection(seconds=done.seconds, note="`torch._inductor.compiler_bisector` "
                         f"failed on this machine: `{_cell(last_line(done.stderr), 200)}`.")
    answer = json.loads(marker.partition(" ")[2])
    runs = len(answer["runs"])
    found = answer["result"]
    if found is None:
        return Bisection(runs=runs, seconds=done.seconds, note=(
            "`torch._inductor.compiler_bisector` found no backend that fails (the script "
            f"passed under each it tried, {runs} runs): no pass or switch named."))
    return Bisection(found["backend"], found["subsystem"], found["bisect_number"],
                     found["debug_info"], runs, done.seconds)


# -- the environment ----------------------------------------------------------------------------

_ENV_KEYS = ("PyTorch version", "Is debug build", "OS", "GCC version", "Clang version",
             "Python version", "Python platform", "Is CUDA available", "GPU models")
_CPU_KEYS = ("Architecture", "CPU(s)", "Vendor ID", "Model name")
_LIBRARY = re.compile(r"^\[(pip3?|conda)\] (torch|numpy|triton|pytorch-triton|intel|mkl)\S*")


def collect_env(scratch: Path, timeout: float) -> tuple[list[str], str]:
    """The relevant lines of ``python -m torch.utils.collect_env`` and a note when it
    failed."""
    done = run_process([sys.executable, "-m", "torch.utils.collect_env"], scratch, timeout)
    if done.returncode != 0:
        why = "timed out" if done.returncode is None else last_line(done.stderr)
        return [], f"python -m torch.utils.collect_env failed: {why}"
    return relevant_env(done.stdout), ""


def relevant_env(text: str) -> list[str]:
    """PyTorch, OS, compilers, Python, CUDA, the CPU, and the versions of torch, numpy,
    triton and MKL."""
    kept, section = [], ""
    for line in text.splitlines():
        if not line.strip():
            section = ""
            continue
        if line.rstrip().endswith(":") and ":" not in line.rstrip()[:-1]:
            section = line.strip()[:-1]
            if section == "CPU":
                kept.append("CPU:")
            continue
        key = line.partition(":")[0].strip()
        if section == "CPU" and key in _CPU_KEYS:
            kept.append(line.rstrip())
        elif section == "Versions of relevant libraries" and _LIBRARY.match(line):
            kept.append(line.rstrip())
        elif not section and key in _ENV_KEYS:
            kept.append(line.rstrip())
    return kept
