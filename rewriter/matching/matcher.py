"""Find the edits rules make in one module, working on the fast ``ast`` tree.

Matching, scopes and guards all run here; libcst (slow to parse) is only used by
``apply.py`` for the statements where this pass found something. Edits carry character
spans so ``apply.py`` can find the same nodes in the libcst tree.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from ..analysis.facts import ModuleFacts
from ..analysis.facts.scopes import in_helper
from ..analysis.guards import GUARDS, GuardContext
from ..analysis.inference import Assumption, Inference
from ..kinds import KindContext, forget_module
from ..syntax.enums import Context, Level, Scope, Stage
from ..syntax.lines import lines_holding, split_lines
from ..syntax.nodes import CHILD_FIELDS, CHILDLESS, NODE_TYPES, Positioned, end_line
from ..syntax.nodes import Span as Span  # re-exported: an edit's spans are the matcher's to give
from ..syntax.pattern import Bindings, Bound, NodeKey, index_key
from .rules import Condition, Rule

Matchable = ast.expr | ast.stmt  # what rules match: patterns parse as one, kinds list theirs
_MATCHABLE = (ast.expr, ast.stmt)
# Subtrees to walk instead of a whole module: (statement, enclosing functions and classes).
Roots = list[tuple[ast.AST, tuple[ast.AST, ...]]]
# Enum members read for every node a rule is tried on, bound once: on Python 3.11, reading
# ``Stage.PATTERN`` is a descriptor call costing about 15 global reads.
_CONDITION, _EXPRESSION, _STATEMENT = Context.CONDITION, Level.EXPRESSION, Level.STATEMENT
_CONTEXT, _PATTERN, _SCOPE = Stage.CONTEXT, Stage.PATTERN, Stage.SCOPE
_KIND, _GUARD = Stage.KIND, Stage.GUARD
_EVERYWHERE_ONLY = frozenset({Scope.EVERYWHERE})
_IGNORE_RE = re.compile(r"#\s*eqrewrite:\s*ignore(?:\[([^\]]*)\])?")
_CONDITION_OWNERS = (ast.If, ast.While, ast.IfExp, ast.Assert)
# Scopes: what a name means inside one of these may differ from outside it.
_LEXICAL_SCOPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
                             ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp})
# f"{x * 2=}" prints its own source text: nothing inside may be rewritten.
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFINITIONS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
_SELF_DOCUMENTING = re.compile(r"=\s*(?:![rsa])?(?::[^{}]*)?\}")
_CONDITION_PARENTS = frozenset({ast.If, ast.While, ast.IfExp, ast.Assert, ast.BoolOp,
                                ast.UnaryOp})


@dataclass(slots=True)  # a dense file has hundreds of thousands of edits
class Edit:
    """One rule application: the node to replace and what its metavariables bound."""

    rule: Rule
    span: Span
    level: Level
    bindings: dict[str, Span | list[Span]]
    renames: dict[str, str] = field(default_factory=dict)
    before: str = ""
    imports: frozenset[str] = frozenset()  # modules the rewrite needs imported
    template: str = ""  # the rule's rewrite, or what its kind proposed
    helpers: frozenset[str] = frozenset()  # helpers.py functions the rewrite calls
    after: str = ""  # filled in by apply.py: the text written in place of the span
    # Metavariables bound to whole statements (a template line ``$name`` stands for them).
    statements: frozenset[str] = frozenset()
    # The span of another edit of the same rule this one needs (see ``with_requirements``).
    requires: Span | None = None
    # Where the notes on a node this edit leaves without a graph break sit (line, 1-based
    # column; see ``Proposal.settles``): they go with the edit.
    settles: tuple[int, int] | None = None


@dataclass(frozen=True)
class Note:
    """A graph break a rule recognised but could not rewrite, and why."""

    rule: str
    line: int
    col: int  # 1-based
    message: str


class Lines:
    """Converts ``ast``'s UTF-8 byte columns to the character columns libcst uses."""

    def __init__(self, text: str):
        self.source = text

    @cached_property
    def lines(self) -> list[str]:
        """Split only when needed: most files have no edit and no f-string to check."""
        return split_lines(self.source)

    def column(self, line: int, byte_col: int) -> int:
        text = self.lines[line - 1] if line <= len(self.lines) else ""
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))

    def text(self, span: Span) -> str:
        """The source text a span covers ("" for a span outside the text)."""
        first, last = span[0] - 1, span[2] - 1
        if not 0 <= first <= last < len(self.lines):
            return ""
        if first == last:
            return self.lines[first][span[1]:span[3]]
        return (self.lines[first][span[1]:] + "".join(self.lines[first + 1:last])
                + self.lines[last][:span[3]])

    def span(self, node: Positioned) -> Span:
        end, end_col = node.end_lineno, node.end_col_offset
        if end is None or end_col is None:
            raise ValueError(f"{type(node).__name__} node has no position (not from ast.parse)")
        return (node.lineno, self.column(node.lineno, node.col_offset),
                end, self.column(end, end_col))


