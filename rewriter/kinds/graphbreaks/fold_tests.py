"""Truth tests over several tensor flags, read from the data once instead of once per flag.

Each truth value Python takes of a tensor (``if flag:``, and each operand of ``and``,
``or`` and ``not``) is a read of the data: a graph break under Dynamo. Qwen2-Audio
(transformers 4.46-4.57) picks its padding side from two 0-d flags with a chain that reads
them up to five times::

    if _left_padding and not _right_padding: left_padding = True
    elif not _left_padding and _right_padding: left_padding = False
    elif not _left_padding and not _right_padding: left_padding = self.padding_side == "left"
    else: raise ValueError(f"... {attention_mask}")

Its arms assign Python values and raise, so no select expresses it; the least it can cost
is one read. The chain becomes::

    if (_eqrw_arm_614 := int(_eqrw_first_true(l & ~r, ~l & r, ~l & ~r))) == 0: ...
    elif _eqrw_arm_614 == 1: ...
    elif _eqrw_arm_614 == 2: ...
    else: raise ...

``_eqrw_first_true`` computes, as a 0-d tensor, how many tests are false before the first
true one (the arm Python would take); ``int()`` reads it once, in the function itself (a
read inside the helper would break twice: at the call and in the helper). The arms, their
comments and the ``else`` stay as written. A single test over several flags (DETR's ``if
torch.isinf(h).any() or torch.isnan(h).any():``) becomes the flags' ``|``, ``&`` and ``~``:
one read, no helper.

Proven first, else the code is left alone:

- every operand is a 0-d tensor (a reduction over every element, a comparison of one
  with a number, or a name assigned only such values), boolean wherever ``and``, ``or``
  or ``not`` combine it, so the tensor operators give Python's truth values;
- computing every test up front changes nothing: each is pure and cannot raise (names
  bound on every path to the chain, reductions total on empty tensors, elementwise tests,
  comparisons with numbers), as Python would have skipped the tests after the one that
  held;
- the chain is not a select (every arm one tensor assignment to the same name, or one
  tensor return): the select kinds take those with no read at all;
- it lies in a function. The arm's name holds the chain's first line, and only the
  rewritten first test binds it: the other tests' edits require that edit (``requires``),
  so the matcher and the oracle's replays drop them when it is missing, and no ``elif``
  ever reads an arm its chain did not compute.
"""

from __future__ import annotations

import ast
import re
import weakref

from ...analysis.inference import NUMBER, TENSOR
from ...syntax.enums import Level
from ...syntax.pattern import Bindings
from .. import Kind, KindContext, Proposal
from ..conditions import tensor_condition, zero_dim

# Reductions over every element that return a value for an empty tensor (max/min raise).
_TOTAL = frozenset("any all sum mean prod nansum nanmean count_nonzero".split())
# Elementwise tests and conversions that cannot fail on a tensor.
_ELEMENTWISE = frozenset(
    "isnan isinf isfinite isposinf isneginf logical_not bool float int long abs neg".split())


_METAVARIABLE = re.compile(r"\$c(\d+)")


class FoldTests(Kind):
    """An ``if``/``elif`` chain (or one test) over 0-d tensor flags -> one read."""

    name = "fold_tests"
    node_types = (ast.If,)

    def tokens(self) -> frozenset[str]:
        return frozenset({"elif", " and ", " or "})

    def __init__(self, options: dict[str, str]):
        super().__init__(options)
        # The edits a chain's first test planned for its ``elif``s, which the matcher offers
        # after it (source order): the chain is analysed once, and no ``elif`` looks up.
        self._planned: weakref.WeakKeyDictionary[ast.If, Proposal] = (
            weakref.WeakKeyDictionary())

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not isinstance(node, ast.If):
            return None
        planned = self._planned.pop(node, None)
        if planned is not None:
            return planned
        # Cheap first: one test reads several flags only through and/or, a chain needs elif.
        if not (isinstance(node.test, ast.BoolOp) or _elif_of(node) is not None) or not (
                isinstance(context.function, ast.FunctionDef | ast.AsyncFunctionDef)):
            return None
        chain = _chain(node, context)
        if sum(len(b) for _, (_, b) in chain) < 2 or _select_shaped(chain, context):
            return None
        if len(chain) == 1:  # one test combining flags: their tensor operators
            return Proposal(*chain[0][1], Level.EXPRESSION, target=node.test)
        arm = f"_eqrw_arm_{node.lineno}"
        bindings: Bindings = {}
        tests = []
        for index, (link, (text, bound)) in enumerate(chain):
            tests.append(_METAVARIABLE.sub(f"$t{index}_\\1", text))
            bindings.update({f"t{index}_{name[1:]}": value for name, value in bound.items()})
            if index:
                self._planned[link] = Proposal(f"{arm} == {index}", {}, Level.EXPRESSION,
                                               target=link.test, requires=node.test,
                                               settles=True)  # reads a Python int
        return Proposal(f"({arm} := int(_eqrw_first_true({', '.join(tests)}))) == 0",
                        bindings, Level.EXPRESSION, frozenset({"_eqrw_first_true"}),
                        target=node.test)


Test = tuple[str, Bindings]


def _elif_of(link: ast.If) -> ast.If | None:
    """The ``elif`` after ``link`` (its ``else`` holding one ``if`` alone), or None."""
    return link.orelse[0] if len(link.orelse) == 1 and isinstance(link.orelse[0], ast.If) else None


