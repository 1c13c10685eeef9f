"""What one program's validation means for a campaign: its class and its signature.

The class says what kind of outcome it was (a compiler-bug candidate, a rewrite that changed
behaviour, a crash in eager or compiled code, a timeout, nondeterminism, or passed). The
signature says which outcomes are the same finding: the class, the kinds of divergence and
where they are (``output/value``, ``grad/exact``), the table ops that feed the diverging
values, and the error text with numbers, names and addresses normalised. Nothing here
imports torch: it reads the oracle's JSON record and the program's source.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, TypedDict

from ..formats import OracleFindingRecord, OracleRecord

if TYPE_CHECKING:
    from ..generate.table import OpTable
    from ..judging.compare import CompareOptions
    from ..judging.protocol import RunRequest

# One seed's result (``job.run_seed``): pickled from the job process to the runner, which
# adds the signature and what it learnt; the journal keeps its JSON-ready keys (``store.
# JOURNALED``), the finding folder the rest (``store.write_finding``). A ``TypedDict``, not a
# class: the journal line is the dict as it is. Functional form: ``class`` is a keyword.
SeedResult = TypedDict("SeedResult", {
    "seed": int,
    "class": str,
    "detail": str,
    "verdict": str | None,
    "ops": dict[str, int],            # op id -> uses
    "features": list[str],
    "focus": str | None,
    "program": str,                   # the source (not journaled)
    "file": str,
    "attempts": int,
    "rewritten": str | None,          # the rewritten source, None when unchanged
    "edits": list[str],               # the rules that edited it
    "error": str,                     # normalised
    "kinds": list[str],               # divergence kinds
    "signature_ops": list[str],
    "record": OracleRecord,           # the oracle's record of the target
    "confidence": str | None,
    "compile_settings": str,
    "tree": str | None,
    "rule": str,                      # the semantics triage's rule (excused)
    "request": "RunRequest",          # what a reproducer replays (compiled findings)
    "compare": "CompareOptions",
    "seconds": float,
    "pid": int,
    "signature": str,                 # added by the runner
    "known": str,                     # the known issue's URL
    "at": float,                      # seconds into the run
}, total=False)

# Classes, most severe first; everything but PASSED (and the two that are not about the
# compiler: GENERATION_FAILED, REWRITE_ERROR) may become a finding folder.
COMPILER_BUG = "compiler-bug"
REWRITE_CHANGED = "rewrite-changed-behaviour"
COMPILE_CRASH = "compile-crash"
EAGER_CRASH = "eager-crash"
TIMEOUT = "timeout"
NONDETERMINISTIC = "nondeterministic"
# Not a compiler bug: the program's eager behaviour is undefined or unsupported, or only its
# warnings differ (the oracle's semantics triage); kept apart, in ``excused/``, unreported.
EXCUSED = "excused"
REWRITE_ERROR = "rewrite-error"
GENERATION_FAILED = "generation-failed"
PASSED = "passed"
CLASSES = (COMPILER_BUG, REWRITE_CHANGED, COMPILE_CRASH, EAGER_CRASH, TIMEOUT, NONDETERMINISTIC,
           EXCUSED, REWRITE_ERROR, GENERATION_FAILED, PASSED)
EXCUSED_VERDICTS = frozenset({"unsupported", "undefined-behaviour", "warning-only"})
FINDING_CLASSES = frozenset(CLASSES) - {PASSED, GENERATION_FAILED}

_EAGER_LABELS = ("original eager", "rewritten eager")


def classify(verdict: str, detail: str) -> str:
    """The campaign class of an oracle verdict (``detail`` says which run failed)."""
    if verdict == "compiler-bug":
        return COMPILER_BUG
    if verdict == "rewrite-changed-behaviour":
        return REWRITE_CHANGED
    if verdict == "nondeterministic":
        return NONDETERMINISTIC
    if verdict == "timeout":
        return TIMEOUT
    if verdict == "compile-error":
        return COMPILE_CRASH
    if verdict in EXCUSED_VERDICTS:
        return EXCUSED
    if verdict in ("crash", "oom", "error"):
        return EAGER_CRASH if detail.startswith(_EAGER_LABELS) else COMPILE_CRASH
    return PASSED  # passed, numerical-noise


# -- error text ---------------------------------------------------------------------------------

_NORMALISE = (
    (re.compile(r"0x[0-9a-fA-F]+"), "0x?"),
    (re.compile(r"(/[^\s:'\"]+)+\.py(:\d+)?"), "FILE"),
    (re.compile(r"\bgen_\d+\b"), "gen_N"),
    (re.compile(r"\b[vcx]\d+\b"), "VAR"),
    (re.compile(r"-?\d+(\.\d+)?(e[-+]?\d+)?"), "N"),
    (re.compile(r"\s+"), " "),
)


def normalise_error(text: str) -> str:
    """Error text without what varies between programs: numbers, shapes, paths, addresses,
    generated names; the first line only, at most 160 characters."""
    line = next((part for part in text.strip().splitlines() if part.strip()), "")
    for pattern, replacement in _NORMALISE:
        line = pattern.sub(replacement, line)
    return line.strip()[:160]


# -- divergence kinds -----------------------------------------------------------------------------

_AREA = re.compile(r"result\['(\w+)'\]|result\.(\w+)")


def divergence(record: OracleRecord, tree: str | None) -> list[str]:
    """``area/kind`` of every difference the deciding finding lists, sorted and unique:
    ``output/exact``, ``grads/value``, ``exception/exception``..."""
    divergence_kinds: set[str] = set()
    for finding in _deciding(record, tree):
        for difference in finding.get("differences") or []:
            match = _AREA.search(difference.get("path", ""))
            area = (match.group(1) or match.group(2)) if match else "result"
            divergence_kinds.add(f"{area}/{difference.get('kind', '?')}")
    return sorted(divergence_kinds)


def _deciding(record: OracleRecord, tree: str | None) -> list[OracleFindingRecord]:
    """The findings that carry the target's verdict (for ``tree`` when given)."""
    chosen = [f for f in record.get("findings", []) if f.get("verdict") == record["verdict"]]
    if tree is not None:
        chosen = [f for f in chosen if f.get("left", "").startswith(tree)] or chosen
    return chosen