class Comments:
    """The ``# eqrewrite: ignore`` markers of a file, read with tokenize."""

    def __init__(self, text: str):
        self.ignored: dict[int, set[str] | None] = {}
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        except (tokenize.TokenError, SyntaxError):
            tokens = []
        for token in tokens:
            if token.type != tokenize.COMMENT:
                continue
            if match := _IGNORE_RE.search(token.string):
                ids = match.group(1)
                self.ignored[token.start[0]] = (
                    {i.strip() for i in ids.split(",") if i.strip()} if ids else None)

    def suppressed(self, rule_id: str, span: Span) -> bool:
        for line in {span[0], span[2]}:
            if line in self.ignored:
                ids = self.ignored[line]
                if ids is None or rule_id in ids:
                    return True
        return False


def _comment_outside(code: str, span: Span, holes: list[Span]) -> bool:
    """Whether a comment in ``code`` (the source text of ``span``) lies outside every span
    in ``holes``. Only ``code`` is tokenized, not its file: as a node's whole text its
    strings and brackets are closed, and in parentheses its lines need no indentation."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(f"({code}\n)").readline))
    except (tokenize.TokenError, SyntaxError):
        return True  # cannot tell: keep the code as it is
    for token in tokens:
        if token.type == tokenize.COMMENT:
            line, col = token.start
            position = (span[0] + line - 1, span[1] + col - 1 if line == 1 else col)
            if not any(_within(position, hole) for hole in holes):
                return True
    return False


def _within(position: tuple[int, int], span: Span) -> bool:
    return (span[0], span[1]) <= position < (span[2], span[3])


@dataclass(frozen=True)
class Decline:
    """Why a rule leaves a node alone: the check that failed and what it found.

    For ``Stage.KIND`` (a structural kind proposed nothing), ``message`` is the kind's
    ``decline_reason``, or "" when it has none.
    """

    stage: Stage
    message: str


def _decline(why: list[Decline] | None, stage: Stage, message: str) -> Edit | None:
    """``Matcher._attempt``'s answer when a check fails (no edit), noting why if asked."""
    if why is not None:
        why.append(Decline(stage, message))
    return None


