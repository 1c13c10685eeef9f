"""A block skipped only while compiling, run as eagerly when it cannot break the graph.

Libraries keep compiled runs on a path of their own with ``is_torchdynamo_compiling()``
(transformers) or ``torch.compiler.is_compiling()``, usually to keep a graph break out of
the trace: a check that reads a tensor, a warning. Sometimes the block skipped is plain
tensor code, and then the compiled program computes something eager never does. transformers
4.57 (BART, Blenderbot, Pegasus, Marian, T5, LongT5, Switch, UDOP, Pegasus-X) and 5.24 (the
same and Dia) build a decoder's default mask so::

    if attention_mask is None and not is_torchdynamo_compiling():
        mask_seq_length = past_key_values_length + seq_length
        attention_mask = torch.ones(batch_size, mask_seq_length, device=inputs_embeds.device)

Compiled, the mask stays ``None``, and in 4.57 ``_update_causal_mask`` sizes the causal mask
``past_seen_tokens + sequence_length + 1``: one key position more than the keys, which the
eager attention function adds without cutting it. Dynamo then fails on the original
(``RuntimeError when making fake tensor call``, ``[2, 4, 16, 16] + [2, 1, 16, 17]``) and
runs the frame eagerly, while the model without ``torch.compile`` runs. The test becomes
``attention_mask is None``.

Why eager computes the same, for every input: the compile query is a pure question whose
answer is ``False`` eagerly, so ``not query()`` is ``True`` there and ``A and not query()``
(or ``not query() and A``) takes the branch exactly when ``A`` is truthy, evaluating the
same operands in the same order. Only the test of an ``if`` (or ``elif``) is edited, where
nothing but its truth is read.

Traced, the branch now runs where eager runs it, so the compiled program follows the eager
one. That is a change only where it cannot cost a graph break, proven first, else the code
is left alone:

- the compile query is a call with no argument of ``is_torchdynamo_compiling`` (imported),
  ``torch.compiler.is_compiling``, ``torch.compiler.is_dynamo_compiling`` or
  ``torch._dynamo.is_compiling``, one operand of an ``and`` chain that is the whole test;
- every operand after it (evaluated traced only from now on) is an ``is``/``is not`` test
  of a name or attribute against None, True or False;
- the block is assignments to local names only, of expressions built from names, constants,
  attribute reads, subscripts of a shape or at constant indices and slices (never a tensor
  index, whose result is sized by the data), arithmetic and comparisons (no ``and``,
  ``or``, ``not`` or conditional expression, which would ask a tensor's truth), and calls
  of the tensor
  factories ``torch.ones/zeros/full/arange`` (and their ``_like``) or of ``.size()``,
  ``.dim()``, ``.numel()``: nothing that reads a tensor's data into Python, logs, or calls
  code this file does not show.
"""

from __future__ import annotations

import ast

from ...syntax.pattern import Bindings
from .. import Kind, KindContext, Proposal

# Pure questions whose answer is False when nothing compiles.
_QUERIES = frozenset({"torch.compiler.is_compiling", "torch.compiler.is_dynamo_compiling",
                      "torch._dynamo.is_compiling"})
_TRANSFORMERS_QUERY = "is_torchdynamo_compiling"
# Tensor factories whose result is fixed by their arguments (no data read, no randomness,
# no uninitialised memory).
_FACTORIES = frozenset({"torch.ones", "torch.zeros", "torch.full", "torch.arange",
                        "torch.ones_like", "torch.zeros_like", "torch.full_like"})
_SIZE_METHODS = frozenset({"size", "dim", "numel"})
_SINGLETONS = (None, True, False)


