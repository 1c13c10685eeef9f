"""The oracle's formats, in one place: the finding folder (``finding.json`` and the files
beside it, ``reduced/reduction.json``), the campaign folder's ``campaign.json`` and
``summary.json``, the oracle's JSON report, the messages of the minimiser's checking
process, the minimal script's recipe, and the oracle core a reproducer carries. Torch-free
(the stdlib, and the rewriter's atomic write): the campaign, the minimiser and the report
read and write these without torch.

Not in ``judging/``: the judging core is copied into every reproducer, which never reads a finding
folder, and the minimiser's checking process must work with the older cores that old
reproducers carry, so nothing there can rely on this module.

A finding folder (``campaign/store.py`` says what each file holds)::

    finding.json      FindingRecord, with ``format`` (FORMAT); one without it predates the
                      field and is read as format 1, the same fields
    program.py, rewritten.py, tree/<file>
    repro_<target>/   repro.py, state.pt, _eqrewrite_oracle/ (VENDORED, from judging/)
    reduced/          the minimiser's reproducer: the same layout, tree/ inside, and
                      reduction.json
    minimal.py        the minimiser's standalone script

Records are ``TypedDict``s: they are the JSON as it is written, so reading and writing keep
the files byte for byte, and mypy checks every key that crosses a package.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast

from eqrewrite.rewriter.api import write_atomic

FORMAT = 1  # of finding.json; a reader refuses a newer one

# -- the finding folder's names ----------------------------------------------------------------

FINDING = "finding.json"
PROGRAM = "program.py"
REWRITTEN = "rewritten.py"
TREE = "tree"
REDUCED = "reduced"
MINIMAL = "minimal.py"
REDUCTION = "reduction.json"  # in reduced/: what the reduction did
SCRIPT = "repro.py"
STATE = "state.pt"
CORE_PACKAGE = "_eqrewrite_oracle"

# What a reproducer carries of ``judging/``: every module the replay imports, directly or not
# (``nested`` and ``numerics`` hold what older reproducers' ``compare`` and ``judge`` held).
VENDORED = ("settings", "protocol", "nested", "compare", "records", "observe", "reference",
            "semantics", "numerics", "judge", "graphbreaks", "worker", "replay")
_CORE = Path(__file__).with_name("judging")


class FormatError(Exception):
    """A file that is not in a format this eqrewrite reads (the message says why)."""


# -- records -----------------------------------------------------------------------------------


class TargetRecord(TypedDict):
    """A target as the checking process describes it (``name`` and ``file`` only there; the
    report reads the others from the program)."""

    name: NotRequired[str]
    attribute: str
    form: str  # "module" or "function"
    file: NotRequired[str | None]  # relative to the tree; None for a factory's target
    inputs: str | None
    has_init_inputs: bool


class SettingsRecord(TypedDict, total=False):
    """``CompileSettings`` as JSON (all of it, or the fields a reduction changed); the
    switch tables are ``[name, value]`` pairs."""

    backend: str
    mode: str | None
    dynamic: bool | None
    fullgraph: bool
    inductor_config: list[list[Any]]
    dynamo_config: list[list[Any]]
    strict: bool
    raises: bool
    tolerance_scale: float
    inference: bool


class DifferenceRecord(TypedDict, total=False):
    """One difference of the oracle's record."""

    path: str
    kind: str
    message: str


class OracleFindingRecord(TypedDict, total=False):
    """One verdict of the oracle's record, between two runs (``left``, ``right``)."""

    verdict: str
    left: str
    right: str
    differences: list[DifferenceRecord]
    detail: str
    evidence: dict[str, Any] | None
    reproducer: str | None


class OracleRecord(TypedDict, total=False):
    """The oracle's record of one target (``TargetReport``'s JSON); the fields read here."""

    target: str
    verdict: str
    detail: str
    findings: list[OracleFindingRecord]
    settings: SettingsRecord
    confidence: str | None  # of a compiler bug


class OracleDocument(TypedDict):
    """The oracle's JSON report (``--format json``, ``OracleReport.to_json``, the rewrite's
    ``--oracle`` step): the settings, then one record per target, most severe first."""

    torch: str
    settings: SettingsRecord
    worker_start_seconds: float
    targets: list[OracleRecord]
    unvalidated: list[str]
    no_target: list[str]  # why a file declares no target


class RootCauseRecord(TypedDict):
    """The root cause ``campaign/rootcause.py`` gave a finding."""

    key: str
    cause: str
    seeds: list[int]