class Matcher:
    """Applies a list of rules to one parsed module."""

    def __init__(self, text: str, tree: ast.Module, rules: list[Rule],
                 assume_tensor_params: bool = False, trust_scalar_annotations: bool = True,
                 function_scopes: dict[str, frozenset[str]] | None = None,
                 facts: ModuleFacts | None = None):
        self.text, self.tree = text, tree
        self.assume_tensor_params = assume_tensor_params
        self.trust_scalar_annotations = trust_scalar_annotations
        self.function_scopes = function_scopes
        self.by_key: dict[NodeKey, list[Rule]] = {}
        for rule in rules:
            for key in rule.keys:
                self.by_key.setdefault(key, []).append(rule)
        self._facts = facts  # shared with a caller that already built them (the audit)
        self._inference: dict[Assumption, Inference] = {}
        self._lines = Lines(text)
        self._comments: Comments | None = None
        self._markers = "eqrewrite" in text
        self._self_documenting_text: bool | None = None  # whether any f"{x=}" may be here
        self.edits: list[Edit] = []
        self.notes: list[Note] = []

    @property
    def facts(self) -> ModuleFacts:
        if self._facts is None:
            self._facts = ModuleFacts(self.tree, self.text, self.function_scopes)
        return self._facts

    @property
    def comments(self) -> Comments:
        if self._comments is None:
            self._comments = Comments(self.text)
        return self._comments

    def _self_documenting(self, node: ast.JoinedStr) -> bool:
        # f"{x=}" holds the text "x=" as a constant part: only then is its source looked
        # at, and only if the file holds such text at all (one search, not a split).
        if not any(type(v) is ast.Constant and isinstance(v.value, str) and "=" in v.value
                   for v in node.values):
            return False
        if self._self_documenting_text is None:
            self._self_documenting_text = _SELF_DOCUMENTING.search(self.text) is not None
        return self._self_documenting_text and bool(
            _SELF_DOCUMENTING.search(self._lines.text(self._lines.span(node))))

    def span(self, node: Positioned) -> Span:
        """``node``'s span in characters (ast counts UTF-8 bytes)."""
        return self._lines.span(node)

    def text_of(self, span: Span) -> str:
        """The source text a span covers."""
        return self._lines.text(span)

    def run(self, roots: Roots | None = None,
            progress: Callable[[int], None] | None = None) -> list[Edit]:
        """Walk the whole module (or only the subtrees ``roots``: ``(statement, enclosing
        functions and classes)``, none inside another) and collect edits, outermost first,
        in source order.

        ``progress`` is told the line of each module-level statement as it is reached.
        """
        forget_module(self.tree)  # its body may have been spliced since the last run
        interesting = {key[0] for key in self.by_key}
        conditions = any(r.context == Context.CONDITION for rules in self.by_key.values()
                         for r in rules)
        # Names and constants are a third of all nodes and hold nothing: not even pushed,
        # unless a rule matches them.
        walked = NODE_TYPES - (CHILDLESS - interesting)
        # When every rule's match must hold one of some operators or keywords (`+`, `not`),
        # statements on lines holding none of them are skipped whole.
        anchors = self._anchors()
        marked = lines_holding(self.text, anchors) if anchors else None
        # An explicit stack instead of recursion: this loop visits every node of every
        # file, so it is the rewriter's hottest code.
        stack: list[tuple[ast.AST, tuple[ast.AST, ...], bool]] = (
            [(self.tree, (), False)] if roots is None
            else [(node, chain, False) for node, chain in reversed(roots)])
        push = stack.append
        # The scopes that hold where the walk is, worked out once per chain (nodes of one
        # function come one after another): a rule none of them is in is not tried at all.
        # A third of a graph-break run's attempts were such rules, declined one by one.
        names = frozenset(name for rules in self.by_key.values() for rule in rules
                          for name in rule.scope)
        scoped_chain: tuple[ast.AST, ...] | None = None
        holding: frozenset[str] = frozenset()
        skips = bool(names) and Scope.EVERYWHERE not in names  # code may be out of every scope
        while stack:
            node, chain, in_condition = stack.pop()
            node_type = type(node)
            if progress is not None and not chain and isinstance(node, ast.stmt):
                progress(node.lineno)
            if marked is not None and isinstance(node, ast.stmt):
                decorators: list[ast.expr] | None = getattr(node, "decorator_list", None)
                at = bisect_left(marked, decorators[0].lineno if decorators else node.lineno)
                if at == len(marked) or marked[at] > end_line(node):
                    continue  # no line of this statement holds an anchor
            if node_type in interesting and isinstance(node, _MATCHABLE):
                for rule in self.by_key.get(index_key(node), ()):
                    if chain is not scoped_chain:
                        scoped_chain, holding = chain, self._holding(names, chain)
                    if rule.scope.isdisjoint(holding):
                        continue
                    if self._try(rule, node, chain, in_condition):  # (its scope holds)
                        break
            if node_type in _LEXICAL_SCOPES:
                chain = chain + (node,)
                if node_type in _DEFINITIONS and skips:
                    # A definition no rule's scope holds in or inside: a third of the code
                    # of the files a graph-break run matches (their untraced functions).
                    scoped_chain, holding = chain, self._holding(names, chain)
                    if not holding and not self.facts.scopes.may_hold_inside(names, node):
                        continue
                if (marked is not None and isinstance(node, _DEFS)
                        and not _header_marked(node, marked)):
                    for child in reversed(node.body):
                        push((child, chain, False))
                    continue
            elif isinstance(node, ast.JoinedStr) and self._self_documenting(node):
                continue
            tracks = conditions and node_type in _CONDITION_PARENTS
            for name in CHILD_FIELDS[node_type]:  # reversed: popped in source order
                value = getattr(node, name)
                flag = tracks and _child_in_condition(node, name, in_condition)
                if type(value) is list:
                    for child in reversed(value):
                        if type(child) in walked:
                            push((child, chain, flag))
                elif type(value) in walked:
                    push((value, chain, flag))
        return with_requirements(self.edits)

    def _holding(self, names: frozenset[str], chain: tuple[ast.AST, ...]) -> frozenset[str]:
        """The scopes among ``names`` that hold for code whose enclosing functions and
        classes are ``chain`` (a rule's scope holds when one of its names does). Rules of
        the ``everywhere`` scope alone need no module facts: built only if another does."""
        if names <= _EVERYWHERE_ONLY:
            return frozenset() if in_helper(chain) else names
        scopes = self.facts.scopes
        return frozenset(name for name in names if scopes.in_scope(frozenset((name,)), chain))

    def _anchors(self) -> frozenset[str] | None:
        """Tokens one of which every match lies on a line with, or None if some rule has
        none (a structural kind, or a pattern of names only)."""
        found: set[str] = set()
        for rules in self.by_key.values():
            for rule in rules:
                if (rule.implementation is not None or rule.pattern is None
                        or not rule.pattern.anchors):
                    return None
                found |= rule.pattern.anchors
        # A line with `+=` has a `+`: searching for the shorter token is enough.
        return frozenset(t for t in found if not any(o != t and o in t for o in found))

    def _try(self, rule: Rule, node: Matchable, chain: tuple[ast.AST, ...],
             in_condition: bool) -> bool:
        """Attempt a rule whose scope the walk found to hold here; keep its edit."""
        edit = self._attempt(rule, node, chain, in_condition, scope_holds=True)
        if edit is not None:
            self.edits.append(edit)
        return edit is not None

    def explain(self, rule: Rule, node: Matchable, chain: tuple[ast.AST, ...],
                in_condition: bool = False) -> Decline | None:
        """Why ``rule`` leaves ``node`` alone, or None when it would rewrite it.

        The same checks as a normal run, in the same order; the first that fails is the
        answer (the audit's "why not rewritten"). A kind may explain itself by defining
        ``decline_reason(node, context) -> str | None`` (see ``Decline``).
        """
        why: list[Decline] = []
        if self._attempt(rule, node, chain, in_condition, why) is not None:
            return None
        decline = why[0]
        if decline.stage == Stage.PATTERN:
            return Decline(Stage.PATTERN,
                           f"does not match `{rule.template_pattern.text.strip()}`")
        if decline.stage == Stage.SCOPE:
            return Decline(Stage.SCOPE,
                           f"outside the rule's scope ({', '.join(sorted(rule.scope))})")
        return decline

    def _attempt(self, rule: Rule, node: Matchable, chain: tuple[ast.AST, ...],
                 in_condition: bool, why: list[Decline] | None = None,
                 scope_holds: bool = False) -> Edit | None:
        # ``why`` collects the reason only when explaining: the normal path never builds one.
        # ``scope_holds``: the walk checked the rule's scope already (``_holding``).
        if rule.context == _CONDITION and not in_condition:
            return _decline(why, _CONTEXT, "applies only to values that are truth-tested")
        pattern = rule.pattern  # a template rule's; a kind's rule has an implementation
        matched: Bindings | None = None
        if pattern is not None:
            matched = pattern.match(node, self._resolve)
            if matched is None:
                return _decline(why, _PATTERN, "does not match the rule's pattern")
        if not scope_holds and not self.facts.scopes.in_scope(rule.scope, chain):
            return _decline(why, _SCOPE, "outside the rule's scope")
        inference = self._inference_for(rule)
        context = GuardContext(inference, chain)
        bindings: Bindings
        target: Matchable = node
        requires: Span | None = None
        settles: tuple[int, int] | None = None
        if rule.implementation is not None:
            reasons: list[str] = []
            proposal = rule.implementation.propose(node, KindContext(
                context, lambda: GuardContext(self._assumed_inference(), chain), reasons))
            if proposal is None:
                if why is None:
                    self._note(rule, node, reasons)
                # The audit derives its own, more specific reason when the kind gives none.
                return _decline(why, _KIND, self._kind_reason(rule, node, context, why))
            bindings, template = proposal.bindings, proposal.template
            level, helpers = proposal.level, proposal.helpers
            if proposal.target is not None:
                target = proposal.target
            if proposal.requires is not None:
                requires = self._lines.span(proposal.requires)
            if proposal.settles:
                line, col = self._lines.span(node)[:2]
                settles = (line, col + 1)  # as ``_note`` places the notes on ``node``
        elif matched is not None:
            bindings, template, helpers = matched, rule.rewrite, frozenset()
            level = _STATEMENT if isinstance(node, ast.stmt) else _EXPRESSION
        else:
            raise TypeError(f"rule {rule.id!r} has neither a pattern nor a kind")
        for condition in rule.where:
            check = GUARDS[condition.guard][0]
            if not check(context, [_value(b) for name in condition.metavariables
                                   for b in _as_list(bindings[name])]):
                return _decline(why, _GUARD, self._guard_reason(condition, bindings, context,
                                                                why))
        spelling = self._renames(rule, inference, chain)
        if spelling is None:
            return _decline(why, Stage.NAMES, "a module the rewrite needs is shadowed by a "
                            "local name here")
        span = self._lines.span(target)
        binding_spans = {name: ([self._lines.span(b) for b in bound] if isinstance(bound, list)
                                else self._lines.span(bound))
                         for name, bound in bindings.items()}
        holes = [s for spans in binding_spans.values()
                 for s in (spans if isinstance(spans, list) else [spans])]
        before = self._lines.text(span)
        # Tokenizing the file to find comments costs more than matching it: only done when
        # the text has an ignore marker or a "#" lies in the span.
        if self._markers and self.comments.suppressed(rule.id, span):
            return _decline(why, Stage.SUPPRESSED,
                            "suppressed by an `# eqrewrite: ignore` comment")
        if "#" in before and _comment_outside(before, span, holes):
            return _decline(why, Stage.COMMENT, "a comment inside the code would be lost")
        statements = frozenset(name for name, bound in bindings.items()
                               if isinstance(bound, ast.stmt))
        return Edit(rule, span, level, binding_spans, spelling[0], before,
                    frozenset(spelling[1]), template, helpers, statements=statements,
                    requires=requires, settles=settles)

    def _note(self, rule: Rule, node: Matchable, reasons: list[str]) -> None:
        """Record the graph breaks a kind recognised and left alone (unless suppressed)."""
        if not reasons:
            return
        span = self._lines.span(node)
        if "eqrewrite" in self.text and self.comments.suppressed(rule.id, span):
            return
        self.notes += [Note(rule.id, span[0], span[1] + 1, r) for r in reasons]

    @staticmethod
    def _kind_reason(rule: Rule, node: ast.AST, context: GuardContext,
                     why: list[Decline] | None) -> str:
        if why is None:
            return ""
        explain = getattr(rule.implementation, "decline_reason", None)
        reason = explain(node, KindContext(context)) if callable(explain) else None
        return reason or ""  # "": the kind gave no reason (the audit derives one)

    def _guard_reason(self, condition: Condition, bindings: Bindings, context: GuardContext,
                      why: list[Decline] | None) -> str:
        """The first metavariable the guard fails on, what it holds and its inferred kind."""
        if why is None:
            return ""
        check, description = GUARDS[condition.guard]
        for name in condition.metavariables:
            for bound in _as_list(bindings[name]):
                if not check(context, [_value(bound)]):
                    code = ast.unparse(_value(bound))
                    return (f"guard `{condition.guard}` failed on `${name}` (`{code}`, "
                            f"inferred {context.value_kind(_value(bound))}): {description}")
        names = ", ".join("$" + n for n in condition.metavariables)
        return f"guard `{condition.guard}` failed on {names} together: {description}"

    def _resolve(self, node: ast.AST) -> str | None:
        # A method, not the facts' own: the facts are built only once a pattern needs them.
        return self.facts.imports.resolve(node)

    def _assumed_inference(self) -> Inference:
        """Unannotated parameters taken as tensors everywhere: what graph-break kinds prove
        a rewrite under, before guarding it with a run-time check of those parameters."""
        if "everywhere" not in self._inference:
            self._inference["everywhere"] = Inference(self.facts, "everywhere",
                                                      self.trust_scalar_annotations)
        return self._inference["everywhere"]

    def _inference_for(self, rule: Rule) -> Inference:
        assume = rule.assume_tensor_params or self.assume_tensor_params
        if assume not in self._inference:
            self._inference[assume] = Inference(self.facts, assume,
                                                self.trust_scalar_annotations)
        return self._inference[assume]

    def _renames(self, rule: Rule, inference: Inference,
                 chain: tuple[ast.AST, ...]) -> tuple[dict[str, str], set[str]] | None:
        """How the rewrite must spell each module it uses, and which need importing.

        None when a name the rewrite needs is bound to something else here (for
        example a local variable called ``torch``).
        """
        renames: dict[str, str] = {}
        imports: set[str] = set()
        for module in rule.rewrite_roots:
            local = self.facts.imports.local_name_of(module)
            if local is None:
                local = module
                imports.add(module)
            if inference.lookup(local, chain) not in (None, "object"):
                return None
            if local != module:
                renames[module] = local
        return renames, imports