class CompileOnlySkip(Kind):
    name = "compile_only_skip"
    node_types = (ast.If,)

    def tokens(self) -> frozenset[str]:
        return frozenset({"is_compiling", "is_dynamo_compiling", _TRANSFORMERS_QUERY})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not isinstance(node, ast.If):
            return None  # node_types: only `if` statements are offered
        test = node.test
        if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)):
            return None
        at = [i for i, operand in enumerate(test.values) if _skip_test(operand, context)]
        if len(at) != 1:
            return None
        later = test.values[at[0] + 1:]
        if not all(_singleton_test(operand) for operand in later):
            context.note("a block skipped while compiling whose test reads more after the "
                         "compile query than `is None`-style tests: left alone")
            return None
        if not all(_break_free_statement(s, context) for s in node.body):
            context.note("a block skipped while compiling that may break the graph or do "
                         "more than bind locals (a call of unknown code, a read of a "
                         "tensor's data, a store): left alone")
            return None
        kept = [v for i, v in enumerate(test.values) if i != at[0]]
        bindings: Bindings = {f"v{i}": v for i, v in enumerate(kept)}
        return Proposal(" and ".join(f"$v{i}" for i in range(len(kept))), bindings,
                        target=test)


def _skip_test(node: ast.expr, context: KindContext) -> bool:
    """``not query()``, the query a compile test of the list above."""
    if not (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        return False
    call = node.operand
    if not (isinstance(call, ast.Call) and not call.args and not call.keywords):
        return False
    qualname = context.facts.imports.resolve(call.func) or ""
    return qualname in _QUERIES or qualname.rpartition(".")[2] == _TRANSFORMERS_QUERY


def _singleton_test(node: ast.expr) -> bool:
    return (isinstance(node, ast.Compare) and len(node.ops) == 1
            and isinstance(node.ops[0], ast.Is | ast.IsNot)
            and isinstance(node.left, ast.Name | ast.Attribute)
            and isinstance(node.comparators[0], ast.Constant)
            and any(node.comparators[0].value is s for s in _SINGLETONS))


def _break_free_statement(statement: ast.stmt, context: KindContext) -> bool:
    if not isinstance(statement, ast.Assign):
        return False
    targets_local = all(isinstance(n, ast.Name) or isinstance(n, ast.Tuple | ast.List) and all(
        isinstance(e, ast.Name) for e in n.elts) for n in statement.targets)
    return targets_local and _break_free(statement.value, context)


def _break_free(node: ast.expr, context: KindContext) -> bool:
    """Built from names, constants, attribute reads, fixed subscripts, arithmetic,
    comparisons and the calls the module docstring lists."""
    for part in ast.walk(node):
        if isinstance(part, ast.BoolOp | ast.IfExp | ast.NamedExpr | ast.Lambda | ast.Await
                      | ast.Yield | ast.YieldFrom | ast.comprehension | ast.JoinedStr):
            return False
        if isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not):
            return False
        if isinstance(part, ast.Call) and not _known_call(part, context):
            return False
        if isinstance(part, ast.Subscript) and not _fixed_subscript(part):
            return False
    return True


def _fixed_subscript(node: ast.Subscript) -> bool:
    """A read of a shape (``x.shape[k]``, ``x.size()[:2]``) at any index, or any value at
    an index of constants and slices of them: never a boolean or integer tensor index,
    whose result is sized by the data (a graph break by default)."""
    value = node.value
    if isinstance(value, ast.Attribute) and value.attr == "shape" or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr == "size" and not value.args):
        return True
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return all(_constant_index(p) for p in parts)


def _constant_index(node: ast.expr) -> bool:
    if isinstance(node, ast.Slice):
        return all(b is None or _constant_index(b) for b in (node.lower, node.upper, node.step))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _constant_index(node.operand)
    return isinstance(node, ast.Constant)


def _known_call(call: ast.Call, context: KindContext) -> bool:
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords):
        return False
    if context.facts.imports.resolve(call.func) in _FACTORIES:
        return True
    return (isinstance(call.func, ast.Attribute) and call.func.attr in _SIZE_METHODS
            and len(call.args) <= 1 and not call.keywords and context.is_tensor(call.func.value))
