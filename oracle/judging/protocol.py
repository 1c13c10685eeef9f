"""The messages between the oracle and its worker processes, as typed values.

A ``RunRequest`` asks a worker to build a target and call it once in one ``Variant``; the
answer is a ``RunResult``: what the run observed, or the exception it raised, or a
``Failure`` when the run itself could not complete (crash, hang, memory). Everything here is
picklable and imports neither torch nor user code at module level.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .settings import CompileSettings, Target

if TYPE_CHECKING:  # it imports torch
    from .graphbreaks import BreakReport
    from .semantics import Semantics


class Variant(enum.Enum):
    """How one run executes the target."""

    EAGER = "eager"
    COMPILED = "compiled"
    REFERENCE = "reference"    # eagerly, every floating computation in float64
    PERTURBED = "perturbed"    # eagerly, floating inputs and parameters nudged by ~1 ulp
    CHECKED = "checked"        # eagerly, under the semantics checker (undefined behaviour)


class FailureKind(enum.Enum):
    """Why a run produced no result."""

    CRASH = "crash"        # the worker died (segfault, abort, kill)
    TIMEOUT = "timeout"    # no answer within the time limit
    OOM = "oom"            # out of memory
    ERROR = "error"        # the oracle itself could not build or observe the run


@dataclass(frozen=True)
class Failure:
    """A run that produced no result, and why."""

    kind: FailureKind
    message: str


@dataclass(frozen=True)
class RaisedException:
    """An exception the target raised: an outcome like any other."""

    type: str                 # qualified name
    message: str
    bases: tuple[str, ...]    # qualified names of its type's MRO, for "is an instance of"
    frame: str = ""           # innermost user frame "file.py:LINE in function"

    def describe(self) -> str:
        """``Type: message`` on one line, at most 200 characters of message.

        A first line that only announces the cause (``backend='inductor' raised:``, as
        torch's wrapping exceptions say) is joined with the line giving it, so that two
        compile crashes with different causes are told apart."""
        lines = [line.strip() for line in self.message.splitlines() if line.strip()]
        first = lines[0] if lines else ""
        if first.endswith(":") and len(lines) > 1:
            first = f"{first} {lines[1]}"
        return f"{self.type.rpartition('.')[2]}: {first[:200]}".rstrip(": ")


@dataclass(frozen=True)
class RunRequest:
    """Build ``target`` under ``seed`` and call it once."""

    target: Target
    settings: CompileSettings
    variant: Variant
    seed: int = 0
    state: bytes | None = None          # a module's state_dict to load (the original's)
    coverage: tuple[str, ...] = ()      # files whose executed lines to record
    perturbation: int = 0               # which perturbation (PERTURBED runs; a REFERENCE
    #                                     run with one above 0 is a nudged reference)
    deadline: float = 300.0             # seconds the worker allows itself
    tree: str = "original"              # which source tree: "original" or "rewritten"
    # Floating inputs require grad, so their gradients are compared. None: try, and run
    # again without if that makes the target fail (in-place writes to its inputs); the
    # first run decides and every later run of the target follows it.
    grad_inputs: bool | None = None


@dataclass
class RunResult:
    """What one run observed (``observed``), or raised (``exception``), or why it failed."""

    observed: dict[str, Any] | None = None
    exception: RaisedException | None = None
    failure: Failure | None = None
    state: bytes | None = None          # the module's initial state_dict (first run only)
    covered: dict[str, set[int]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    breaks: BreakReport | None = None   # what a compiled run counted
    grad_inputs: bool = True            # whether the run tracked its inputs' gradients
    diagnostics: list[str] = field(default_factory=list)  # the compiler's own warnings/logs
    called: tuple[str, ...] = ()        # torch functions the run called (REFERENCE runs only)
    semantics: Semantics | None = None  # undefined behaviour seen (CHECKED runs only)