def _chain(head: ast.If, context: KindContext) -> list[tuple[ast.If, Test]]:
    """``head`` and the ``elif``s after it whose tests convert, with their tensor tests."""
    chain: list[tuple[ast.If, Test]] = []
    link: ast.If | None = head
    while link is not None and (test := _converted(link.test, head, context)) is not None:
        chain.append((link, test))
        link = _elif_of(link)
    return chain


def _converted(test: ast.expr, head: ast.If, context: KindContext) -> Test | None:
    """``test`` as tensor operators over its flags, if every flag is a 0-d tensor that may
    be read before the chain's first test (see the module's docstring)."""
    converted = tensor_condition(test, context)
    if converted is None or "_eqrw" in converted[0]:
        return None
    for operand in converted[1].values():
        if not (isinstance(operand, ast.expr) and _flag(operand, head, context)):
            return None
    return converted


def _flag(node: ast.expr, head: ast.If, context: KindContext) -> bool:
    """A 0-d tensor that may be computed where the chain starts."""
    if isinstance(node, ast.Name):
        values = _assigned_values(node.id, context)
        return bool(values) and all(_zero_dim_value(v, context) for v in values) and (
            _bound_at(node.id, head, context))
    return zero_dim(node, context) and _harmless(node, head, context)


def _zero_dim_value(value: ast.expr, context: KindContext) -> bool:
    """A value assigned to a flag that, once the assignment ran, is a 0-d tensor:
    ``zero_dim``, or ``torch.any(x)`` / ``torch.all(x)`` whatever ``x`` is proven to be
    (torch's functions take only tensors: for anything else the assignment raised)."""
    if zero_dim(value, context):
        return True
    qualname = (context.facts.imports.resolve(value.func) or ""
                if isinstance(value, ast.Call) else "")
    return (qualname in ("torch.any", "torch.all") and isinstance(value, ast.Call)
            and len(value.args) == 1 and not value.keywords
            and not isinstance(value.args[0], ast.Starred))


def _harmless(node: ast.expr, head: ast.If, context: KindContext) -> bool:
    """Pure and unable to raise when evaluated where the chain starts."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float)
    if isinstance(node, ast.Name):
        return context.value_kind(node) in (TENSOR, NUMBER) and _bound_at(node.id, head,
                                                                          context)
    if isinstance(node, ast.UnaryOp):
        return _harmless(node.operand, head, context)
    if isinstance(node, ast.Compare):
        sides = [node.left, *node.comparators]
        return (len(sides) == 2 and [context.is_tensor(s) for s in sides].count(True) == 1
                and all(_harmless(s, head, context) for s in sides))
    if not isinstance(node, ast.Call) or node.keywords:
        return False
    func = node.func
    qualname = context.facts.imports.resolve(func) or ""
    if qualname.startswith("torch.") and qualname.count(".") == 1:
        return (qualname[6:] in _TOTAL | _ELEMENTWISE and len(node.args) == 1
                and context.is_tensor(node.args[0]) and _harmless(node.args[0], head, context))
    return (isinstance(func, ast.Attribute) and not node.args and func.attr in _TOTAL
            | _ELEMENTWISE and context.is_tensor(func.value)
            and _harmless(func.value, head, context))


def _assigned_values(name: str, context: KindContext) -> list[ast.expr]:
    """The values of the plain assignments ``name = value`` that are ``name``'s only
    bindings in the function ([] if anything else binds it)."""
    assignments = context.assignments(name)
    if len(assignments) != len(context.binders(name)) or any(
            len(a.targets) != 1 for a in assignments):
        return []  # bound some other way too (a loop, a tuple target, a chained assignment)
    return [a.value for a in assignments]


def _bound_at(name: str, head: ast.If, context: KindContext) -> bool:
    """``name`` is bound on every path to ``head``: a parameter never deleted or assigned
    in a way other than plain assignment, or assigned by a statement earlier in a block
    that holds ``head`` (or a statement around it)."""
    function = context.function
    binders = context.binders(name)
    if any(isinstance(b, ast.Name) and isinstance(b.ctx, ast.Del) for b in binders):
        return False
    if any(isinstance(b, ast.arg) for b in binders) and isinstance(
            function, ast.FunctionDef | ast.AsyncFunctionDef):
        return True
    statements = {id(context.parents.get(b)) for b in binders if isinstance(b, ast.Name)}
    inner: ast.AST = head
    while inner is not function:
        parent = context.parents.get(inner)
        if parent is None:
            return False
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and inner in block and any(
                    id(s) in statements for s in block[:block.index(inner)]):
                return True
        inner = parent
    return False


def _select_shaped(chain: list[tuple[ast.If, Test]], context: KindContext) -> bool:
    """Every arm one tensor assignment to the same name, or one tensor return: a select
    (torch.where, no read at all) is better, and the select kinds make it."""
    last = chain[-1][0]
    arms = [link.body for link, _ in chain] + ([last.orelse] if last.orelse else [])
    statements = [arm[0] for arm in arms if len(arm) == 1]
    if len(statements) != len(arms):
        return False
    if all(isinstance(s, ast.Return) and s.value is not None and context.is_tensor(s.value)
           for s in statements):
        return True
    assigned = {s.targets[0].id for s in statements
                if isinstance(s, ast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name) and context.is_tensor(s.value)}
    return len(assigned) == 1 and all(isinstance(s, ast.Assign) and context.is_tensor(s.value)
                                      for s in statements)
