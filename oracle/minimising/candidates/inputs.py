"""Candidates over the program's input data: dimensions of the tensors factories make shrunk
and items of ``torch.tensor([...])`` lists removed (``shape_candidates``), and
``get_inputs()`` returning literals of the inputs it built (``literal_inputs``)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import libcst as cst
from libcst.helpers import get_full_name_for_node

from .trees import Replace, definition, module_names, parse

# -- input shapes -------------------------------------------------------------------------------

# Factories whose leading integer arguments (or first tuple, or ``size=``) are a shape.
_SIZED = frozenset({"randn", "rand", "zeros", "ones", "empty", "full", "randint", "eye",
                    "arange", "randperm"})


_LISTED = frozenset({"tensor", "as_tensor"})  # factories from nested list literals


class _Factories(cst.CSTVisitor):
    def __init__(self, modules: frozenset[str]):
        self.modules = modules
        self.dims: list[cst.Integer] = []
        self.lists: list[cst.List] = []

    def visit_Call(self, node: cst.Call) -> None:
        name = get_full_name_for_node(node.func) or ""
        head, _, last = name.rpartition(".")
        if not (head and head.split(".")[0] in self.modules):
            return
        if last in _SIZED:
            self.dims += _dims(node)
        elif last in _LISTED and node.args and isinstance(node.args[0].value, cst.List):
            self.lists.append(node.args[0].value)


def _dims(call: cst.Call) -> list[cst.Integer]:
    """The integer literals that give a factory call's shape."""
    sized = [arg.value for arg in call.args if arg.keyword is not None
             and arg.keyword.value == "size"]
    sized += [arg.value for arg in call.args if arg.keyword is None
              and isinstance(arg.value, cst.Tuple | cst.List)][:1]
    if sized:
        value = sized[0]
        elements = value.elements if isinstance(value, cst.Tuple | cst.List) else []
        return [e.value for e in elements if isinstance(e.value, cst.Integer)]
    leading = []
    for arg in call.args:
        if arg.keyword is not None or not isinstance(arg.value, cst.Integer):
            break
        leading.append(arg.value)
    return leading


def shape_sites(module: cst.Module) -> tuple[list[cst.Integer], list[cst.List]]:
    visitor = _Factories(module_names(module))
    module.visit(visitor)
    return visitor.dims, visitor.lists


def _shrunk(value: int) -> list[int]:
    return sorted({v for v in (1, value // 2, value - 1) if 1 <= v < value})


def shape_candidates(text: str) -> Iterator[str]:
    """Factory dimensions shrunk (each value everywhere at once, largest first, then one site
    at a time) and items of ``torch.tensor`` lists removed."""
    module = parse(text)
    dims, lists = shape_sites(module)
    values = sorted({d.evaluated_value for d in dims}, reverse=True)
    for value in values:
        sites = [d for d in dims if d.evaluated_value == value]
        for smaller in _shrunk(value):
            yield module.visit(Replace({id(d): d.with_changes(value=str(smaller))
                                         for d in sites})).code
    if len(dims) > 1:
        for site in dims:
            for smaller in _shrunk(site.evaluated_value):
                yield module.visit(Replace({id(site): site.with_changes(
                    value=str(smaller))})).code
    for listed in lists:
        for drop in range(len(listed.elements) if len(listed.elements) > 1 else 0):
            elements = [e for i, e in enumerate(listed.elements) if i != drop]
            elements[-1] = elements[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            yield module.visit(Replace({id(listed): listed.with_changes(
                elements=elements)})).code


# -- literal inputs -----------------------------------------------------------------------------

_TORCH = re.compile(r"\btorch\.")


def literal_inputs(text: str, literals: Sequence[str], as_tuple: bool = False) -> str | None:
    """``text`` with ``get_inputs()`` returning ``literals`` (source text naming the torch
    module ``torch``, as the checking process writes the inputs it built) in a list (or a
    tuple), instead of what it computed; None when the program has no ``get_inputs()`` or
    does not import torch under a name of its own."""
    module = parse(text)
    function = definition(module, "get_inputs")
    torch = _torch_name(module)
    if function is None or torch is None:
        return None
    items = [_TORCH.sub(f"{torch}.", literal) for literal in literals]
    inside = ", ".join(items) + ("," if as_tuple and len(items) == 1 else "")
    returned = f"({inside})" if as_tuple else f"[{inside}]"
    if len(returned) > 80 and len(items) > 1:  # one input a line (libcst adds the block's
        inside = "".join(f"\n    {item}," for item in items)  # indentation to each)
        returned = ("(" if as_tuple else "[") + inside + "\n" + (")" if as_tuple else "]")
    statement = cst.parse_statement(f"return {returned}\n")
    body = function.body.with_changes(body=[statement]) if isinstance(
        function.body, cst.IndentedBlock) else cst.IndentedBlock(body=[statement])
    return module.visit(Replace({id(function): function.with_changes(body=body)})).code


def _torch_name(module: cst.Module) -> str | None:
    """The name the module imports torch itself under (``import torch [as th]``)."""
    found = None
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if get_full_name_for_node(alias.name) == "torch":
                        found = alias.asname.name.value if alias.asname and isinstance(
                            alias.asname.name, cst.Name) else "torch"
    return found
