"""libcst's code generation, watched: where the nodes of a unit's code lie, by character.

``Locator`` generates a unit's code once, counting characters, to find the nodes at the
ranges edits name (``Request``) and the nodes that enclose a target; ``Emitter`` generates
the unit's new code, noting where each rewritten node lands, so that an edit's text needs
no code generation of its own. Both are libcst's ``CodegenState``, which libcst keeps
private: ``libcst_private.py`` gives it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import libcst as cst

from ..matching.matcher import Edit
from .libcst_private import CodegenBase

_EMPTY = cst.Module([])


class Emitter(CodegenBase):
    """Generates a unit's new code, noting where each rewritten expression lands, so
    that the text of each edit (``Edit.after``) needs no code generation of its own."""

    def __init__(self, module: cst.Module, results: dict[int, tuple[Edit, cst.CSTNode]]):
        super().__init__(module.default_indent, module.default_newline)
        self.module, self.watched = module, results
        self.marks: dict[int, int] = {}
        self.placed: dict[int, tuple[int, int]] = {}

    def run(self) -> str:
        self.generate(self.module)
        return "".join(self.tokens)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.watched:
            self.marks[id(node)] = len(self.tokens)

    def after_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.watched:
            self.placed[id(node)] = (self.marks[id(node)], len(self.tokens))

    def code_of(self, node: cst.CSTNode) -> str:
        """The code of ``node`` as generated here (or alone, if it was not: an operand
        that was given parentheses is a copy)."""
        where = self.placed.get(id(node))
        if where is None:
            return _EMPTY.code_for_node(node)
        return "".join(self.tokens[where[0]:where[1]])


class Request:
    """A node wanted at one character range: the first of ``node_type`` there, else the first
    just inside (``ast`` counts a tuple's parentheses, libcst does not), else, for an
    argument, the ``Arg`` around an expression there (``f((a))``: ``ast`` spans ``a``)."""

    __slots__ = ("node_type", "target", "exact", "inner", "around")

    def __init__(self, node_type: type | tuple[type, ...], target: bool):  # see apply._LEVELS
        self.node_type, self.target = node_type, target
        self.exact: cst.CSTNode | None = None
        self.inner: cst.CSTNode | None = None
        self.around: cst.CSTNode | None = None

    @property
    def found(self) -> cst.CSTNode | None:
        """The node found: exact, else just inside, else around; None when none was."""
        return self.exact or self.inner or self.around


class Locator(CodegenBase):
    """Generates a unit's code once, counting characters, to find the nodes at the ranges
    edits name: the same syntactic positions as libcst's ``PositionProvider``, without
    its line and column objects for every node. Also collects the nodes that enclose a
    target (the path the transform must enter)."""

    def __init__(self, module: cst.Module):
        super().__init__(module.default_indent, module.default_newline)
        self.module = module
        self.offset = 0
        self.stack: list[tuple[cst.CSTNode, int]] = []
        self.ranges: dict[int, tuple[int, int]] = {}
        self.wanted: dict[tuple[int, int], list[tuple[str, Request]]] = {}
        self.path: set[int] = set()

    def want(self, where: tuple[int, int], node_type: type | tuple[type, ...],
             target: bool = False) -> Request:
        request = Request(node_type, target)
        self.wanted.setdefault(where, []).append(("exact", request))
        self.wanted.setdefault((where[0] + 1, where[1] - 1), []).append(("inner", request))
        if node_type is cst.Arg:
            self.wanted[where].append(("around", request))
        return request

    def run(self) -> None:
        self.generate(self.module)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        self.offset += sum(map(len, self.indent_tokens))

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.stack.append((node, self.offset))

    def after_codegen(self, node: cst.CSTNode) -> None:
        node, start = self.stack.pop()
        if id(node) not in self.ranges:  # no syntactic position: the whole node's
            where = self.ranges[id(node)] = (start, self.offset)
            if where in self.wanted:
                self._offer(node, where, len(self.stack))

    @contextmanager
    def record_syntactic_position(self, node: cst.CSTNode, *,
                                  start_node: cst.CSTNode | None = None,
                                  end_node: cst.CSTNode | None = None) -> Iterator[None]:
        start = self.offset
        try:
            yield
        finally:
            end = self.offset
            if start_node is not None:
                start = self.ranges[id(start_node)][0]
            if end_node is not None:
                end = self.ranges[id(end_node)][1]
            where = self.ranges[id(node)] = (start, end)
            if where in self.wanted:
                self._offer(node, where, len(self.stack) - 1)  # the node is on the stack

    def _offer(self, node: cst.CSTNode, where: tuple[int, int], depth: int) -> None:
        """``node`` spans ``where``, a wanted range; ``self.stack[:depth]`` are its
        ancestors."""
        for how, request in self.wanted[where]:
            if getattr(request, how) is not None:
                continue
            if how == "around":
                parent = self.stack[depth - 1][0] if depth else None
                if isinstance(node, cst.BaseExpression) and isinstance(parent, cst.Arg):
                    request.around = parent
                continue
            if isinstance(node, request.node_type):
                setattr(request, how, node)
                if request.target:
                    self.path.add(id(node))
                    self._enter(depth)

    def _enter(self, depth: int) -> None:
        """Mark the ancestors as on the path (they are marked root first, so the first one
        found marked has its own ancestors marked)."""
        for index in range(depth - 1, -1, -1):
            key = id(self.stack[index][0])
            if key in self.path:
                return
            self.path.add(key)
