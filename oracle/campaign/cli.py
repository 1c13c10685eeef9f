"""``eqrewrite campaign``: generate, rewrite and validate many programs; keep what matters.

Registered through the plugin registry (``oracle/plugin.py``); importing this module is
cheap (torch and the executors load when the command runs). Running the same command again
on the same folder resumes it: finished seeds are skipped.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..api import check_switches
from ..core.settings import CompileSettings, TargetError, parse_settings
from ..gencli import _range, _weights

if TYPE_CHECKING:
    from .executors import LocalExecutor, RayExecutor
    from .job import JobSpec

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``30m``, ``1.5h``, ``1d`` in seconds."""
    match = _DURATION.match(text)
    if match is None:
        raise click.BadParameter(f"expected a duration such as 90s, 30m or 1h, got {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def parse_seeds(text: str) -> range:
    """``START:STOP`` (STOP excluded) or one seed."""
    start, sep, stop = text.partition(":")
    try:
        seeds = range(int(start), int(stop) if sep else int(start) + 1)
    except ValueError:
        raise click.BadParameter(f"expected START:STOP, got {text!r}") from None
    if seeds.start < 0 or len(seeds) == 0:
        raise click.BadParameter(f"expected 0 <= START < STOP, got {text!r}")
    return seeds


@click.command("campaign")
@click.option("--seeds", default="0:100", show_default=True, metavar="START:STOP",
              help="Seeds to run (STOP excluded); one program per seed.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=min(2, os.cpu_count() or 1),
              show_default=True, help="Programs validated at once (one process each).")
@click.option("--time-budget", "budget", metavar="DURATION",
              help="Stop submitting seeds after this long (90s, 30m, 1h); seeds in flight "
              "finish.")
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Campaign folder (journal, summary.json, findings/); run again to resume.")
@click.option("--backend", default="inductor", show_default=True,
              help="inductor, aot_eager, eager, or module:function (a custom backend).")
@click.option("--inductor-config", "inductor", multiple=True, metavar="KEY=VALUE",
              help="torch._inductor.config switch; repeatable.")
@click.option("--dynamo-config", "dynamo", multiple=True, metavar="KEY=VALUE",
              help="torch._dynamo.config switch; repeatable.")
@click.option("--known-issues", metavar="FILE",
              help="YAML of known issues to count but not report (default: the shipped "
              "list; 'none' for none).")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local",
              show_default=True, help="Where seeds run.")
@click.option("--address", help="Ray cluster address (auto, ray://host:10001); default: a "
              "new local Ray instance.")
@click.option("--timeout", type=float, default=300.0, show_default=True,
              help="Seconds per run before a program counts as hung.")
@click.option("--strict", is_flag=True, help="Also compare signs of zero and NaN.")
@click.option("--unsafe", is_flag=True, help="Also apply the pack's unsafe rules.")
@click.option("--rules", "packs", multiple=True, default=("equivalences",), show_default=True,
              help="Rule pack(s) rewriting each program.")
@click.option("--statements", default="5:12", show_default=True, metavar="LOW:HIGH",
              help="Statements per program.")
@click.option("--ops", help="Comma-separated op ids: generate with only these ops.")
@click.option("--feature", "features", multiple=True, metavar="NAME=WEIGHT",
              help="Override a generator feature's weight; repeatable.")
@click.option("--compile-settings", type=click.Choice(["varied", "fixed"]), default="varied",
              show_default=True, help="varied: each seed's header says how it is compiled "
              "(dynamic shapes, no_grad, Inductor/Dynamo switches); fixed: no such settings "
              "(the programs of earlier releases).")
@click.option("--reduce", "reduce_findings", is_flag=True,
              help="Run `eqrewrite reduce` on each new compiler-bug or compile-error finding "
              "(when installed).")
@click.option("--reduce-budget", "reduce_budget", default="10m", show_default=True,
              metavar="DURATION", help="Time for each --reduce (start-up and final check "
              "included); never more than what is left of --time-budget.")
@click.option("--progress/--no-progress", default=None,
              help="Live progress on stderr (default: when stderr is a terminal).")