# ``class`` is a keyword: the functional form.
FindingRecord = TypedDict("FindingRecord", {
    "format": int,
    "class": str,
    "signature": str,
    "verdict": str | None,
    "rule": str | None,
    "confidence": str | None,
    "detail": str | None,
    "tree": str | None,       # where it diverged: "original" or "rewritten"
    "kinds": list[str] | None,
    "signature_ops": list[str] | None,
    "error": str | None,
    "ops": dict[str, int] | None,
    "features": list[str] | None,
    "focus": str | None,
    "edits": list[Any] | None,
    "seeds": list[int],
    "first_seed": int,
    "file": str | None,       # the program's file name in tree/
    "reproducer": str | None,  # the repro_<target>/ folder's name
    "regenerate": str | None,
    "torch": str | None,
    "settings": dict[str, Any] | None,  # the campaign's
    "compile_settings": str | None,
    "oracle": OracleRecord | None,
    "root_cause": RootCauseRecord,
    "duplicate_of": str,
    "layer": str,  # the compiler's layer that raised, when a report measured it
}, total=False)
FindingRecord.__doc__ = """``finding.json``: the class, signature, seeds, ops, the oracle's
record, the settings, and what the root cause merge added (unknown keys are kept)."""


class SignatureRecord(TypedDict):
    """What makes a finding the same finding (``minimising/signature.Signature``)."""

    verdict: str
    exceptions: list[str | None]    # eager's and compiled's exception types
    differences: list[list[str]]    # [path, kind]
    error: str


class CandidateCounts(TypedDict):
    """The minimiser's candidates (``minimising/signature.Tally``)."""

    tried: int
    accepted: int
    timeouts: int
    errors: int
    repeated: int
    by_pass: dict[str, list[int]]   # pass -> [tried, accepted]
    screened_eager: int
    screened_backend: int
    screened_triage: int
    screened_forward: int
    screened_layout: int
    speculative: int
    confirmations: int
    reverted: int
    per_minute: float


class ReductionRecord(TypedDict):
    """``reduced/reduction.json``, and ``eqrewrite reduce --format json``: what the
    reduction did (``minimising/outputs.Result``)."""

    folder: str
    target: str
    signature: SignatureRecord
    before: dict[str, int]          # sizes: lines, statements...
    after: dict[str, int]
    candidates: CandidateCounts
    settings_dropped: list[str]
    jobs: int
    screen_backend: str | None
    confirm_every: int
    reducing_seconds: float
    seconds: float
    stopped: str | None
    weights_dropped: bool
    reduced: str
    minimal: str
    verified: dict[str, int | None]  # script -> exit status
    errors: dict[str, str]           # why a verified script broke


# -- the campaign folder (``campaign/store.py``) ----------------------------------------------


class GeneratorRecord(TypedDict, total=False):
    """The generator's settings as ``campaign.json`` records them (``campaign/job.py``'s
    ``gen_record``); ``compile_settings`` only when varied (absent: fixed)."""

    statements: list[int]           # [low, high]
    features: list[list[Any]]       # [name, weight] pairs
    ops: list[str] | None
    compile_settings: str


class CampaignMeta(TypedDict):
    """``campaign.json``: what a resumed campaign must run with again."""

    generator: GeneratorRecord
    rules: list[str]
    unsafe: bool
    settings: dict[str, object]     # compile settings, as [tool.eqrewrite.oracle] spells them
    strict: bool
    torch: str


class CampaignContext(TypedDict):
    """What every finding of a campaign records of it (``job.run_context``)."""

    torch: str
    settings: dict[str, object]
    rules: list[str]
    unsafe: bool
    strict: bool
    timeout: float
    regenerate: str                 # the ``eqrewrite gen`` command, SEED and DIR to fill in


# One unique finding as ``summary.json`` lists it (functional form: ``class`` is a keyword).
FindingSummary = TypedDict("FindingSummary", {
    "folder": str, "class": str, "rule": str | None, "signature": str, "kinds": list[str],
    "ops": list[str], "error": str, "confidence": str | None, "seeds": list[int]})


class JobFailure(TypedDict):
    """A seed whose job process failed (not journaled: a resumed campaign tries it again)."""

    seed: int
    error: str


class ReductionOutcome(TypedDict, total=False):
    """How a new finding's reduction went (``--reduce``)."""

    status: str
    seconds: float
    budget: float


class RootCauseSummary(TypedDict):
    """One root cause of ``summary.json``: the findings merged under it."""

    root_cause: str
    cause: str
    representative: str
    findings: int
    seeds: list[int]


class SeedCounts(TypedDict):
    asked: int
    first: int | None
    last: int | None
    finished: int
    this_run: int
    resumed: int


class GenerationCounts(TypedDict):
    programs: int
    drafted: int
    validity_rate: float | None


class KnownCount(TypedDict):
    url: str
    seeds: int


class OpCoverage(TypedDict):
    ops_used: int
    uses: dict[str, int]


class CampaignSummary(TypedDict):
    """``summary.json`` (``campaign/runner.py``), rewritten as the campaign goes."""

    seeds: SeedCounts
    stopped_by: str
    executor: str
    jobs: int | None
    elapsed_seconds: float
    job_seconds: float
    programs_per_minute: float
    classes: dict[str, int]
    verdicts: dict[str | None, int]
    rewritten: int
    generation: GenerationCounts
    findings: list[FindingSummary]
    excused: dict[str | None, int]   # programs the semantics triage excused, by rule
    job_failures: list[JobFailure]
    known: list[KnownCount]
    op_coverage: OpCoverage
    rules_applied: dict[str, int]
    reductions: dict[str, ReductionOutcome]   # finding folder -> how its reduction went
    root_causes: list[RootCauseSummary]
    context: CampaignContext


