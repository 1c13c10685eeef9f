"""Named predicates that rules use in ``where:`` to restrict their metavariables.

A guard answers True only when it can prove its claim; "don't know" is False,
which is what keeps every rule safe by default.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from ..syntax.enums import ValueKind
from . import knowledge as K
from .inference import NOT_TENSOR, NUMBER, TENSOR, Inference


@dataclass(frozen=True)
class GuardContext:
    """What a guard may consult: the module's inference and the enclosing functions."""

    inference: Inference
    chain: tuple[ast.AST, ...]

    def value_kind(self, node: ast.AST) -> ValueKind:
        """What ``node`` holds in this context (its ``ValueKind``)."""
        return self.inference.value_kind(node, self.chain)


GuardCheck = Callable[[GuardContext, list[ast.AST]], bool]
GUARDS: dict[str, tuple[GuardCheck, str]] = {}


def guard(description: str) -> Callable[[GuardCheck], GuardCheck]:
    """Register a guard under its function name, with the description ``rules show`` prints."""
    def register(function: GuardCheck) -> GuardCheck:
        GUARDS[function.__name__] = (function, description)
        return function
    return register


@guard("every named metavariable is proven to hold a tensor")
def tensor(ctx: GuardContext, nodes: list[ast.AST]) -> bool:
    return all(ctx.value_kind(n) == TENSOR for n in nodes)


@guard("at least one named metavariable is proven to hold a tensor")
def any_tensor(ctx: GuardContext, nodes: list[ast.AST]) -> bool:
    return any(ctx.value_kind(n) == TENSOR for n in nodes)


@guard("every named metavariable is proven to hold something other than a tensor")
def not_tensor(ctx: GuardContext, nodes: list[ast.AST]) -> bool:
    return all(ctx.value_kind(n) in NOT_TENSOR for n in nodes)


@guard("every named metavariable is proven to hold a Python number or bool")
def scalar(ctx: GuardContext, nodes: list[ast.AST]) -> bool:
    return all(ctx.value_kind(n) == NUMBER for n in nodes)


@guard("every named metavariable is proven to hold a tensor or a Python number")
def numeric(ctx: GuardContext, nodes: list[ast.AST]) -> bool:
    return all(ctx.value_kind(n) in (TENSOR, NUMBER) for n in nodes)


@guard("every named metavariable is a literal, a name, or arithmetic on those: code whose "
       "value cannot change if evaluated after its neighbours")
def simple(ctx: GuardContext, nodes: list[ast.AST]) -> bool:
    return all(_is_simple(n) for n in nodes)


@guard("every named metavariable is a numeric literal such as 2, -1 or 0.5")
def literal(ctx: GuardContext, nodes: list[ast.AST]) -> bool:
    return all(_is_number_literal(n) for n in nodes)


@guard("every named metavariable is a plain local name")
def name(ctx: GuardContext, nodes: list[ast.AST]) -> bool:
    return all(isinstance(n, ast.Name) for n in nodes)


@guard("every named metavariable is free of side effects: it calls only known pure functions")
def pure(ctx: GuardContext, nodes: list[ast.AST]) -> bool:
    return all(is_pure(ctx, n) for n in nodes)


def _is_number_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return (isinstance(node, ast.Constant) and isinstance(node.value, int | float)
            and not isinstance(node.value, bool))


_PURE_METHODS = (K.TENSOR_METHODS | K.NUMBER_METHODS | K.TUPLE_WITH_DIM
                 | K.TENSOR_SEQUENCE_FUNCTIONS) - K.RANDOM


def _is_simple(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant | ast.Name):
        return True
    if isinstance(node, ast.UnaryOp):
        return _is_simple(node.operand)
    return isinstance(node, ast.BinOp) and _is_simple(node.left) and _is_simple(node.right)


def is_pure(ctx: GuardContext, root: ast.AST) -> bool:
    """Whether evaluating ``root`` calls only known side-effect-free functions."""
    facts = ctx.inference.facts
    for node in ast.walk(root):
        if isinstance(node, ast.Await | ast.Yield | ast.YieldFrom | ast.NamedExpr | ast.Lambda):
            return False
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        qualname = facts.imports.resolve(func) or ""
        module, _, function = qualname.rpartition(".")
        if module == "math" or _is_pure_torch_function(module, function, node):
            continue
        if isinstance(func, ast.Name) and func.id in (*K.PURE_BUILTINS, K.SELECT_HELPER) and (
                not qualname):
            continue
        if (isinstance(func, ast.Attribute) and func.attr in _PURE_METHODS
                and ctx.value_kind(func.value) == TENSOR):
            continue
        return False
    return True


def _is_pure_torch_function(module: str, function: str, call: ast.Call) -> bool:
    if function in K.RANDOM or any(k.arg == "inplace" for k in call.keywords):
        return False
    if module == "torch":
        return function in K.TORCH_TENSOR_FUNCTIONS | K.TORCH_NUMBER_FUNCTIONS
    return module == "torch.nn.functional" and function in K.FUNCTIONAL_TENSOR_FUNCTIONS