def campaign_command(seeds: str, jobs: int, budget: str | None, out: Path, backend: str,
                     inductor: tuple[str, ...], dynamo: tuple[str, ...],
                     known_issues: str | None, executor: str, address: str | None,
                     timeout: float, strict: bool, unsafe: bool, packs: tuple[str, ...],
                     statements: str, ops: str | None, features: tuple[str, ...],
                     compile_settings: str, reduce_findings: bool, reduce_budget: str,
                     progress: bool | None) -> None:
    """Generate programs, rewrite them with the equivalence pack, validate each four ways,
    and keep one folder per unique finding. Exit 1 when there are new findings."""
    from .job import JobSpec
    from .known import DEFAULT_FILE, KnownIssuesError, load
    from .runner import Campaign, Runner
    from .store import CampaignError, open_campaign

    if address and executor == "local":
        raise click.UsageError("--address is for --executor ray")
    try:
        seed_range = parse_seeds(seeds)
        seconds = parse_duration(budget) if budget else None
        reduce_seconds = parse_duration(reduce_budget)
        settings = _settings(backend, inductor, dynamo)
        gen = _gen(statements, ops, features, compile_settings)
    except click.BadParameter as error:
        raise click.UsageError(str(error)) from None
    try:
        issues = load(None if known_issues == "none" else
                      Path(known_issues) if known_issues else DEFAULT_FILE)
    except KnownIssuesError as error:
        raise click.UsageError(str(error)) from None
    spec = JobSpec(gen=gen, packs=packs, unsafe=unsafe, settings=settings, timeout=timeout,
                   strict=strict, work_root=str(out.resolve() / "work")
                   if executor == "local" else None)
    context = _context(settings, spec)
    try:
        finished = open_campaign(out, {"generator": gen, "rules": list(packs), "unsafe": unsafe,
                                       "settings": settings, "strict": strict,
                                       "torch": context["torch"]}, resume=True)
    except CampaignError as error:
        raise click.UsageError(str(error)) from None
    runner_executor = _executor(executor, spec, jobs, address)
    campaign = Campaign(seed_range, out, runner_executor, context, issues, seconds,
                        reduce_findings, progress, reduce_budget=reduce_seconds)
    try:
        summary = Runner(campaign, finished).run()
    except KeyboardInterrupt:
        click.echo(f"interrupted: finished seeds are in {out / 'journal.jsonl'}; run the same "
                   "command again to resume", err=True)
        sys.exit(130)
    _report(summary, out)
    sys.exit(1 if summary["findings"] else 0)


def _settings(backend: str, inductor: tuple[str, ...],
              dynamo: tuple[str, ...]) -> dict[str, object]:
    """Compile settings from the options, checked before any job starts."""
    settings: dict[str, object] = {"backend": backend}
    try:
        settings.update({f"inductor.{k}": v for k, v in parse_settings(list(inductor)).items()})
        settings.update({f"dynamo.{k}": v for k, v in parse_settings(list(dynamo)).items()})
        chosen = CompileSettings().merged(settings)
    except TargetError as error:
        raise click.BadParameter(str(error)) from None
    if ":" in backend and str(Path.cwd()) not in sys.path:
        # Jobs are spawned with this sys.path: a backend module beside the user is found.
        sys.path.insert(0, str(Path.cwd()))
    check_switches(chosen, Path.cwd())
    return settings


def _gen(statements: str, ops: str | None, features: tuple[str, ...],
         compile_settings: str = "varied") -> dict[str, Any]:
    """GenConfig keywords as JSON-ready values (recorded in campaign.json). Fixed compile
    settings are recorded as campaigns before the variation were (by the key's absence), so
    such a campaign resumes with ``--compile-settings fixed``."""
    from ..generate import GenConfig, default_table

    chosen = sorted(o.strip() for o in ops.split(",")) if ops else None
    unknown = sorted(set(chosen or ()) - set(default_table().by_id()))
    if unknown:
        raise click.BadParameter(f"unknown op ids: {', '.join(unknown)}")
    bounds = _range(statements)
    gen: dict[str, Any] = {"statements": list(bounds), "features": [list(p) for p in
                                                                    _weights(features)],
                           "ops": chosen}
    if compile_settings != "fixed":
        gen["compile_settings"] = compile_settings
    try:
        GenConfig(statements=bounds, features=_weights(features)).weights()
    except ValueError as error:
        raise click.BadParameter(str(error)) from None
    return gen


def _context(settings: dict[str, object], spec: JobSpec) -> dict[str, Any]:
    import torch

    options = " ".join(f"--{key} {value}" for key, value in (
        ("statements", ":".join(map(str, spec.gen["statements"]))),
        ("ops", ",".join(spec.gen["ops"] or [])),
        ("compile-settings", spec.gen.get("compile_settings", "fixed")),
    ) if value) + "".join(f" --feature {name}={weight}" for name, weight in spec.gen["features"])
    return {"torch": torch.__version__, "settings": settings, "rules": list(spec.packs),
            "unsafe": spec.unsafe, "strict": spec.strict, "timeout": spec.timeout,
            "regenerate": f"eqrewrite gen --seed SEED --count 1 {options} -o DIR".replace(
                "  ", " ")}


def _executor(name: str, spec: JobSpec, jobs: int,
              address: str | None) -> LocalExecutor | RayExecutor:
    from .executors import ExecutorError, LocalExecutor, RayExecutor

    if name == "local":
        return LocalExecutor(spec, jobs)
    try:
        return RayExecutor(spec, jobs, address)
    except ExecutorError as error:
        raise click.UsageError(str(error)) from None


def _report(summary: dict[str, Any], out: Path) -> None:
    """The outcome in a few lines on stderr (the JSON summary has everything)."""
    seeds = summary["seeds"]
    classes = ", ".join(f"{outcome_class} {count}"
                        for outcome_class, count in summary["classes"].items())
    click.echo(f"campaign: {seeds['finished']} programs ({seeds['this_run']} this run, "
               f"{summary['programs_per_minute']:.1f}/min; stopped: {summary['stopped_by']}): "
               f"{classes}", err=True)
    for finding in summary["findings"]:
        click.echo(f"  {finding['class']:<26} {finding['folder']}  seeds "
                   f"{','.join(map(str, finding['seeds'][:5]))}  ops "
                   f"{','.join(finding['ops'][:6])}", err=True)
    known = sum(entry["seeds"] for entry in summary["known"])
    if known:
        click.echo(f"  ({known} results matched known issues)", err=True)
    click.echo(f"summary written to {out / 'summary.json'}", err=True)