def read_finding(folder: Path) -> FindingRecord:
    """``folder``'s ``finding.json``. FormatError when there is none, it is not a finding
    record, or its format is newer than this one."""
    path = folder / FINDING
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FormatError(f"{folder}: no {FINDING} (not a campaign's finding folder)"
                          ) from None
    except (OSError, ValueError) as error:
        raise FormatError(f"{path}: cannot read: {error}") from None
    if not isinstance(record, dict) or "class" not in record:
        raise FormatError(f"{path}: not a finding record (no 'class')")
    version = record.get("format", 1)
    if not isinstance(version, int) or not 1 <= version <= FORMAT:
        raise FormatError(f"{path}: format {version!r}, but this eqrewrite reads formats 1 to "
                          f"{FORMAT}: read it with the eqrewrite that wrote it, or a newer one")
    return cast(FindingRecord, record)


def write_finding(folder: Path, record: FindingRecord) -> None:
    """Write ``record`` as ``folder``'s ``finding.json`` (atomically), in this format."""
    stamped: FindingRecord = {"format": FORMAT}
    stamped.update(record)
    stamped["format"] = FORMAT
    write_json(folder / FINDING, stamped)


def write_json(path: Path, value: object) -> None:
    """``value`` as indented JSON, atomically: the one layout of the oracle's JSON files."""
    write_atomic(path, (json.dumps(value, indent=1) + "\n").encode("utf-8"))


# -- the core a reproducer carries -------------------------------------------------------------


def vendor_core(package: Path) -> Path:
    """Copy this installation's oracle core into ``package`` (a reproducer's
    ``_eqrewrite_oracle/``): the modules of ``VENDORED``, verbatim. Returns ``package``."""
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text('"""A copy of eqrewrite\'s oracle core."""\n')
    for name in VENDORED:
        shutil.copyfile(_CORE / f"{name}.py", package / f"{name}.py")
    return package


# -- the checking process's messages -----------------------------------------------------------
# One JSON object a line, from ``minimising/reduceworker.py``, which runs this installation's
# copy of itself: no version to check.


class InputRecord(TypedDict, total=False):
    """One input as built for a run: its type, dtype, rank, element count and layout class
    (a dict of flags, or a sparse layout's name); a list's or tuple's items."""

    type: str
    numel: int
    items: list[InputRecord]
    dtype: str
    dim: int
    layout: dict[str, bool] | str


class Description(TypedDict):
    """The checking process's first message: the reproducer it loaded."""

    ready: bool
    root: str
    torch: str
    judge: bool  # its core has replay.judge (else a newer one is vendored)
    has_state: bool
    seed: int
    strict: bool
    scale: float
    target: TargetRecord
    settings: SettingsRecord
    extra_paths: list[str]
    fails: str  # the verdict it shows


class Answer(TypedDict, total=False):
    """A candidate's judgement; or, with ``error``, why there is none (``screened``: the
    screen that refused it). ``seconds``: what answering took."""

    verdict: str
    detail: str
    differences: list[list[str]]  # [path, kind, message]
    exceptions: list[str | None]  # eager's and compiled's exception types
    compiled_error: str | None
    undefined: list[str]
    grad_inputs: bool
    inputs: list[InputRecord]
    error: str
    screened: str  # eager, backend, differences, forward, layout
    seconds: float


class Probe(TypedDict):
    """A ``probe`` request's answer: whether the program draws random numbers, what
    ``get_inputs()`` returns, and each input as a literal (None: none)."""

    rng: bool
    container: str
    literals: list[str | None]
    seconds: NotRequired[float]


# -- the minimal script's recipe ---------------------------------------------------------------


@dataclass(frozen=True)
class Recipe:
    """What the minimal script needs besides the program: how the oracle built and ran it
    (the minimiser's and the report's, for ``minimising/standalone.py``)."""

    target: TargetRecord
    settings: SettingsRecord
    seed: int
    grad_inputs: bool       # floating inputs required grad in the oracle's runs
    grads: bool             # the finding involves gradients: compare them too
    strict: bool
    scale: float
    extra_paths: tuple[str, ...]   # where a ``module:function`` backend imports from
    state: str | None       # path of saved weights, when they could not be dropped
    headline: str           # the finding in one line
    torch_version: str
    # The finding's differences as (path, kind), e.g. ("result['output'][1]", "exact"): what
    # the script compares. Empty: the outputs (and gradients with ``grads``).
    differences: tuple[tuple[str, str], ...] = ()
    reference: bool = False  # the verdict rested on the float64 reference: compare with it
    # The backend read from $TORCH_COMPILE_BACKEND (the compiler bisector's runs set it)
    backend_from_environment: bool = False
    # The program draws random numbers (building it, its inputs or calling it): the script
    # seeds as the oracle did. False only when the minimiser saw it draw none.
    seeded: bool = True
    # What get_inputs() returns, "list", "tuple" or "dict", so the call is ``fn(*args)`` or
    # ``fn(**args)``; None: unknown, decided when the script runs.
    container: str | None = None
