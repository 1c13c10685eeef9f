"""Patterns and templates: Python source with metavariables.

``$a`` matches one expression, ``$$$args`` matches any number of call
arguments, ``$_`` matches anything without binding. Metavariables are not
Python, so the text is first rewritten to placeholder names and parsed with
``ast``; matching compares trees structurally, ignoring positions, formatting
and parentheses, and compares dotted names by the qualified name they resolve
to (so ``torch.where`` also matches ``T.where`` after ``import torch as T``).
"""

from __future__ import annotations

import ast
import io
import keyword
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

_SEQ_PREFIX = "__eqrw_seq_"
_ONE_PREFIX = "__eqrw_mv_"
_WILDCARD = "_"
# String literals are matched first so that a "$" inside one is left alone.
_TOKEN_RE = re.compile(r"""(?P<string>'{3}[\s\S]*?'{3}|"{3}[\s\S]*?"{3}"""
                       r"""|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")"""
                       r"|\$\$\$(?P<sequence>[A-Za-z_][A-Za-z_0-9]*)"
                       r"|\$(?P<single>[A-Za-z_][A-Za-z_0-9]*)")
_IGNORED_FIELDS = frozenset({"ctx", "type_comment", "kind"})
_NEUTRAL_OPERATORS = frozenset({"(", ")", "[", "]", "{", "}", ",", ".", ":"})

# What a metavariable binds: one expression, (``$$$args``) call arguments, or (a kind's
# template line ``$name``) one statement.
Bound = ast.expr | ast.stmt | list[ast.expr | ast.keyword]
Bindings = dict[str, Bound]
# A dotted expression's import-resolved name (``ModuleFacts.imports.resolve``), else None.
Resolve = Callable[[ast.AST], "str | None"]
NodeKey = tuple[type[ast.AST], "type[ast.AST] | None"]  # node type, operator type


class PatternError(ValueError):
    """A pattern or template that does not parse; ``line`` and ``col`` are 1-based."""

    def __init__(self, message: str, line: int = 1, col: int = 1):
        super().__init__(message)
        self.line = line
        self.col = col


def to_placeholders(text: str) -> str:
    """Replace ``$$$x`` and ``$x`` metavariables (outside string literals) by names."""
    def replace(match: re.Match[str]) -> str:
        sequence: str | None = match.group("sequence")
        if sequence:
            return _SEQ_PREFIX + sequence
        single: str | None = match.group("single")
        if single:
            return _ONE_PREFIX + single
        string: str = match.group("string")  # the one group left, so it matched
        return string
    return _TOKEN_RE.sub(replace, text)


def metavariable_of(name: str) -> tuple[str, bool] | None:
    """Return ``(metavariable, is_sequence)`` for a placeholder name, else None."""
    if name.startswith(_SEQ_PREFIX):
        return name[len(_SEQ_PREFIX) :], True
    if name.startswith(_ONE_PREFIX):
        return name[len(_ONE_PREFIX) :], False
    return None


def parse_snippet(text: str) -> ast.AST:
    """Parse a pattern or template as one expression, else as one statement."""
    source = to_placeholders(text.strip())
    try:
        return ast.parse(source, mode="eval").body
    except SyntaxError:
        pass
    try:
        module = ast.parse(source)
    except SyntaxError as error:
        raise PatternError(f"does not parse as Python: {error.msg}", error.lineno or 1,
                           error.offset or 1) from None
    if len(module.body) != 1:
        raise PatternError(f"must be one expression or one statement, found {len(module.body)}")
    return module.body[0]


