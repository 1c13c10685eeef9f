"""One seed of a campaign, run wherever an executor puts it (a local process, a Ray worker).

``run_seed(seed, spec)`` generates the program for the seed, rewrites it with the
equivalence pack through the rewriter's public API, validates both four ways with the
oracle's ``Harness`` and returns a plain, picklable result: the class, the signature's parts,
both sources, the oracle's JSON record of the target, and, for eager-vs-compiled findings,
the oracle's ``RunRequest`` so that the parent can write a reproducer folder. Each process
keeps one warm ``Harness`` (and its worker) across seeds, serving two work folders that hold
the current program and its rewrite.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..formats import CampaignContext, GeneratorRecord
from . import outcome
from .outcome import SeedResult

if TYPE_CHECKING:
    from ..generate import Program
    from ..harness.harness import TargetReport
    from ..judging.settings import Target

# The harness serves these two folders; each seed replaces the file in them.
_TREES = ("original", "rewritten")
# Coverage of a file that never runs: the rewritten tree is then not run again.
_NOTHING = "__eqrewrite_unchanged__.py"


@dataclass(frozen=True)
class JobSpec:
    """Everything a job needs to run any seed: generator, rules and oracle settings. The same
    spec and seed give the same program and rewrite anywhere."""

    gen: GeneratorRecord = field(default_factory=lambda: GeneratorRecord())  # GenConfig's
    packs: tuple[str, ...] = ("equivalences",)
    unsafe: bool = False
    settings: dict[str, Any] = field(default_factory=dict)  # compile settings; beat headers
    timeout: float = 300.0
    memory_limit: int = 8 * 1024**3
    strict: bool = False
    tolerance_scale: float = 1.0
    count_breaks: bool = False
    work_root: str | None = None   # where jobs keep their folders (default: a temp folder)

    def key(self) -> tuple[tuple[str, str], ...]:
        return tuple(sorted((k, repr(v)) for k, v in asdict(self).items()))


class _Job:
    """The per-process state: generator config, rules, work folders and a warm harness."""

    def __init__(self, spec: JobSpec):
        from eqrewrite.rewriter.api import RewriteOptions, load_packs, select_rules

        from ..generate import GenConfig
        from ..harness.harness import Harness, HarnessOptions
        from ..judging.compare import CompareOptions
        from ..judging.settings import CompileSettings

        self.spec = spec
        self.config = GenConfig(**_gen_config(spec.gen))
        self.rewrite_options = RewriteOptions(unsafe=spec.unsafe)
        rules = [rule for pack in load_packs(list(spec.packs)) for rule in pack.rules]
        self.rules = select_rules(rules, self.rewrite_options)
        parent = Path(spec.work_root) if spec.work_root else None
        if parent is not None:
            parent.mkdir(parents=True, exist_ok=True)
        self.folder = Path(tempfile.mkdtemp(prefix=f"job-{os.getpid()}-", dir=parent))
        for tree in _TREES:
            (self.folder / tree).mkdir()
        self.compare = CompareOptions(scale=spec.tolerance_scale, strict=spec.strict)
        options = HarnessOptions(CompileSettings(), dict(spec.settings), self.compare,
                          spec.timeout, spec.memory_limit, spec.count_breaks, False, None)
        self.harness = Harness(self.folder / "original", self.folder / "rewritten", options)

    def close(self) -> None:
        self.harness.close()
        shutil.rmtree(self.folder, ignore_errors=True)


_CURRENT: dict[str, _Job] = {}


def _job(spec: JobSpec) -> _Job:
    """This process's job for ``spec`` (made once; a new spec replaces it)."""
    job = _CURRENT.get("job")
    if job is None or job.spec.key() != spec.key():
        if job is not None:
            job.close()
        job = _CURRENT["job"] = _Job(spec)
    return job


@atexit.register
def _close() -> None:
    job = _CURRENT.pop("job", None)
    if job is not None:
        job.close()


def _gen_config(values: GeneratorRecord) -> dict[str, Any]:
    """GenConfig keywords from JSON-ready values (lists back to tuples and sets). Without a
    ``compile_settings`` key the settings are fixed, as in campaigns recorded before the
    variation (``gen_record`` writes the key only when varied)."""
    config: dict[str, Any] = dict(values)
    config.setdefault("compile_settings", "fixed")
    for key in ("statements", "inputs"):
        if key in config:
            config[key] = tuple(config[key])
    if "features" in config:
        config["features"] = tuple(tuple(pair) for pair in config["features"])
    if config.get("ops") is not None:
        config["ops"] = frozenset(config["ops"])
    return config


def gen_record(statements: tuple[int, int], ops: Sequence[str] | None,
               features: Sequence[tuple[str, float]],
               compile_settings: str = "varied") -> GeneratorRecord:
    """GenConfig keywords as JSON-ready values (recorded in campaign.json), checked:
    ValueError for an unknown op id or feature. Fixed compile settings are recorded as
    campaigns before the variation were (by the key's absence), so such a campaign resumes
    with ``--compile-settings fixed``."""
    from ..generate import GenConfig, default_table

    chosen = sorted(ops) if ops else None
    unknown = sorted(set(chosen or ()) - set(default_table().by_id()))
    if unknown:
        raise ValueError(f"unknown op ids: {', '.join(unknown)}")
    gen: GeneratorRecord = {"statements": list(statements),
                           "features": [list(p) for p in features], "ops": chosen}
    if compile_settings != "fixed":
        gen["compile_settings"] = compile_settings
    GenConfig(statements=statements, features=tuple(features)).weights()
    return gen


def run_context(settings: dict[str, object], spec: JobSpec) -> CampaignContext:
    """What every finding records of the campaign: the torch version, the settings, the
    rules, and the ``eqrewrite gen`` command that regenerates a seed's program."""
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


