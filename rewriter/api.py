"""The rewriter's public API: what the oracle, the tests, the benchmarks and other tools use.

Everything outside ``eqrewrite.rewriter`` imports rewriter names from here only, so the
modules behind it can change shape without breaking their users (a test checks the import
graph). Nothing here imports torch or the oracle.

- rule packs: ``load_pack``, ``load_packs``, ``packaged_packs``, ``select_rules``;
- one source text: ``rewrite_text`` returns a ``Rewrite`` (new text and ``Edit``s by round);
- files: ``discover_files``, ``decode``/``encode``/``write_atomic``;
- configuration: ``find_project_root``, ``load_config``;
- static facts the oracle needs to find targets: ``module_class_names``;
- the ``traced`` and ``profiled`` scopes (``FUNCTION_SCOPES``): ``traced_functions``,
  ``function_scopes``, and
  ``function_qualnames`` to name the functions a recorded run saw;
- the graph-break audit: ``WHAT_IF_SWITCHES`` (Dynamo switches and the breaks each may remove).
"""

from __future__ import annotations

import ast

from .audit.catalogue import WHAT_IF as WHAT_IF_SWITCHES
from .callgraph import function_scopes, traced_functions
from .config import Config, ConfigError, find_project_root, load_config
from .discovery import discover as discover_files
from .engine import Rewrite, RewriteError, RewriteOptions, parse, select_rules
from .engine import rewrite_source as rewrite_text
from .facts import FUNCTION_SCOPES, ModuleFacts, qualname
from .files import write_atomic
from .matcher import Edit, find_edits
from .rules import Rule, RuleError, RulePack, load_pack, packaged_packs, resolve_pack
from .sources import Source, SourceError, decode, encode

__all__ = [
    "FUNCTION_SCOPES", "Config", "ConfigError", "Edit", "Rewrite", "RewriteError",
    "RewriteOptions", "Rule",
    "RuleError", "RulePack", "Source", "SourceError", "WHAT_IF_SWITCHES", "apply_edit_subset",
    "decode", "discover_files", "encode", "find_project_root", "first_round_edits",
    "function_qualnames", "function_scopes", "load_config",
    "load_pack", "load_packs", "module_class_names", "packaged_packs", "parse", "resolve_pack",
    "rewrite_text", "select_rules", "traced_functions", "write_atomic",
]


def first_round_edits(text: str, rules: list[Rule], options: RewriteOptions) -> list[Edit]:
    """The edits the first round of ``rewrite_text`` would make (the rollback bisects them)."""
    return find_edits(text, parse(text), rules, options.assume_tensor_params,
                      options.trust_scalar_annotations, options.function_scopes)


def apply_edit_subset(text: str, edits: list[Edit], tree: ast.Module | None = None) -> str:
    """``text`` with only ``edits`` (a subset of ``first_round_edits``) applied, as the
    rewrite applies them: each edit's ``after`` becomes the text written in its place.
    ``tree``: ``text`` already parsed, if the caller has it."""
    from .apply import apply_edits  # libcst loads only when needed

    return apply_edits(text, edits, tree) if edits else text


def load_packs(specs: list[str]) -> list[RulePack]:
    """Load and validate several packs (paths or packaged names); RuleError on the first bad one."""
    return [load_pack(spec) for spec in specs]


def module_class_names(tree: ast.Module) -> list[str]:
    """Names of the ``nn.Module`` subclasses a module defines (directly or through bases)."""
    return [c.name for c in ModuleFacts(tree).module_classes]


def function_qualnames(tree: ast.Module) -> dict[str, tuple[str, int, int]]:
    """``qualname -> (name, first line, last line)`` for every function of a module; the
    first line is that of its first decorator, as in the function's code object."""
    found: dict[str, tuple[str, int, int]] = {}
    stack: list[tuple[ast.AST, tuple[ast.AST, ...]]] = [(tree, ())]
    while stack:
        node, chain = stack.pop()
        for child in ast.iter_child_nodes(node):
            inner = chain + (child,) if isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) else chain
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                found.setdefault(qualname(inner), (child.name, first, child.end_lineno))
            stack.append((child, inner))
    return found
