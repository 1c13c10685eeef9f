"""The oracle's part of the command line, registered through the ``eqrewrite.plugins``
entry point: the ``eqrewrite oracle`` and ``eqrewrite gen`` commands, the rewrite command's
``--oracle`` step and the audit command's dynamic options (``--run``, ``--what-if``, ``--bench``).

Importing this module must stay cheap (no torch): it runs on every ``eqrewrite`` call.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import click
from eqrewrite.rewriter.plugins import Registry, RewriteRun, StepResult

from .audit import DynamicAuditStep, audit_options
from .cli import compile_options, oracle_command
from .gencli import gen_command


class OracleStep:
    """``--oracle``: validate the rewritten tree four ways; ``--rollback``: revert culprits."""

    name = "oracle"

    def prepare(self, flags: dict[str, Any], paths: tuple[Path, ...], mode: str,
                out_root: Path | None) -> Path | None:
        if flags.get("rollback") and not flags.get("use_oracle"):
            raise click.UsageError("--rollback needs --oracle")
        if not flags.get("use_oracle"):
            return out_root
        if mode in ("check", "diff") or len(paths) != 1 or not paths[0].is_dir():
            raise click.UsageError(
                "--oracle takes one folder and writes the rewritten tree to --out (default: a "
                "temporary folder, removed afterwards); it cannot be combined with --check or "
                "--diff")
        if out_root is not None:
            return out_root
        tree = Path(tempfile.mkdtemp(prefix="eqrewrite-rewritten-"))
        # Removed when the command ends, however it ends (exit 123 skips finish()).
        click.get_current_context().call_on_close(lambda: shutil.rmtree(tree, True))
        return tree

    def finish(self, flags: dict[str, Any], run: RewriteRun) -> StepResult | None:
        if not flags.get("use_oracle"):
            return None
        from .cli import validate_rewrite

        settings = {k: v for k, v in flags.items() if k not in ("use_oracle", "rollback")}
        status, record = validate_rewrite(run, bool(flags.get("rollback")), settings)
        return StepResult(status, record if run.output_format != "text" else None)


def _rewrite_options() -> list[click.Parameter]:
    """``--oracle``, ``--rollback`` and the compile options, as click parameters."""

    @click.command()
    @click.option("--oracle", "use_oracle", is_flag=True,
                  help="Validate the rewrite by running every target four ways (needs torch).")
    @click.option("--rollback", is_flag=True,
                  help="With --oracle: revert the edits that changed a target's behaviour.")
    @compile_options
    def holder(**_: Any) -> None:
        """Only collects the decorated parameters."""

    return list(holder.params)


def register(registry: Registry) -> None:
    """Entry point: add the ``oracle`` and ``gen`` commands, the rewrite options and the
    ``--oracle`` step, and the dynamic audit."""
    registry.add_command(oracle_command)
    registry.add_command(gen_command)
    registry.add_rewrite_options(_rewrite_options())
    registry.add_rewrite_step(OracleStep())
    registry.add_audit_options(audit_options())
    registry.add_audit_step(DynamicAuditStep())
