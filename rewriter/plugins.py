"""Command-line extensions, found through the ``eqrewrite.plugins`` entry-point group, and
the click options the commands share.

The rewriter never imports the oracle: the oracle (or any other installed package) declares
an entry point ``name = "package.module:register"`` in that group, and ``register`` receives
a ``Registry`` through which it adds subcommands, options of the rewrite command, and steps
that run before and after a rewrite (``--oracle`` is such a step), and options and steps of
the ``audit`` command (``--run``: the dynamic audit). A step gets the values of the options
its plugin added as ``Flags``: read-only, each read with a getter that types it. Plugins are
loaded once, when the command line first needs its commands; importing one must stay cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import click

from .running.results import FileResult, Mode

if TYPE_CHECKING:  # annotations only: importing the plugin interface stays cheap
    from .matching.rules import Rule
    from .rewriting.engine import RewriteOptions

GROUP = "eqrewrite.plugins"


class Flags(Mapping[str, object]):
    """The values of the options plugins added to a command (``Registry.add_rewrite_options``,
    ``add_audit_options``), by parameter name, as click parsed them: read-only.

    A step reads each with the getter of its type: ``flag`` (absent or None: False),
    ``switch`` (``--x/--no-x`` without a default: None), ``text``, ``texts`` (a repeatable
    option), ``number``, ``integer`` and ``path``; a value of another type is a TypeError
    (the option is not what the step declared). ``without(names)``: the others only."""

    def __init__(self, values: Mapping[str, object] | None = None):
        self._values = dict(values or {})

    def __getitem__(self, name: str) -> object:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Flags({self._values!r})"

    def without(self, names: Iterable[str]) -> Flags:
        """These flags but ``names``."""
        left_out = set(names)
        return Flags({k: v for k, v in self._values.items() if k not in left_out})

    def flag(self, name: str) -> bool:
        """A flag: True when given."""
        return self.switch(name) is True

    def switch(self, name: str) -> bool | None:
        """``--x/--no-x``: True, False, or None when not given."""
        value = self._values.get(name)
        if value is None or isinstance(value, bool):
            return value
        raise _wrong(name, "true or false", value)

    def text(self, name: str) -> str | None:
        """An option's text, or None when not given."""
        value = self._values.get(name)
        if value is None or isinstance(value, str):
            return value
        raise _wrong(name, "a text", value)

    def texts(self, name: str) -> tuple[str, ...]:
        """A repeatable option's texts, in the order given."""
        value = self._values.get(name)
        if value is None:
            return ()
        if isinstance(value, tuple | list) and all(isinstance(v, str) for v in value):
            return tuple(str(v) for v in value)
        raise _wrong(name, "texts", value)

    def number(self, name: str, default: float) -> float:
        """A number (``default`` when not given)."""
        value = self._values.get(name)
        if value is None:
            return default
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise _wrong(name, "a number", value)

    def integer(self, name: str, default: int) -> int:
        """A whole number (``default`` when not given)."""
        value = self._values.get(name)
        if value is None:
            return default
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _wrong(name, "a whole number", value)

    def path(self, name: str) -> Path | None:
        """A path, or None when not given."""
        value = self._values.get(name)
        if value is None or isinstance(value, Path):
            return value
        if isinstance(value, str):
            return Path(value)
        raise _wrong(name, "a path", value)


def _wrong(name: str, expected: str, value: object) -> TypeError:
    return TypeError(f"option {name!r}: expected {expected}, got {value!r}")


@dataclass(frozen=True)
class RewriteRun:
    """A finished rewrite, as a step sees it."""

    paths: tuple[Path, ...]
    root: Path               # the project root (where pyproject.toml was looked for)
    out_root: Path | None    # the written tree, when there is one
    mode: Mode
    rules: list[Rule]        # the selected rules
    options: RewriteOptions         # the run's options (api.RewriteOptions)
    results: list[FileResult]  # one per processed file
    output_format: str = "text"  # text | json | sarif: with json, report through the record
    # Each file's options as the run decided them (its traced functions, over the whole run).
    file_options: Callable[[str], RewriteOptions] | None = None


@dataclass(frozen=True)
class StepResult:
    """What a step reports: its exit status (0: all good) and, for ``--format json``, a
    record that the command line puts in its one JSON document under ``steps.<name>``."""

    status: int
    record: dict[str, Any] | None = None


class RewriteStep(Protocol):
    """Work a plugin adds around the rewrite command, driven by its own options.

    ``name`` keys the step's record in the JSON document. A step prints nothing on stdout
    when the output format is not text (stdout then holds exactly one document).
    """

    name: str

    def prepare(self, flags: Flags, paths: tuple[Path, ...], mode: Mode,
                out_root: Path | None) -> Path | None:
        """Check the flags before anything is written; return the ``--out`` folder to use
        (``out_root`` unchanged when the step is not active). Raise click.UsageError."""

    def finish(self, flags: Flags, run: RewriteRun) -> StepResult | None:
        """Run after the rewrite; its result, or None when the step is not active."""


@dataclass(frozen=True)
class AuditRun:
    """A finished static audit, as an audit step sees it."""

    paths: tuple[Path, ...]
    root: Path                 # the project root: finding files are relative to it
    files: list[Path]          # the Python files audited
    packs: list[str]           # rule packs (paths) resolving the findings
    rules_given: bool          # packs named with --rules: also measure before/after
    options: RewriteOptions           # api.RewriteOptions: scope, assumptions
    document: dict[str, Any]   # the static report (eqrewrite.rewriter.audit schema)
    output_format: str = "text"
    progress: bool = False     # show progress on stderr
    # --dynamo-config/--dynamic-sizes (api.audit's ``dynamo_config``): torch._dynamo.config
    # switches the dynamic audit measures every target with, besides the defaults
    dynamo_config: Mapping[str, object] = field(default_factory=dict)


class AuditStep(Protocol):
    """Work a plugin adds to ``eqrewrite audit``, driven by its own options. Its record
    becomes the report's ``dynamic`` section (see the audit's JSON schema)."""

    name: str

    def prepare(self, flags: Flags) -> None:
        """Check the flags before the audit starts; raise click.UsageError."""

    def finish(self, flags: Flags, run: AuditRun) -> StepResult | None:
        """Run after the static audit; None when the step is not active."""


class Registry:
    """What a plugin's ``register`` function may extend."""

    def __init__(self, group: click.Group, rewrite: click.Command):
        self._group, self._rewrite = group, rewrite
        self.steps: list[RewriteStep] = []
        self.audit_steps: list[AuditStep] = []

    def add_command(self, command: click.Command) -> None:
        """A new subcommand (``eqrewrite oracle ...``)."""
        self._group.add_command(command)

    def add_rewrite_options(self, options: list[click.Parameter]) -> None:
        """Options of the rewrite command; their values reach the steps as ``Flags``."""
        self._rewrite.params.extend(options)

    def add_rewrite_step(self, step: RewriteStep) -> None:
        """A step run before and after every rewrite."""
        self.steps.append(step)

    def add_audit_options(self, options: list[click.Parameter]) -> None:
        """Options of the audit command; their values reach the audit steps as ``Flags``."""
        self._group.commands["audit"].params.extend(options)

    def add_audit_step(self, step: AuditStep) -> None:
        """A step run after every static audit (the dynamic audit)."""
        self.audit_steps.append(step)


def load_plugins(registry: Registry) -> None:
    """Call every installed plugin's ``register(registry)``."""
    for entry in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        entry.load()(registry)