def finding_tree(record: OracleRecord) -> str | None:
    """Which tree (``original``/``rewritten``) the deciding difference was seen in."""
    for finding in _deciding(record, None):
        right = finding.get("right", "")
        for tree in ("original", "rewritten"):
            if right.startswith(tree):
                return tree
    for tree in ("rewritten", "original"):
        if record.get("detail", "").startswith(tree):
            return tree
    return None


# -- ops that feed the diverging values ------------------------------------------------------------


def spellings(table: OpTable) -> dict[str, set[str]]:
    """Every name an op of the table may be called by (function, method, in-place, operator
    node type) → the op ids spelled that way."""
    names: dict[str, set[str]] = {}
    for spec in table.ops:
        for name in (spec.call.rpartition(".")[2], spec.method, spec.inplace, spec.operator):
            if name:
                names.setdefault(name, set()).add(spec.id)
    return names


_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
              ast.Mod: "%", ast.Pow: "**", ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|",
              ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>", ast.Invert: "~",
              ast.USub: "-", ast.Lt: "<", ast.Gt: ">", ast.LtE: "<=", ast.GtE: ">=",
              ast.Eq: "==", ast.NotEq: "!="}


def _ops_in(node: ast.AST, names: dict[str, set[str]], used: set[str]) -> set[str]:
    """Op ids called anywhere in ``node`` (restricted to the program's own ops)."""
    found = set()
    for child in ast.walk(node):
        spelled = None
        if isinstance(child, ast.Call):
            function = child.func
            spelled = function.attr if isinstance(function, ast.Attribute) else (
                function.id if isinstance(function, ast.Name) else None)
        elif isinstance(child, ast.BinOp | ast.UnaryOp | ast.AugAssign):
            spelled = _OPERATORS.get(type(child.op))
        elif isinstance(child, ast.Compare):
            spelled = _OPERATORS.get(type(child.ops[0]))
        found |= names.get(spelled, set()) & used if spelled else set()
    return found


def _written(statement: ast.stmt) -> set[str]:
    """Names a simple statement (re)binds or writes into: targets, subscript and attribute
    bases, receivers of in-place methods."""
    targets: list[ast.AST] = []
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif isinstance(statement, ast.AugAssign | ast.AnnAssign):
        targets = [statement.target]
    elif isinstance(statement, ast.For):
        targets = [statement.target]
    elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        function = statement.value.func
        if isinstance(function, ast.Attribute) and function.attr.endswith("_"):
            targets = [function.value]
    names = set()
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                names.add(node.id)
    return names


def _simple_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements in order, compound ones yielding their header as a statement of its own."""
    for statement in body:
        if isinstance(statement, ast.If | ast.While):
            yield ast.Expr(statement.test)
            yield from _simple_statements(statement.body + statement.orelse)
        elif isinstance(statement, ast.For):
            yield statement
            yield from _simple_statements(statement.body + statement.orelse)
        elif isinstance(statement, ast.Try):
            yield from _simple_statements(statement.body + [s for h in statement.handlers
                                                            for s in h.body])
        elif isinstance(statement, ast.With):
            yield from _simple_statements(statement.body)
        elif not isinstance(statement, ast.FunctionDef):
            yield statement


def _entry(tree: ast.Module) -> ast.FunctionDef | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in ("forward", "program"):
            return node
    return None


def ops_feeding(source: str, program_ops: list[str], names: dict[str, set[str]],
                areas: list[str]) -> list[str]:
    """The program's ops whose results flow into the diverging values: a forward taint over
    the entry function (loops twice, both branches of every ``if``). Outputs are the returned
    names; ``inputs``/``state`` areas also count every written parameter and attribute."""
    tree = ast.parse(source)
    entry = _entry(tree)
    used = set(program_ops)
    if entry is None:
        return sorted(used)
    taint: dict[str, set[str]] = {}
    returned: set[str] = set()
    for _ in range(2):  # a loop's second pass carries what its first pass wrote
        for statement in _simple_statements(entry.body):
            if isinstance(statement, ast.Return) and statement.value is not None:
                returned |= {n.id for n in ast.walk(statement.value) if isinstance(n, ast.Name)}
                continue
            sources = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name)}
            flowing = _ops_in(statement, names, used).union(
                *(taint.get(name, set()) for name in sources))
            for name in _written(statement):  # ``self.x = ...`` writes ``self``
                taint[name] = taint.get(name, set()) | flowing
    sinks = set(returned)
    if any(area.split("/")[0] not in ("output", "result", "exception") for area in areas):
        sinks |= {a.arg for a in entry.args.args} | {"self"}
    if any(area.startswith(("exception", "result")) for area in areas):
        sinks |= set(taint)
    found = set().union(*(taint.get(name, set()) for name in sinks)) if sinks else set()
    return sorted(found or used)


# -- the signature ------------------------------------------------------------------------------


def signature(outcome_class: str, divergence_kinds: list[str], ops: list[str], error: str) -> str:
    """A short stable id for the finding: the same class, divergence kinds, ops and error."""
    text = "|".join([outcome_class, ",".join(divergence_kinds), ",".join(ops), error])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
