"""``self.flag = value`` in ``__init__``, a NumPy scalar kept as a module flag.

Model code decides its structure with NumPy in ``__init__`` and keeps the answer:
``add_temporal_downsample = i >= np.log2(spatial_compression_ratio)`` (diffusers' HunyuanVideo
VAEs) is a ``numpy.bool``, handed to a block that stores it (``self.add_temporal_downsample =
add_temporal_downsample``) and tests it in ``forward`` (``if self.add_temporal_downsample:``,
``r1 = 2 if self.add_temporal_downsample else 1``). Dynamo reads a NumPy scalar attribute as
a 0-d array, a tensor in the graph, so each such test is a data-dependent branch: a graph
break per test, per block, per call (27 in a tiny HunyuanImage-Refiner VAE).

The store becomes ``self.flag = _eqrw_plain_flag(value)``: the Python ``bool`` of a NumPy
bool, integer or float scalar, any other value unchanged (the same object). A NumPy scalar
is immutable, so its truth is the same at every later test; a ``bool`` is a constant Dynamo
specialises on. The rewrite is exact for every read that only tests the flag's truth, and the
kind proves that every read in the file is one:

- the attribute is a plain one the class owns (``attributes.owns_plain_attribute``), stored
  only as ``self.flag = ...`` in that class's ``__init__`` (no other store, augmented store
  or ``del`` of an attribute of that name anywhere in the file);
- every load of an attribute of that name in the file, on any object, is truth-tested: the
  test of an ``if``, ``while``, conditional expression or ``assert``, the operand of ``not``,
  or an operand of ``and``/``or`` that is itself truth-tested; at least one is in a method
  of the class other than ``__init__``;
- the name never appears as a string in the file (``getattr(self, "flag")`` would hand the
  value to anything).

The flag is rewritten only where NumPy can reach it (the module imports NumPy, and the value,
or a value the file assigns or passes under the flag's name, refers to it): elsewhere the
store would be exact but pointless. A read from another module sees a Python ``bool`` where it
saw a NumPy bool of the same truth value (``is True``, ``~``, ``type()`` and bool arithmetic
tell them apart): the rule's safety note says so.
"""

from __future__ import annotations

import ast

from ...syntax.enums import Level
from .. import Kind, KindContext, Proposal
from ..attributes import enclosing_class, owner_attribute, owns_plain_attribute

_TRUTH_OWNERS = (ast.If, ast.While, ast.IfExp, ast.Assert)


class NumpyFlag(Kind):
    """``self.flag = value`` in ``__init__`` whose every read in the file is a truth test."""

    name = "numpy_flag"
    node_types = (ast.Assign,)

    def tokens(self) -> frozenset[str]:
        return frozenset({"numpy"})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and owner_attribute(node.targets[0])):
            return None
        target, value = node.targets[0], node.value
        assert isinstance(target, ast.Attribute)
        function = context.function
        cls = enclosing_class(context)
        if (cls is None or not isinstance(function, ast.FunctionDef)
                or function.name != "__init__" or _plain_already(value)):
            return None
        if context.facts.imports.local_name_of("numpy") is None or not (
                _refers_to(value, context) or target.attr in _numpy_names(context)):
            return None
        if not owns_plain_attribute(cls, target.attr):
            return None
        if not _only_truth_tested(target.attr, cls, function, context):
            context.note(f"`self.{target.attr}` may hold a NumPy scalar (a tensor to Dynamo), "
                         "but a read in this file does more than test its truth, or it is "
                         "stored elsewhere: left as it is")
            return None
        return Proposal("_eqrw_plain_flag($v)", {"v": value}, Level.EXPRESSION,
                        frozenset({"_eqrw_plain_flag"}), target=value)


def _plain_already(value: ast.expr) -> bool:
    """A constant (``True``, ``None``, ``0``), a ``bool(...)`` call or an already rewritten
    store: nothing NumPy can reach."""
    if isinstance(value, ast.Constant):
        return True
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and (
        value.func.id in ("bool", "_eqrw_plain_flag"))


def _refers_to(node: ast.AST, context: KindContext) -> bool:
    """Whether ``node`` reads anything the module's NumPy import names."""
    resolve = context.facts.imports.resolve
    return any(isinstance(n, ast.Attribute | ast.Name)
               and (resolved := resolve(n)) is not None
               and (resolved == "numpy" or resolved.startswith("numpy."))
               for n in ast.walk(node))


def _numpy_names(context: KindContext) -> frozenset[str]:
    """Names the module assigns (``name = ...``) or passes (``name=...``) a value that reads
    NumPy: where a flag handed to a constructor comes from."""
    def names() -> frozenset[str]:
        found: set[str] = set()
        for n in context.module_walk():
            if isinstance(n, ast.Assign) and _refers_to(n.value, context):
                found.update(t.id for t in n.targets if isinstance(t, ast.Name))
            elif isinstance(n, ast.keyword) and n.arg and _refers_to(n.value, context):
                found.add(n.arg)
        return frozenset(found)
    return context.module_memo("numpy_flag.names", names)


def _only_truth_tested(name: str, cls: ast.ClassDef, init: ast.FunctionDef,
                       context: KindContext) -> bool:
    """Whether every attribute ``name`` of the module is stored only as ``self.name = ...``
    directly in ``init`` and loaded only where its truth is tested, at least once in another
    method of ``cls``; and no string in the module spells ``name``."""
    parents = context.module_parents()
    read_in_class = False
    for node in context.module_walk():
        if isinstance(node, ast.Constant) and node.value == name:
            return False
        if not (isinstance(node, ast.Attribute) and node.attr == name):
            continue
        if isinstance(node.ctx, ast.Load):
            if not _truth_tested(node, parents):
                return False
            method = _method_of(node, parents)
            read_in_class |= method is not None and method is not init and (
                parents.get(method) is cls)
        elif not (isinstance(node.ctx, ast.Store) and owner_attribute(node)
                  and isinstance(parent := parents.get(node), ast.Assign)
                  and parent.targets == [node] and _method_of(parent, parents) is init):
            return False
    return read_in_class


def _truth_tested(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether only ``node``'s truth is asked for: an ``if``/``while``/conditional/``assert``
    test, ``not``'s operand, or an ``and``/``or`` operand (which the whole may return) whose
    whole is truth-tested."""
    parent = parents.get(node)
    if isinstance(parent, _TRUTH_OWNERS):
        return parent.test is node
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        return True
    if isinstance(parent, ast.BoolOp):
        return _truth_tested(parent, parents)
    return False


def _method_of(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST | None:
    """The innermost function holding ``node``."""
    while (node := parents.get(node)) is not None:  # type: ignore[assignment]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return node
    return None

