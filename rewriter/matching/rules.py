"""Rule packs: YAML files of rewrite rules, loaded and validated with precise errors.

A pack is a mapping with ``description`` and ``rules``; each rule is data
(pattern, rewrite, guards, scope, safety) plus the examples that test it. YAML
is read with the safe loader into nodes that keep their line numbers, so every
error names the file, line and column. See docs/writing-rules.md.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import TypedDict

import yaml

from ..analysis.facts.scopes import known_scopes
from ..analysis.guards import GUARDS
from ..analysis.knowledge import PYTHON_BUILTINS
from ..kinds import Kind, KindError, registry
from ..syntax.enums import Context, Safety, Scope
from ..syntax.pattern import (
    NodeKey,
    Pattern,
    PatternError,
    dotted_name,
    metavariable_of,
    metavariables,
    parse_snippet,
)

_PACK_KEYS = {"description", "rules"}
_RULE_KEYS = {"id", "description", "pattern", "rewrite", "kind", "options", "scope", "where",
              "safety", "safety_note", "context", "assume_tensor_params", "examples"}
_EXAMPLE_KEYS = {"before", "after", "unchanged"}
# Packs loaded by this process, by path and bytes: one command reads its packs several times
# (options, the call graph's scopes, each worker), and YAML parsing is a fifth of a warm run.
_LOADED: dict[tuple[str, bytes], RulePack] = {}
_KEPT_PACKS = 16
_SAFETIES = {s.value for s in Safety}
_CONTEXTS = {c.value for c in Context}
_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_META_RE = re.compile(r"^\$([A-Za-z_][A-Za-z_0-9]*)$")


class RuleError(Exception):
    """A rule pack that cannot be used; ``str()`` reads ``file:line:col: message``
    (``file: message`` when no line is known, as for a pack that does not exist)."""

    def __init__(self, path: str, line: int, col: int, message: str):
        super().__init__(f"{path}:{line}:{col}: {message}" if line else f"{path}: {message}")
        self.path, self.line, self.col, self.message = path, line, col, message


@dataclass(frozen=True)
class Example:
    """One embedded example: ``after`` is None for an ``unchanged`` snippet."""

    before: str
    after: str | None
    line: int


@dataclass(frozen=True)
class Condition:
    """One ``where`` entry: a named guard applied to some metavariables."""

    guard: str
    metavariables: tuple[str, ...]


@dataclass
class Rule:
    """One validated rule: a pattern and rewrite template, or a structural kind."""

    id: str
    description: str
    pattern: Pattern | None
    rewrite: str
    where: tuple[Condition, ...] = ()
    scope: frozenset[Scope] = frozenset({Scope.EVERYWHERE})
    safety: Safety = Safety.SAFE
    safety_note: str = ""  # why it is exact, or for an unsafe rule exactly what differs
    context: Context = Context.ANY
    assume_tensor_params: bool = False
    examples: tuple[Example, ...] = ()
    kind: str = "template"
    path: str = ""
    line: int = 0
    rewrite_roots: frozenset[str] = field(default_factory=frozenset)
    implementation: Kind | None = None  # set for every kind but "template"

    @property
    def keys(self) -> list[NodeKey]:
        """The node keys (type, operator type) this rule can match."""
        if self.implementation is not None:
            # a kind on operator nodes (BinOp...) lists its (type, operator type) keys
            keys: tuple[NodeKey, ...] = getattr(self.implementation, "node_keys", ())
            return list(keys) or [
                (t, None) for t in self.implementation.node_types]
        return [self.template_pattern.key]

    @property
    def template_pattern(self) -> Pattern:
        """The pattern of a template rule (a rule of a structural kind has none)."""
        if self.pattern is None:
            raise TypeError(f"rule {self.id!r} is of kind {self.kind!r}: it has no pattern")
        return self.pattern

    def could_match(self, text: str | Callable[[str], bool]) -> bool:
        """A cheap test on a file's text: False means this rule cannot match there.

        ``text`` may be a function saying whether a token occurs in the text (a caller
        testing many rules remembers the answers: rules share tokens)."""
        occurs = text if callable(text) else text.__contains__
        if self.implementation is not None:
            tokens = self.implementation.tokens()
            return not tokens or any(occurs(t) for t in tokens)
        return all(occurs(t) for t in self.template_pattern.required_tokens)


@dataclass
class RulePack:
    """A loaded pack: its rules and a digest of its bytes (part of the cache key)."""

    path: str
    description: str
    rules: list[Rule]
    digest: str


def packaged_packs() -> dict[str, Path]:
    """Rule packs shipped with eqrewrite, by file name."""
    folder = resources.files("eqrewrite.rules")
    return {p.name: Path(str(p)) for p in folder.iterdir() if p.name.endswith(".yaml")}


def resolve_pack(spec: str) -> Path:
    """A pack path, or the name of a packaged pack (``default`` or ``default.yaml``)."""
    path = Path(spec)
    if path.is_file():
        return path
    packaged = packaged_packs()
    name = spec if spec.endswith((".yaml", ".yml")) else spec + ".yaml"
    if "/" not in spec and name in packaged:
        return packaged[name]
    if path.exists():
        raise RuleError(spec, 0, 0, "a folder, not a rule pack" if path.is_dir() else
                        "not a regular file, so not a rule pack")
    raise RuleError(spec, 0, 0, "no such file, and no packaged pack of that name "
                    f"(packaged: {', '.join(sorted(packaged)) or 'none'})")


def load_pack(spec: str) -> RulePack:
    """Load and validate one pack; raise RuleError on the first problem found. A pack this
    process loaded already, with the same bytes, is not parsed again (a copy of its list
    of rules is returned)."""
    path = resolve_pack(spec)
    data = path.read_bytes()
    key = (str(path), data)
    if key not in _LOADED:
        if len(_LOADED) >= _KEPT_PACKS:  # a long-lived process (the import hook) stays small
            del _LOADED[next(iter(_LOADED))]
        _LOADED[key] = _parse_pack(str(path), data)
    pack = _LOADED[key]
    return replace(pack, rules=list(pack.rules))


def _parse_pack(shown: str, data: bytes) -> RulePack:
    try:
        root = yaml.compose(data.decode("utf-8"), Loader=yaml.SafeLoader)
    except UnicodeDecodeError as error:
        raise RuleError(shown, 1, 1, f"not UTF-8: {error.reason}") from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        raise RuleError(shown, mark.line + 1 if mark else 1, mark.column + 1 if mark else 1,
                        f"invalid YAML: {error.problem or error.context}") from None
    reader = _Reader(shown)
    if root is None:
        raise RuleError(shown, 1, 1, "empty rule pack: expected a mapping with 'rules'")
    pack = reader.mapping(root, "the rule pack", _PACK_KEYS, required={"rules"})
    rules_node = pack["rules"]
    if not isinstance(rules_node, yaml.SequenceNode) or not rules_node.value:
        raise reader.error(rules_node, "'rules' must be a non-empty list of rules")
    rules = [_load_rule(reader, node) for node in rules_node.value]
    seen: dict[str, Rule] = {}
    for rule in rules:
        if rule.id in seen:
            raise RuleError(shown, rule.line, 1, f"duplicate rule id {rule.id!r} "
                            f"(first defined on line {seen[rule.id].line})")
        seen[rule.id] = rule
    description = reader.text(pack["description"]) if "description" in pack else ""
    return RulePack(shown, description, rules, hashlib.sha256(data).hexdigest())


class _Reader:
    """Turns YAML nodes into Python values, raising RuleErrors that point at the node."""

    def __init__(self, path: str):
        self.path = path

    def error(self, node: yaml.Node, message: str) -> RuleError:
        return RuleError(self.path, node.start_mark.line + 1, node.start_mark.column + 1, message)

    def mapping(self, node: yaml.Node, what: str, allowed: set[str],
                required: AbstractSet[str] = frozenset()) -> dict[str, yaml.Node]:
        if not isinstance(node, yaml.MappingNode):
            raise self.error(node, f"{what} must be a mapping")
        found: dict[str, yaml.Node] = {}
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else None
            if name not in allowed:
                raise self.error(key, f"unknown key {name!r} in {what} "
                                 f"(expected one of: {', '.join(sorted(allowed))})")
            if name in found:
                raise self.error(key, f"key {name!r} given twice in {what}")
            found[name] = value
        missing = sorted(required - found.keys())
        if missing:
            raise self.error(node, f"{what} is missing required key {missing[0]!r}")
        return found

    def text(self, node: yaml.Node) -> str:
        if not isinstance(node, yaml.ScalarNode) or node.tag != "tag:yaml.org,2002:str":
            raise self.error(node, "expected a string")
        value: str = node.value  # a scalar tagged str holds a str (the stubs say Any)
        return value

    def choice(self, node: yaml.Node, allowed: AbstractSet[str]) -> str:
        value = self.text(node)
        if value not in allowed:
            raise self.error(node, f"expected one of {', '.join(sorted(allowed))}, got {value!r}")
        return value

    def boolean(self, node: yaml.Node) -> bool:
        if not isinstance(node, yaml.ScalarNode) or node.tag != "tag:yaml.org,2002:bool":
            raise self.error(node, "expected true or false")
        return node.value.lower() in ("true", "yes", "on")

    def strings(self, node: yaml.Node) -> list[tuple[str, yaml.Node]]:
        items = node.value if isinstance(node, yaml.SequenceNode) else [node]
        return [(self.text(item), item) for item in items]

    def snippet_error(self, node: yaml.Node, error: PatternError, what: str) -> RuleError:
        # Block scalars start on the line after the key; plain ones on the key's line.
        offset = 1 if isinstance(node, yaml.ScalarNode) and node.style in ("|", ">") else 0
        return RuleError(self.path, node.start_mark.line + offset + error.line,
                         error.col, f"{what} {error}")


def _load_rule(reader: _Reader, node: yaml.Node) -> Rule:
    fields = reader.mapping(node, "a rule", _RULE_KEYS, required={"id", "description"})
    rule_id = reader.text(fields["id"])
    if not _ID_RE.match(rule_id):
        raise reader.error(fields["id"], f"rule id {rule_id!r} must be lower-case words "
                           "joined by '-' (like 'add-to-torch-add')")
    kinds = registry()
    kind = (reader.choice(fields["kind"], {"template", *kinds}) if "kind" in fields
            else "template")
    if kind != "template":
        return _load_kind_rule(reader, node, fields, rule_id, kinds[kind])
    if "options" in fields:
        raise reader.error(fields["options"], "template rules take no 'options'")
    for key in ("pattern", "rewrite"):
        if key not in fields:
            raise reader.error(node, f"rule {rule_id!r} of kind {kind!r} needs {key!r}")
    try:
        pattern = Pattern.compile(reader.text(fields["pattern"]))
    except PatternError as error:
        raise reader.snippet_error(fields["pattern"], error, "pattern") from None
    rewrite = reader.text(fields["rewrite"])
    rewrite_tree = _parse_rewrite(reader, fields["rewrite"], rewrite, pattern)
    return Rule(**_common_fields(reader, node, fields, rule_id, pattern),
                pattern=pattern, rewrite=rewrite.strip(), rewrite_roots=_free_roots(rewrite_tree))


def _load_kind_rule(reader: _Reader, node: yaml.Node, fields: dict[str, yaml.Node],
                    rule_id: str, kind: type[Kind]) -> Rule:
    for key in ("pattern", "rewrite", "where"):
        if key in fields:
            raise reader.error(fields[key], f"rules of kind {kind.name!r} take no {key!r}: "
                               "the kind finds and proves its own matches")
    options_node = fields.get("options")
    options = {}
    if options_node is not None:
        options = {key: reader.text(value) for key, value in
                   reader.mapping(options_node, "options", set(kind.options_schema)).items()}
    try:
        implementation = kind(options)
    except KindError as error:
        raise reader.error(options_node or node, str(error)) from None
    return Rule(**_common_fields(reader, node, fields, rule_id, None), pattern=None, rewrite="",
                implementation=implementation)


class _CommonFields(TypedDict):
    """The fields every rule has, whatever its kind (``Rule``'s keyword arguments)."""

    id: str
    description: str
    where: tuple[Condition, ...]
    scope: frozenset[Scope]
    safety: Safety
    safety_note: str
    context: Context
    assume_tensor_params: bool
    examples: tuple[Example, ...]
    kind: str
    path: str
    line: int


def _common_fields(reader: _Reader, node: yaml.Node, fields: dict[str, yaml.Node], rule_id: str,
                   pattern: Pattern | None) -> _CommonFields:
    # A kind rule (no pattern) with `where` was refused by _load_kind_rule already.
    return _CommonFields(
        id=rule_id,
        description=reader.text(fields["description"]),
        where=tuple(_load_where(reader, fields["where"], pattern))
        if "where" in fields and pattern is not None else (),
        scope=_load_scope(reader, fields["scope"]) if "scope" in fields else frozenset(
            {Scope.EVERYWHERE}),
        safety=Safety(reader.choice(fields["safety"], _SAFETIES)) if "safety" in fields
        else Safety.SAFE,
        safety_note=reader.text(fields["safety_note"]).strip() if "safety_note" in fields else "",
        context=Context(reader.choice(fields["context"], _CONTEXTS)) if "context" in fields
        else Context.ANY,
        assume_tensor_params=(reader.boolean(fields["assume_tensor_params"])
                              if "assume_tensor_params" in fields else False),
        examples=tuple(_load_examples(reader, fields["examples"])) if "examples" in fields
        else (),
        kind=reader.text(fields["kind"]) if "kind" in fields else "template",
        path=reader.path,
        line=node.start_mark.line + 1,
    )


def _parse_rewrite(reader: _Reader, node: yaml.Node, text: str, pattern: Pattern) -> ast.AST:
    try:
        tree = parse_snippet(text)
    except PatternError as error:
        raise reader.snippet_error(node, error, "rewrite") from None
    for name, is_sequence in metavariables(tree).items():
        if name not in pattern.binds:
            raise reader.error(node, f"rewrite uses ${'$$' if is_sequence else ''}{name}, "
                               "which the pattern does not bind")
        if is_sequence != pattern.binds[name]:
            raise reader.error(node, f"${name} is a sequence in one of pattern and rewrite "
                               "and a single expression in the other")
    if isinstance(pattern.tree, ast.expr) and not isinstance(tree, ast.expr):
        raise reader.error(node, "an expression pattern needs an expression rewrite")
    return tree


def _load_where(reader: _Reader, node: yaml.Node, pattern: Pattern) -> list[Condition]:
    if not isinstance(node, yaml.SequenceNode):
        raise reader.error(node, "'where' must be a list such as [tensor: $a, scalar: $b]")
    conditions = []
    for item in node.value:
        entry = reader.mapping(item, "a 'where' entry", set(GUARDS))
        if len(entry) != 1:
            raise reader.error(item, "each 'where' entry names one guard")
        (guard, value), = entry.items()
        names = []
        for text, name_node in reader.strings(value):
            match = _META_RE.match(text)
            if not match:
                raise reader.error(name_node, f"guard {guard!r} takes metavariables like $a, "
                                   f"got {text!r}")
            if match.group(1) not in pattern.binds:
                raise reader.error(name_node, f"{text} is not bound by the pattern")
            names.append(match.group(1))
        conditions.append(Condition(guard, tuple(names)))
    return conditions


def _load_scope(reader: _Reader, node: yaml.Node) -> frozenset[Scope]:
    return frozenset(Scope(reader.choice(item, known_scopes()))
                     for item in (node.value if isinstance(node, yaml.SequenceNode) else [node]))


def _load_examples(reader: _Reader, node: yaml.Node) -> list[Example]:
    if not isinstance(node, yaml.SequenceNode):
        raise reader.error(node, "'examples' must be a list")
    examples = []
    for item in node.value:
        entry = reader.mapping(item, "an example", _EXAMPLE_KEYS)
        line = item.start_mark.line + 1
        if "unchanged" in entry and entry.keys() == {"unchanged"}:
            examples.append(Example(reader.text(entry["unchanged"]), None, line))
        elif entry.keys() == {"before", "after"}:
            examples.append(Example(reader.text(entry["before"]), reader.text(entry["after"]),
                                    line))
        else:
            raise reader.error(item, "an example is either 'before' with 'after', "
                               "or 'unchanged' alone")
    return examples


def _free_roots(tree: ast.AST) -> frozenset[str]:
    """Modules a rewrite refers to: roots of dotted names such as ``torch`` in ``torch.add``."""
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and (name := dotted_name(node)):
            root = name.split(".")[0]
            if not metavariable_of(root) and root not in PYTHON_BUILTINS:
                roots.add(root)
    return frozenset(roots)
