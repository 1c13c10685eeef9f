"""What to do about each site: the rule that fixes it, why the rules did not, a Dynamo
setting, or a human.

The selected packs run over the module exactly as a rewrite would (first round), and each
edit is matched to the sites by span: an edit of a rule whose kind targets the site's
pattern that covers the site (or is covered by it), or any rule's edit with exactly the
site's span. For a site no edit covers, the matcher explains each rule that targets it
(``Matcher.explain``): a failed ``where:`` guard names the metavariable and what it was
inferred to hold; a structural kind that gives no reason gets one from ``reasons.py``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from ..matching.matcher import Decline, Edit, Matcher, Roots, Span
from ..matching.rules import Rule
from ..syntax.pattern import index_key
from .catalogue import PATTERNS, pattern_for_kind
from .detect import Detector, Position, Site, position
from .reasons import Reasons


@dataclass
class Resolution:
    """The outcome for one site."""

    fix: str                        # rule | setting | manual
    edit: Edit | None = None        # the rule's first-round edit, when a rule fixes it
    why_not: dict[str, Any] | None = None     # {"rules", "stage", "reason", "remedy"}


class Resolver:
    """Runs the rules over one module and resolves its sites."""

    def __init__(self, detector: Detector, text: str, rules: list[Rule],
                 assume_tensor_params: bool, sites: list[Site],
                 selected: list[Rule] | None = None,
                 packaged_kinds: frozenset[str] = frozenset(),
                 trust_scalar_annotations: bool = True):
        self.detector, self.text, self.rules = detector, text, rules
        self.selected = rules if selected is None else selected  # before the token filter
        self.assume = assume_tensor_params
        self.reasons = Reasons(detector)
        self.trust = trust_scalar_annotations
        self.matcher = Matcher(text, detector.tree, rules, assume_tensor_params,
                               trust_scalar_annotations, facts=detector.facts)
        # Only the statements holding sites matter: the rules never look further out.
        self.roots = self._roots(sites)
        self.edits = self.matcher.run(self.roots) if rules else []
        self.packaged_kinds = packaged_kinds  # kinds some unselected packaged pack offers
        self._assumed: list[Edit] | None = None

    def resolve(self, site: Site) -> Resolution:
        edit = self._edit_for(site, self.edits)
        if edit is not None:
            return Resolution("rule", edit)
        fallback = "setting" if PATTERNS[site.pattern].settings else "manual"
        return Resolution(fallback, why_not=self._why_not(site))

    def span(self, node: ast.AST) -> Span:
        """Where ``node`` lies; sites and their statements are expressions or statements."""
        if not isinstance(node, ast.expr | ast.stmt):
            raise TypeError(f"a {type(node).__name__} node has no position")
        return self.matcher.span(node)

    def _edit_for(self, site: Site, edits: list[Edit]) -> Edit | None:
        span = self.span(site.node)
        for edit in edits:
            if edit.span == span:
                return edit
            targets = _patterns_of(edit.rule)
            if site.pattern in targets and (_contains(edit.span, span)
                                            or _contains(span, edit.span)):
                return edit
        return None

    # -- why not ----------------------------------------------------------------------------

    def _why_not(self, site: Site) -> dict[str, Any]:
        targeted = [r for r in self.rules if site.pattern in _patterns_of(r)]
        declines = self._declines(site, targeted)
        rule_ids = sorted({r.id for r, _ in declines} | {r.id for r in targeted})
        unproven = self.reasons.unproven(site)
        if unproven is not None and targeted:
            reason, remedy = unproven
            fixer = self._edit_for(site, self._assumed_edits())
            if fixer is not None:
                remedy += f"; then `{fixer.rule.id}` rewrites it"
            return _why(rule_ids, "operand", reason, remedy)
        explained = [(r, d) for r, d in declines if d.message]
        if explained:
            rule, decline = explained[0]
            remedy = ("--scope everywhere" if decline.stage == "scope"
                      else PATTERNS[site.pattern].advice)
            return _why([rule.id], decline.stage, decline.message, remedy)
        if targeted:
            reason, remedy = (unproven if unproven is not None
                              else self.reasons.derive(site))
            return _why(rule_ids, "kind", reason, remedy)
        return self._untargeted(site)

    def _declines(self, site: Site, targeted: list[Rule]) -> list[tuple[Rule, Decline]]:
        """Each targeted rule's reason, and template rules whose pattern matches the site."""
        found = []
        for node in self._candidates(site):
            for rule in self.matcher.by_key.get(index_key(node), ()):
                if not isinstance(node, ast.expr | ast.stmt):
                    continue  # only expressions and statements are ever matched
                if rule.implementation is None or rule in targeted:
                    decline = self.matcher.explain(rule, node, site.chain)
                    if decline is not None and decline.stage != "pattern":
                        found.append((rule, decline))
        return found

    def _candidates(self, site: Site) -> list[ast.AST]:
        """The site's node and its ancestors up to its statement: the nodes a rule for the
        pattern may look at (``print(x)`` is rewritten as its expression statement,
        ``x[m]`` as the reduction call around it)."""
        nodes: list[ast.AST] = [site.node]
        node: ast.AST = site.node
        while not isinstance(node, ast.stmt):
            parent = self.reasons.parent(node, site.chain)
            if parent is None:
                break
            node = parent
            nodes.append(node)
        return nodes

    def _assumed_edits(self) -> list[Edit]:
        """Edits the rules would make with --assume-tensor-params (computed once)."""
        if self._assumed is None:
            self._assumed = [] if self.assume else Matcher(
                self.text, self.detector.tree, self.rules, True, self.trust,
                facts=self.detector.facts).run(self.roots)
        return self._assumed

    def _roots(self, sites: list[Site]) -> Roots:
        """The statement holding each site, with its enclosing functions; outermost only."""
        found: list[tuple[ast.stmt | ast.expr, tuple[ast.AST, ...]]] = []
        for site in sites:
            statement = self._candidates(site)[-1]
            if not isinstance(statement, ast.stmt | ast.expr):
                continue  # no statement around it: nothing a rule could rewrite
            chain = site.chain
            while chain and isinstance(chain[-1], ast.Lambda):
                chain = chain[:-1]  # a lambda never holds a statement
            found.append((statement, chain))
        found.sort(key=lambda pair: _outer_first(position(pair[0])))
        outermost: Roots = []
        for statement, chain in found:
            if outermost and _contains(self.span(outermost[-1][0]), self.span(statement)):
                continue
            outermost.append((statement, chain))
        return outermost

    def _untargeted(self, site: Site) -> dict[str, Any]:
        pattern = PATTERNS[site.pattern]
        selected = sorted(r.id for r in self.selected if site.pattern in _patterns_of(r))
        if selected and site.pattern in _DERIVED_FORMS:
            return _why(selected, "form", *self.reasons.derive(site))
        if selected:
            return _why(selected, "form", "the selected rules for this pattern do not handle "
                        f"this form (`{_head(site.snippet)}`)", pattern.advice)
        offered = [k for k in pattern.kinds if k.split(":")[0] in self.packaged_kinds]
        if offered:
            return _why([], "pack", "no rule of the selected packs targets this pattern",
                        "the graphbreaks pack does: --rules graphbreaks")
        return _why([], "none", "no rule rewrites this pattern: no equivalent graph-friendly "
                    "form can be proven in general", pattern.advice)


# Patterns whose rules only handle some uses: what the use is says why (``x[m]`` escapes).
_DERIVED_FORMS = frozenset({"boolean-mask", "nonzero"})


def _why(rules: list[str], stage: str, reason: str, remedy: str) -> dict[str, Any]:
    return {"rules": rules, "stage": stage, "reason": reason, "remedy": remedy}


def _patterns_of(rule: Rule) -> list[str]:
    if rule.implementation is None:
        return []
    return pattern_for_kind(rule.kind, rule.implementation.options)


def _contains(outer: Span, inner: Span) -> bool:
    return (outer[0], outer[1]) <= (inner[0], inner[1]) and (inner[2], inner[3]) <= (
        outer[2], outer[3])


def _head(code: str) -> str:
    return code if len(code) <= 40 else code[:37] + "..."


def _outer_first(where: Position) -> tuple[int, int, int]:
    """Source order, a statement before those nested in it."""
    return where[0], where[1], -where[2]
