"""Command-line extensions, found through the ``eqrewrite.plugins`` entry-point group.

The rewriter never imports the oracle: the oracle (or any other installed package) declares
an entry point ``name = "package.module:register"`` in that group, and ``register`` receives
a ``Registry`` through which it adds subcommands, options of the rewrite command, and steps
that run before and after a rewrite (``--oracle`` is such a step), and options and steps of
the ``audit`` command (``--run``: the dynamic audit). Plugins are loaded once, when the
command line first needs its commands; importing one must stay cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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

    def prepare(self, flags: dict[str, Any], paths: tuple[Path, ...], mode: Mode,
                out_root: Path | None) -> Path | None:
        """Check the flags before anything is written; return the ``--out`` folder to use
        (``out_root`` unchanged when the step is not active). Raise click.UsageError."""

    def finish(self, flags: dict[str, Any], run: RewriteRun) -> StepResult | None:
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

    def prepare(self, flags: dict[str, Any]) -> None:
        """Check the flags before the audit starts; raise click.UsageError."""

    def finish(self, flags: dict[str, Any], run: AuditRun) -> StepResult | None:
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
        """RewriteOptions of the rewrite command; their values reach the steps as ``flags``."""
        self._rewrite.params.extend(options)

    def add_rewrite_step(self, step: RewriteStep) -> None:
        """A step run before and after every rewrite."""
        self.steps.append(step)

    def add_audit_options(self, options: list[click.Parameter]) -> None:
        """RewriteOptions of the audit command; their values reach the audit steps as ``flags``."""
        self._group.commands["audit"].params.extend(options)

    def add_audit_step(self, step: AuditStep) -> None:
        """A step run after every static audit (the dynamic audit)."""
        self.audit_steps.append(step)


def load_plugins(registry: Registry) -> None:
    """Call every installed plugin's ``register(registry)``."""
    for entry in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        entry.load()(registry)