def dotted_name(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of attributes on a plain name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _fixed_dotted_name(node: ast.AST) -> str | None:
    name = dotted_name(node)
    return None if name is None or metavariable_of(name.split(".")[0]) else name


def metavariables(tree: ast.AST) -> dict[str, bool]:
    """Metavariables used in a parsed snippet, mapped to whether they are sequences."""
    found: dict[str, bool] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and (meta := metavariable_of(node.id)):
            found[meta[0]] = meta[1]
    found.pop(_WILDCARD, None)
    return found


def index_key(node: ast.AST) -> NodeKey:
    """The cheap key under which a pattern is filed: node type and operator type."""
    op = getattr(node, "op", None)
    return type(node), type(op) if op is not None else None


@dataclass
class Pattern:
    """A compiled pattern: its tree and the metavariables it binds."""

    text: str
    tree: ast.AST
    binds: dict[str, bool] = field(default_factory=dict)

    @classmethod
    def compile(cls, text: str) -> Pattern:
        """Parse ``text``; raise PatternError when it is not one expression or statement."""
        tree = parse_snippet(text)
        if isinstance(tree, ast.Name) and metavariable_of(tree.id):
            raise PatternError("a lone metavariable would match every expression")
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and (meta := metavariable_of(node.id)) and meta[1]:
                if not _is_call_argument(tree, node):
                    raise PatternError(f"$$${meta[0]} may only stand among call arguments")
        return cls(text, tree, metavariables(tree))

    @cached_property
    def required_tokens(self) -> frozenset[str]:
        """Text every file this pattern can match must contain: its operators and names,
        except the roots of dotted names (which an import alias can respell)."""
        found = set()
        tokens = list(tokenize.generate_tokens(io.StringIO(to_placeholders(self.text)).readline))
        for token, after in zip(tokens, [*tokens[1:], None]):
            if token.type == tokenize.OP and token.string not in _NEUTRAL_OPERATORS:
                found.add(token.string)
            elif token.type == tokenize.NAME and not metavariable_of(token.string) and not (
                    after and after.string == "."):
                found.add(token.string)
        return frozenset(found)

    @cached_property
    def anchors(self) -> frozenset[str]:
        """Text that lies on the lines of any node this pattern matches: its operators,
        keywords and attribute names (a plain name may be an import alias instead)."""
        found = set()
        tokens = list(tokenize.generate_tokens(io.StringIO(to_placeholders(self.text)).readline))
        for before, token in zip([None, *tokens], tokens):
            if token.type == tokenize.OP and token.string not in _NEUTRAL_OPERATORS:
                found.add(token.string)
            elif token.type == tokenize.NAME and not metavariable_of(token.string) and (
                    keyword.iskeyword(token.string) or (before and before.string == ".")):
                found.add(token.string)
        return frozenset(found)

    @cached_property
    def key(self) -> NodeKey:
        """See ``index_key`` (asked for every rule of every file)."""
        return index_key(self.tree)

    def match(self, node: ast.AST, resolve: Resolve) -> Bindings | None:
        """Bindings of the metavariables if ``node`` matches, else None."""
        bindings: Bindings = {}
        return bindings if self._matcher(node, bindings, resolve) else None

    @cached_property
    def _matcher(self) -> Callable[[object, Bindings, Resolve], bool]:
        return _compile(self.tree)


def _is_call_argument(tree: ast.AST, name: ast.Name) -> bool:
    return any(isinstance(call, ast.Call) and name in call.args for call in ast.walk(tree))


def _compile(pattern: object) -> Callable[[object, Bindings, Resolve], bool]:
    """``_match`` specialised to one pattern: a function per pattern node, so that matching
    (tried on every candidate node of every file) does not re-inspect the pattern."""
    if isinstance(pattern, ast.Name) and (meta := metavariable_of(pattern.id)):
        name = meta[0]
        return lambda target, bindings, resolve: _bind(name, target, bindings)
    if isinstance(pattern, ast.Attribute | ast.Name) and (wanted := _fixed_dotted_name(pattern)):
        return lambda target, bindings, resolve: isinstance(
            target, ast.Attribute | ast.Name) and wanted == (resolve(target)
                                                             or dotted_name(target))
    if isinstance(pattern, ast.Constant):
        value, value_type = pattern.value, type(pattern.value)
        return lambda target, bindings, resolve: (
            type(target) is ast.Constant and type(target.value) is value_type
            and target.value == value)
    if isinstance(pattern, ast.Call):
        return lambda target, bindings, resolve: type(target) is ast.Call and _match_call(
            pattern, target, bindings, resolve)
    if isinstance(pattern, ast.AST):
        node_type = type(pattern)
        fields = [(name, _compile(getattr(pattern, name))) for name in pattern._fields
                  if name not in _IGNORED_FIELDS]

        def node(target: object, bindings: Bindings, resolve: Resolve) -> bool:
            return type(target) is node_type and all(
                match(getattr(target, name, None), bindings, resolve)
                for name, match in fields)
        return node
    if isinstance(pattern, list):
        items = [_compile(p) for p in pattern]
        return lambda target, bindings, resolve: (
            isinstance(target, list) and len(target) == len(items)
            and all(m(t, bindings, resolve) for m, t in zip(items, target)))
    return lambda target, bindings, resolve: pattern == target


def _match(pattern: object, target: object, bindings: Bindings, resolve: Resolve) -> bool:
    if isinstance(pattern, ast.Name) and (meta := metavariable_of(pattern.id)):
        return _bind(meta[0], target, bindings)
    if isinstance(pattern, ast.Attribute | ast.Name) and (wanted := _fixed_dotted_name(pattern)):
        if not isinstance(target, ast.Attribute | ast.Name):
            return False
        return wanted == (resolve(target) or dotted_name(target))
    if isinstance(pattern, ast.AST):
        if type(pattern) is not type(target):
            return False
        # The types are equal: the isinstance tests on ``target`` only tell mypy so.
        if isinstance(pattern, ast.Constant) and isinstance(target, ast.Constant):
            return type(pattern.value) is type(target.value) and pattern.value == target.value
        if isinstance(pattern, ast.Call) and isinstance(target, ast.Call):
            return _match_call(pattern, target, bindings, resolve)
        return all(
            _match(getattr(pattern, name), getattr(target, name, None), bindings, resolve)
            for name in pattern._fields
            if name not in _IGNORED_FIELDS
        )
    if isinstance(pattern, list):
        return (
            isinstance(target, list)
            and len(pattern) == len(target)
            and all(_match(p, t, bindings, resolve) for p, t in zip(pattern, target))
        )
    return pattern == target


def _bind(name: str, target: object, bindings: Bindings) -> bool:
    if not isinstance(target, ast.expr):
        return False
    if name == _WILDCARD:
        return True
    if name in bindings:
        return same_tree(bindings[name], target)
    bindings[name] = target
    return True


def _match_call(pattern: ast.Call, target: ast.Call, bindings: Bindings,
                resolve: Resolve) -> bool:
    if not _match(pattern.func, target.func, bindings, resolve):
        return False
    sequence = [(i, m[0]) for i, a in enumerate(pattern.args)
                if isinstance(a, ast.Name) and (m := metavariable_of(a.id)) and m[1]]
    if not sequence:
        return _match(pattern.args, target.args, bindings, resolve) and _match(
            pattern.keywords, target.keywords, bindings, resolve)
    # One sequence metavariable absorbs the positional arguments between the fixed
    # ones; when it comes last and the pattern names no keywords, the keywords too.
    at, name = sequence[0]
    before, after = pattern.args[:at], pattern.args[at + 1 :]
    if len(target.args) < len(before) + len(after):
        return False
    middle: list[ast.expr | ast.keyword] = [
        *target.args[len(before) : len(target.args) - len(after)]]
    tail = target.args[len(target.args) - len(after) :]
    if not (_match(before, target.args[: len(before)], bindings, resolve)
            and _match(after, tail, bindings, resolve)):
        return False
    keywords = target.keywords
    if not after and not pattern.keywords:
        middle = sorted([*middle, *keywords], key=lambda n: (n.lineno, n.col_offset))
    elif not _match(pattern.keywords, keywords, bindings, resolve):
        return False
    if name in bindings:
        return same_tree(bindings[name], middle)
    if name != _WILDCARD:
        bindings[name] = middle
    return True


def same_tree(a: object, b: object) -> bool:
    """Structural equality of two ast trees (or lists of them), ignoring positions."""
    if isinstance(a, list) or isinstance(b, list):
        return (isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
                and all(same_tree(x, y) for x, y in zip(a, b)))
    if isinstance(a, ast.AST):
        return type(a) is type(b) and all(
            same_tree(getattr(a, f), getattr(b, f, None))
            for f in a._fields if f not in _IGNORED_FIELDS)
    return type(a) is type(b) and a == b