def run_seed(seed: int, spec: JobSpec) -> SeedResult:
    """Generate, rewrite and validate the program of ``seed``; the result as plain data."""
    started = time.perf_counter()
    job = _job(spec)
    result = _validate(job, seed)
    result["seconds"] = round(time.perf_counter() - started, 3)
    result["pid"] = os.getpid()
    return result


def _validate(job: _Job, seed: int) -> SeedResult:
    from eqrewrite.rewriter.api import RewriteError, rewrite_text

    from ..generate import GenerationError, generate

    try:
        program = generate(seed, job.config)
    except GenerationError as error:
        return {"seed": seed, "class": outcome.GENERATION_FAILED, "detail": str(error)}
    base: SeedResult = {"seed": seed, "ops": program.ops, "features": list(program.features),
            "focus": program.focus, "program": program.source, "file": program.filename,
            "attempts": program.attempts}
    try:
        rewrite = rewrite_text(program.source, job.rules, job.rewrite_options)
    except RewriteError as error:
        return {**base, "class": outcome.REWRITE_ERROR, "verdict": None,
                "detail": f"rewrite failed: {error}", "error": outcome.normalise_error(str(error)),
                "kinds": [], "signature_ops": sorted(program.ops)}
    base["rewritten"] = rewrite.text if rewrite.changed else None
    base["edits"] = sorted({edit.rule.id for _, edit in rewrite.edits})
    report = _oracle(job, program, rewrite.text)
    return {**base, **_judged(job, program, report)}


def _oracle(job: _Job, program: Program, rewritten: str) -> TargetReport:
    """Write both files into the work folders and validate the target four ways."""
    for tree, text in zip(_TREES, (program.source, rewritten)):
        folder = job.folder / tree
        for old in folder.glob("*.py"):
            old.unlink()
        (folder / program.filename).write_text(text, encoding="utf-8")
    original = job.folder / "original" / program.filename
    target = _target_of(job, program)
    coverage = str(original.resolve()) if rewritten != program.source else \
        str(job.folder / "original" / _NOTHING)
    return job.harness.validate(target, (coverage,))


def _judged(job: _Job, program: Program, report: TargetReport) -> SeedResult:
    """Class, signature parts, the oracle's record and (for compiled findings) the request
    a reproducer replays."""
    from ..harness import report as oracle_report

    settings = report.settings
    if settings is None:  # ``Harness.validate`` always sets it
        raise RuntimeError(f"{report.target}: the harness reported no compile settings")
    record = oracle_report.document([report], [], [], settings, 0.0)["targets"][0]
    verdict = report.verdict.value
    outcome_class = outcome.classify(verdict, report.detail)
    result: SeedResult = {"class": outcome_class, "verdict": verdict,
                              "detail": report.detail,
                              "record": record, "confidence": record.get("confidence")}
    if outcome_class == outcome.PASSED:
        return result
    # The program's own compile settings (its header's, over the campaign's): a finding
    # replays only compiled the same way.
    result["compile_settings"] = settings.describe()
    tree = outcome.finding_tree(record)
    divergence_kinds = outcome.divergence(record, tree)
    divergent = outcome_class in (outcome.COMPILER_BUG, outcome.REWRITE_CHANGED,
                                  outcome.NONDETERMINISTIC)
    error = "" if divergent else outcome.normalise_error(_error_text(report.detail))
    names = outcome.spellings(job.config.table)
    ops = _named_ops(error, program.ops, names) or outcome.ops_feeding(
        program.source if tree != "rewritten" else _rewritten_or(program, job),
        list(program.ops), names, divergence_kinds)
    result.update({"tree": tree, "kinds": divergence_kinds, "error": error,
                   "signature_ops": ops})
    if outcome_class == outcome.EXCUSED:  # the rule the semantics triage matched
        result["rule"] = next((f.evidence.cause for f in report.findings
                               if f.verdict is report.verdict and f.evidence), "")
    if (outcome_class in (outcome.COMPILER_BUG, outcome.COMPILE_CRASH)
            and report.reference is not None):
        from ..harness.harness import SEED
        from ..judging.protocol import RunRequest, Variant

        # The request the harness judged (same seed, weights, settings): the reproducer's.
        result["request"] = RunRequest(_target_of(job, program), settings,
                                       Variant.EAGER, SEED, state=report.reference.state,
                                       grad_inputs=report.reference.grad_inputs,
                                       deadline=job.spec.timeout)
        result["compare"] = job.harness.compare_options(settings)
    return result


def _target_of(job: _Job, program: Program) -> Target:
    """The program's target in the original work folder (the generator always writes one)."""
    from ..harness.targets import find_target

    target = find_target(job.folder / "original", job.folder / "original" / program.filename)
    if target is None:
        raise RuntimeError(f"seed {program.seed}: no target {program.target!r} found in "
                           f"{program.filename}")
    return target


def _rewritten_or(program: Program, job: _Job) -> str:
    path = job.folder / "rewritten" / program.filename
    return path.read_text(encoding="utf-8") if path.exists() else program.source


def _error_text(detail: str) -> str:
    """The error itself, without the run label (``original compiled raised ...: ``)."""
    return re.sub(r"^[a-z ]+(\([^)]*\))?: ", "", detail.split(" raised where eager did not: ")[-1])


def _named_ops(error: str, program_ops: dict[str, int], names: dict[str, set[str]]) -> list[str]:
    """Program ops the error text names (``aten.argmin``, ``torch.sort``, ``index_put_``)."""
    if not error:
        return []
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", error))
    return sorted({op for word in words for op in names.get(word, ())} & set(program_ops))