def _header_marked(node: ast.FunctionDef | ast.AsyncFunctionDef, marked: list[int]) -> bool:
    """Whether a line of ``node``'s header (decorators, parameters, annotations) holds an
    anchor: a third of the nodes walked in a typical module are parameters and their
    annotations, and most headers hold no operator."""
    first = node.body[0].lineno
    if first <= node.lineno:
        return True  # `def f(x=-1): return x`: the header shares a line with the body
    start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
    at = bisect_left(marked, start)
    return at < len(marked) and marked[at] < first


def _child_in_condition(parent: ast.AST, field_name: str, in_condition: bool) -> bool:
    if isinstance(parent, _CONDITION_OWNERS):
        return field_name == "test"
    if isinstance(parent, ast.BoolOp) or (
            isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)):
        return in_condition
    return False


def _as_list(bound: Bound) -> list[ast.expr | ast.keyword]:
    if isinstance(bound, ast.stmt):  # a kind's statement binding: no guard reads one
        raise TypeError("a `where` guard on a metavariable bound to a statement")
    return bound if isinstance(bound, list) else [bound]


def _value(node: ast.expr | ast.keyword) -> ast.expr:
    return node.value if isinstance(node, ast.keyword | ast.Starred) else node


def with_requirements(edits: list[Edit]) -> list[Edit]:
    """``edits`` without those whose required edit (same rule, its span) is not among them:
    a part of a rewrite made of several edits (a folded ``elif`` chain) never lands alone,
    whatever kept the other part out (a suppression comment, another rule, a comment)."""
    if not any(e.requires is not None for e in edits):
        return edits
    while True:
        made = {(e.rule.id, e.span) for e in edits}
        kept = [e for e in edits if e.requires is None or (e.rule.id, e.requires) in made]
        if len(kept) == len(edits):
            return kept
        edits = kept


def find_edits(text: str, tree: ast.Module, rules: list[Rule],
               assume_tensor_params: bool = False, trust_scalar_annotations: bool = True,
               function_scopes: dict[str, frozenset[str]] | None = None,
               progress: Callable[[int], None] | None = None) -> list[Edit]:
    """All edits ``rules`` make in ``tree`` (parsed from ``text``); ``function_scopes`` gives
    the qualified names of the functions in the ``traced``/``profiled`` scopes."""
    return Matcher(text, tree, rules, assume_tensor_params, trust_scalar_annotations,
                   function_scopes).run(progress=progress)

