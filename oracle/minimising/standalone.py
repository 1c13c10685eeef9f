"""The minimal script a maintainer reads: one file to paste into a PyTorch issue.

It holds the program and its inputs, one eager call and one compiled call (with the backward
for a gradient finding), built as the oracle's worker built them (the seed when the program
draws random numbers, module in ``eval()`` mode, floating inputs requiring grad when the
finding needs them, the recorded backend, mode and switches), and a few lines that print
expected (eager) against actual (compiled). It imports only torch (and a custom
``module:function`` backend when the finding used one); no harness is vendored.

Its exit status is the finding's alone: 1 when the comparison shows the difference, or when
the compiled call (or its compiled backward) raises where the same eager code did not (a
compiler error, named so in the last line); 0 when eager and compiled agree; 2, with a line
saying the script is broken, for any other exception (a program that does not import or run
eagerly, a name the harness got wrong), so that a broken script is never taken for a
reproduction. The harness's own names never clash with the program's: one the program binds
too (a target called ``fn``, ``run``, ``torch``...) is renamed (``fn_``).

What it compares is what decided the finding's verdict: the exact differences when there are
any (integers and bools exactly, dtypes, shapes, structure, strides of the outputs, types,
exceptions), else the floating ones, with torch.testing.assert_close's default tolerances
(scaled as the oracle's were), NaN positions compared; against a float64 run of the program
when the oracle's verdict rested on its float64 reference. The reproducer folder beside it
keeps the oracle's full judgement (sensitivity, precision casts).
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass

import libcst as cst

from ..formats import Recipe, SettingsRecord

_HEADER = re.compile(r"^\s*#\s*eqrewrite-oracle:.*\n?", re.MULTILINE)
# The line between the program and the lines that run it: what the report cuts at.
MARKER = "# -- eager vs torch.compile "
# The line before the program (after the imports and the exit-status hook).
PROGRAM = "# -- the program "
FLOATING_KINDS = frozenset({"value", "nan", "inf", "signed_zero", "nan_sign"})
_AREA = re.compile(r"result\['(\w+)'\]|result\.(\w+)")
DIFFERS = "compiled differs from eager"  # how the script's exit message starts
# How the last line of a compiled call's exception starts (exit 1: a compiler error).
RAISED = "torch.compile raised where eager did not"
# How the last line starts when anything else raised (exit 2: the script, not the finding).
BROKEN = "minimal.py is broken, not the finding"
BROKEN_EXIT = 2
_WIDTH = 92  # of the marker lines

def uses_reference(kinds: list[str] | tuple[str, ...], detail: str) -> bool:
    """Did the verdict rest on the float64 reference? Floating values only, and the
    reference agreed with eager (the oracle's ``detail``/evidence says so)."""
    return bool(kinds) and all(k in FLOATING_KINDS for k in kinds) and "value" in kinds and (
        "reference agrees with eager" in detail or detail == "eager")


def minimal_script(program: str, recipe: Recipe) -> str:
    """The text of ``minimal.py`` for ``program`` (the reduced target file)."""
    body = _HEADER.sub("", _without_docstring(program)).strip("\n")
    harness = _harness(recipe)
    renamed = _renamings(body, _names("\n".join((_imports(recipe, True), _HOOK, harness))))
    torch = "torch" in renamed or re.search(r"^import torch\s*$", body, re.MULTILINE) is None
    head = [_rename(_imports(recipe, torch), renamed), "", "", _rename(_HOOK, renamed), "",
            PROGRAM + "-" * (_WIDTH - len(PROGRAM))]
    parts = [_docstring(recipe), "", *head, body, "", "", _rename(harness, renamed)]
    return "\n".join(parts).rstrip() + "\n"


def program_of(script: str) -> str | None:
    """The program part of a script this module (or an earlier version) wrote; None for
    another script."""
    try:
        docstring = ast.get_docstring(ast.parse(script)) or ""
    except SyntaxError:
        return None
    if "written by eqrewrite" not in docstring or MARKER not in script:
        return None
    program = script.split(MARKER, 1)[0]
    if PROGRAM in program:  # the imports and the exit-status hook are the script's own
        program = program.split(PROGRAM, 1)[1].partition("\n")[2]
    return program.strip("\n") + "\n"


# -- exit status ----------------------------------------------------------------------------------

# Installed before the program runs, so that an exception anywhere outside the compiled call
# (the program's imports, eager code, the harness) exits 2, never the finding's 1.
_HOOK = f'''def broken(kind, error, trace):
    """Any exception but the compiled call's: this script is broken, not the finding."""
    sys.__excepthook__(kind, error, trace)
    print(f"{BROKEN} (exit {BROKEN_EXIT}): {{kind.__name__}}: {{error}}",
          file=sys.stderr)
    sys.exit({BROKEN_EXIT})


sys.excepthook = broken
'''


def _imports(recipe: Recipe, torch: bool) -> str:
    """The script's imports: what the harness uses, and torch's config modules."""
    lines = ["import os"] if recipe.backend_from_environment else []
    lines += ["import sys"]
    lines += [] if checks(recipe).exception else ["import traceback"]
    modules = ["import torch"] if torch else []
    for prefix, key in (("torch._inductor.config", "inductor_config"),
                        ("torch._dynamo.config", "dynamo_config")):
        modules += [f"import {prefix}"] if recipe.settings.get(key) else []
    return "\n".join(lines + ([""] + modules if modules else []))


# -- names ------------------------------------------------------------------------------------

# Marks the harness's references to the program's own names (its target, get_inputs), which
# keep their spelling when a harness name is renamed.
_OWN = "__program__"
_KEYWORDS = frozenset({"compiled", "float64"})  # the harness's own keyword parameters
_SKIPPED = frozenset(dir(builtins)) | {_OWN}
_MODULES = frozenset({"os", "sys", "traceback", "torch", "copy"})  # the harness imports


def module_level_names(tree: ast.Module) -> set[str]:
    """The names a module binds at its top level (definitions, assignments, imports)."""
    names: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(statement.name)
        elif isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = statement.targets if isinstance(statement, ast.Assign) else [
                statement.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(statement, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in statement.names)
        else:  # names bound under an if/try at top level count too
            names.update(n.id for n in ast.walk(statement)
                         if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
            names.update(n.name for n in ast.walk(statement)
                         if isinstance(n, ast.FunctionDef | ast.ClassDef))
    return names


def _names(code: str) -> frozenset[str]:
    """The names ``code`` (the harness) binds or reads, builtins and the program's aside."""
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return frozenset(n for n in names if n not in _SKIPPED and not n.startswith("__"))


def _renamings(body: str, harness: frozenset[str]) -> dict[str, str]:
    """The harness's names the program binds too (at module level, or ``global`` in a
    function), each with the fresh name the harness uses instead: the harness would
    otherwise rebind the program's (``fn = fn`` for a target called ``fn``). A module the
    program itself imports under its own name (``import torch``) is shared."""
    tree = ast.parse(body)
    taken = module_level_names(tree) | {name for node in ast.walk(tree)
                                        if isinstance(node, ast.Global) for name in node.names}
    renamed = {}
    for name in sorted(taken & harness):
        if name in _MODULES and _only_imported(tree, name):
            continue
        fresh = f"{name}_"
        while fresh in taken or fresh in harness:
            fresh += "_"
        renamed[name] = fresh
    return renamed


def _only_imported(tree: ast.Module, name: str) -> bool:
    """Whether every module-level binding of ``name`` is ``import name[.sub]``."""
    for statement in tree.body:
        if isinstance(statement, ast.Import):
            if any((a.asname or a.name.split(".")[0]) == name and a.name.split(".")[0] != name
                   for a in statement.names):
                return False
        elif name in module_level_names(ast.Module(body=[statement], type_ignores=[])):
            return False
    return True


class _Rename(cst.CSTTransformer):
    """The harness's names in ``renamed`` spelt anew; attributes, other functions'
    keywords and the program's own names (``__program__.fn``) keep theirs."""

    def __init__(self, renamed: dict[str, str]):
        self.renamed = renamed

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        return updated.with_changes(value=self.renamed.get(updated.value, updated.value))

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute
                        ) -> cst.BaseExpression:
        if isinstance(original.value, cst.Name) and original.value.value == _OWN:
            return original.attr  # the program's own name, as it spells it
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        if original.keyword is not None and original.keyword.value not in _KEYWORDS:
            return updated.with_changes(keyword=original.keyword)  # torch.compile(backend=)
        return updated

    def leave_ImportAlias(self, original: cst.ImportAlias, updated: cst.ImportAlias
                          ) -> cst.ImportAlias:
        name = original.name
        if isinstance(name, cst.Name) and name.value in self.renamed and (
                original.asname is None):  # import torch -> import torch as torch_
            return original.with_changes(asname=cst.AsName(
                name=cst.Name(self.renamed[name.value])))
        return original.with_changes(asname=updated.asname)


def _rename(text: str, renamed: dict[str, str]) -> str:
    """``text`` (harness code) with ``renamed``'s names spelt anew and the program's names
    (``__program__.NAME``) as the program spells them."""
    return cst.parse_module(text).visit(_Rename(renamed)).code.rstrip("\n")


def _without_docstring(program: str) -> str:
    tree = ast.parse(program)
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
            and isinstance(first.value.value, str):
        lines = program.splitlines(keepends=True)
        return "".join(lines[:first.lineno - 1] + lines[first.end_lineno or first.lineno:])
    return program


def _docstring(recipe: Recipe) -> str:
    settings = _describe(recipe.settings)
    headline = recipe.headline.replace('"""', "'''").replace("\\", "\\\\")
    return (f'"""torch.compile ({settings}) and eager disagree: {headline}\n\n'
            f"Minimal reproducer written by eqrewrite (torch {recipe.torch_version}): prints\n"
            "what eager and torch.compile give and exits 1 while they differ (2: the script\n"
            "itself is broken).\n"
            '"""')


def _describe(settings: SettingsRecord) -> str:
    parts = [f"backend={settings['backend']}"]
    parts += [f"{k}={settings[k]}" for k in ("mode", "dynamic") if settings.get(k) is not None]
    parts += ["fullgraph=True"] if settings.get("fullgraph") else []
    parts += ["under torch.no_grad()"] if settings.get("inference") else []
    parts += [f"inductor.{k}={v}" for k, v in settings.get("inductor_config", ())]
    parts += [f"dynamo.{k}={v}" for k, v in settings.get("dynamo_config", ())]
    return ", ".join(parts)


# -- what is compared ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Checks:
    """The parts of a run the script returns and the aspects it compares."""

    parts: tuple[str, ...]   # of "output", "inputs", "grads", "state"
    values: bool             # assert_close (dtypes, shapes, structure, values, NaN)
    strides: bool            # output strides (dimensions of size 1 aside)
    signs: bool              # signs of zero and NaN (strict findings)
    types: bool              # container and value types (an iterator's type included)
    exception: bool          # what each side raises is the outcome


_PARTS = {"output": "output", "inputs_after": "inputs", "grads": "grads",
          "state_after": "state"}


def checks(recipe: Recipe) -> Checks:
    """What decided the verdict: the exact differences when there are any, else the
    floating ones (a floating difference beside an exact one may be Inductor's rounding)."""
    found = list(recipe.differences)
    exact = [(p, k) for p, k in found if k not in FLOATING_KINDS]
    deciding = exact or found
    kinds = {k for _, k in deciding}
    parts = []
    for path, _ in deciding:
        match = _AREA.search(path)
        area = (match.group(1) or match.group(2)) if match else "output"
        part = _PARTS.get(area, "output")
        if part not in parts:
            parts.append(part)
    if not parts or (recipe.grads and not found):
        parts = ["output", "grads"] if recipe.grads else ["output"]
    if recipe.target["form"] != "module" and "state" in parts:
        parts.remove("state")
    if "grads" in parts and not recipe.grad_inputs and recipe.target["form"] != "module":
        parts.remove("grads")
    exception = "exception" in kinds or bool(recipe.settings.get("raises"))
    return Checks(tuple(parts or ["output"]),
                  values=not kinds or bool(kinds - {"stride", "type", "exception"}),
                  strides="stride" in kinds, signs=bool(kinds & {"signed_zero", "nan_sign"}),
                  types="type" in kinds, exception=exception)


# -- the script ---------------------------------------------------------------------------------


def _harness(recipe: Recipe) -> str:
    """The lines after the program, in the harness's own names (see ``_rename``)."""
    check = checks(recipe)
    lines = [MARKER + "-" * (_WIDTH - len(MARKER))]
    lines += _config_lines(recipe.settings, recipe.extra_paths)
    lines += [f"SEED = {recipe.seed}"] if recipe.seeded else []
    if recipe.backend_from_environment:
        lines += [f"BACKEND = os.environ.get('TORCH_COMPILE_BACKEND', "
                  f"{recipe.settings['backend']!r})"]
    lines += ["", "", "def run(compiled=False, float64=False):" if recipe.reference
              else "def run(compiled=False):",
              '    """The program built and called as the oracle did; what the finding '
              'compares."""']
    if recipe.settings.get("inference"):
        lines += ["    torch.set_grad_enabled(False)  # the oracle ran it under torch.no_grad()"]
    lines += _construct(recipe) + _float64_lines(recipe)
    lines += ["    if compiled:", f"        fn = torch.compile(fn{_compile_arguments(recipe)})"]
    if recipe.grad_inputs:
        lines += ["    inputs = [t for t in torch.utils._pytree.tree_leaves(args)",
                  "              if isinstance(t, torch.Tensor) and t.is_floating_point()]",
                  "    for t in inputs:  # as in the oracle's runs",
                  "        t.requires_grad_(True)"]
    lines += ["    torch.manual_seed(SEED)"] if recipe.seeded else []
    lines += _call(recipe, check)
    helpers = _helpers(check, recipe.scale)
    lines += ["", "", *helpers] if helpers else []
    lines += ["", ""] + _main(recipe, check)
    return "\n".join(lines) + "\n"


def _config_lines(settings: SettingsRecord, extra_paths: tuple[str, ...]) -> list[str]:
    """The custom backend's import and the compiler's switches (their modules are imported
    at the top)."""
    lines = []
    if ":" in settings["backend"]:
        module, _, function = settings["backend"].partition(":")
        if extra_paths:
            lines += [f"sys.path[:0] = {list(extra_paths)!r}"]
        lines += [f"from {module} import {function} as backend"]
    for prefix, switches in (("torch._inductor.config", settings.get("inductor_config", [])),
                             ("torch._dynamo.config", settings.get("dynamo_config", []))):
        lines += [f"{prefix}.{name} = {value!r}" for name, value in switches]
    return lines


def _construct(recipe: Recipe) -> list[str]:
    """``fn`` and ``args`` built as the oracle's worker built them."""
    target = recipe.target
    seed = ["    torch.manual_seed(SEED)"] if recipe.seeded else []
    lines = []
    if target["form"] == "module":
        init = f"*{_OWN}.get_init_inputs()" if target["has_init_inputs"] else ""
        lines += [*seed, f"    fn = {_OWN}.{target['attribute']}({init})"]
        if recipe.state is not None:
            lines += [f"    fn.load_state_dict(torch.load({recipe.state!r}, weights_only=True))"]
        lines += ["    fn.eval()"]
    else:
        lines += [f"    fn = {_OWN}.{target['attribute']}"]
    lines += seed
    if target["inputs"] == "get_inputs":
        return lines + [f"    args = {_OWN}.get_inputs()"]
    return lines + ["    import copy", "", f"    args = copy.deepcopy({_OWN}.inputs)"]


def _float64_lines(recipe: Recipe) -> list[str]:
    if not recipe.reference:
        return []
    lines = ["    if float64:  # the float64 run: an estimate of the exact result",
             "        args = torch.utils._pytree.tree_map(",
             "            lambda t: t.double() if isinstance(t, torch.Tensor) "
             "and t.is_floating_point() else t, args)"]
    return lines + (["        fn = fn.double()"] if recipe.target["form"] == "module" else [])


def _compile_arguments(recipe: Recipe) -> str:
    settings = recipe.settings
    if recipe.backend_from_environment:
        backend = "BACKEND"
    else:
        backend = "backend" if ":" in settings["backend"] else repr(settings["backend"])
    arguments = [f"backend={backend}"]
    if settings.get("mode") is not None and recipe.backend_from_environment:
        arguments += [f"mode={settings['mode']!r} if BACKEND == 'inductor' else None"]
    elif settings.get("mode") is not None:
        arguments += [f"mode={settings['mode']!r}"]
    if settings.get("dynamic") is not None:
        arguments += [f"dynamic={settings['dynamic']!r}"]
    arguments += ["fullgraph=True"] if settings.get("fullgraph") else []
    return ", " + ", ".join(arguments)


def _call(recipe: Recipe, check: Checks) -> list[str]:
    """The call (a positional list, or keywords), the backward, and what is returned."""
    call = {"dict": "fn(**args)", "list": "fn(*args)", "tuple": "fn(*args)"}.get(
        recipe.container or "", "fn(**args) if isinstance(args, dict) else fn(*args)")
    grads = "grads" in check.parts
    if check.parts == ("output",) and not check.types and not grads:
        return [f"    return {call}"]
    lines = [f"    output = {call}"]
    if check.types:
        lines += ["    if hasattr(output, '__next__'):  # what an iterator yields, and its type",
                  "        output = {type(output).__name__: list(output)}"]
    if grads:
        lines += _gradient_lines(recipe)
    return lines + _returned(recipe, check)


def _gradient_lines(recipe: Recipe) -> list[str]:
    """Backward through the same fixed projection of the floating outputs as the oracle
    (drawn in float32 whatever the output's dtype)."""
    return ["    projection = torch.Generator().manual_seed(1234)",
            "    loss = sum((t * torch.randn(t.shape, generator=projection).to(t.dtype)).sum()",
            "               for t in torch.utils._pytree.tree_leaves(output)",
            "               if isinstance(t, torch.Tensor) and t.requires_grad)",
            *_backward_lines(recipe)]


def _backward_lines(recipe: Recipe) -> list[str]:
    """``loss.backward()``; with Compiled Autograd, compiled runs call it in a compiled frame,
    as the oracle does (Compiled Autograd traces only a backward called there)."""
    backward = "    if isinstance(loss, torch.Tensor):  # some output needs grad"
    if not dict(map(tuple, recipe.settings.get("dynamo_config", ()))).get("compiled_autograd"):
        return [backward, "        loss.backward()"]
    settings: SettingsRecord = {**recipe.settings, "fullgraph": False}
    arguments = _compile_arguments(Recipe(**{**recipe.__dict__, "settings": settings}))
    return [backward,
            "        if compiled:  # Compiled Autograd traces the backward of a compiled frame",
            f"            torch.compile(lambda l: l.backward(){arguments})(loss)",
            "        else:", "            loss.backward()"]


def _returned(recipe: Recipe, check: Checks) -> list[str]:
    values = {"output": "output", "inputs": "args",
              "grads": "[t.grad for t in inputs]" if recipe.grad_inputs else "[]",
              "state": "fn.state_dict()"}
    if "grads" in check.parts and recipe.target["form"] == "module":
        values["grads"] = ("[t.grad for t in inputs] + [p.grad for p in fn.parameters()]"
                           if recipe.grad_inputs else "[p.grad for p in fn.parameters()]")
    names = {"output": "output", "inputs": "inputs after the call", "grads": "gradients",
             "state": "module state"}
    if len(check.parts) == 1:
        return [f"    return {values[check.parts[0]]}"]
    lines = ["    return {"]
    lines += [f"        {names[p]!r}: {values[p]}," for p in check.parts]
    return lines + ["    }"]


def _helpers(check: Checks, scale: float) -> list[str]:
    lines: list[str] = []
    if check.values and scale != 1.0:
        lines += ["def assert_close(actual, expected, **options):",
                  f'    """torch.testing.assert_close with its default tolerances times {scale:g}'
                  ' (as the oracle judged)."""',
                  "    leaves = torch.utils._pytree.tree_leaves",
                  "    for a, e in zip(leaves(actual), leaves(expected), strict=True):",
                  "        rtol, atol = torch.testing._comparison.default_tolerances(a, e)",
                  f"        torch.testing.assert_close(a, e, rtol=rtol * {scale!r}, "
                  f"atol=atol * {scale!r}, **options)", "", ""]
    if check.strides:
        lines += ["def strides(value):",
                  '    """Each tensor\'s strides, dimensions of size 1 aside (their stride '
                  'means nothing)."""',
                  "    return [[s for s, n in zip(t.stride(), t.shape) if n > 1]",
                  "            for t in torch.utils._pytree.tree_leaves(value) "
                  "if isinstance(t, torch.Tensor)]", "", ""]
    if check.signs:
        lines += ["def signs(value):",
                  '    """The sign bits of every floating tensor (signs of zero and NaN)."""',
                  "    return [t.detach().signbit()",
                  "            for t in torch.utils._pytree.tree_leaves(value)",
                  "            if isinstance(t, torch.Tensor) and t.is_floating_point()]", "", ""]
    if check.types:
        lines += ["def types(value):",
                  '    """The containers and the type of everything in them."""',
                  "    return torch.utils._pytree.tree_map(lambda x: type(x).__name__, value)",
                  "", ""]
    if check.exception:
        lines += ["def outcome(**options):",
                  '    """What a run gives, or what it raises: raising is the outcome '
                  'compared."""',
                  "    try:", "        return run(**options)",
                  "    except Exception as error:  # noqa: BLE001",
                  "        return error", "", ""]
    while lines and lines[-1] == "":
        lines.pop()
    return lines


def _main(recipe: Recipe, check: Checks) -> list[str]:
    call = "outcome" if check.exception else "run"
    close = "assert_close" if recipe.scale != 1.0 else "torch.testing.assert_close"
    lines = ['if __name__ == "__main__":']
    if recipe.reference:
        lines += [f"    reference = {call}(float64=True)  # eager in float64",
                  f"    expected = {call}()  # eager",
                  '    print("expected (eager):", expected)',
                  '    print("float64:", reference)']
    else:
        lines += [f"    expected = {call}()  # eager", '    print("expected (eager):", expected)']
    if check.exception:  # what the compiled call raises is compared
        lines += [f"    actual = {call}(compiled=True)  # torch.compile"]
    else:
        lines += ["    try:",
                  "        actual = run(compiled=True)  # torch.compile",
                  "    except Exception as error:  # eager ran the same code: the compiler's",
                  "        traceback.print_exc()",
                  f'        sys.exit(f"{RAISED} (a compiler error, traceback above): "',
                  '                 f"{type(error).__name__}")']
    lines += ['    print("actual (compiled):", actual)']
    if check.exception:
        lines += ["    raised = [isinstance(r, Exception) for r in (expected, actual)]",
                  "    if raised != [False, False]:",
                  "        if not (all(raised) and isinstance(actual, type(expected))):",
                  f'            sys.exit(f"{DIFFERS}: it raised {{actual!r}} where eager '
                  'raised {expected!r}")',
                  '        print("eager and compiled raise alike")', "        sys.exit(0)"]
    if check.types:
        lines += ["    if types(actual) != types(expected):",
                  f'        sys.exit(f"{DIFFERS}: types {{types(actual)}}, expected '
                  '{types(expected)}")']
    if check.strides:
        lines += ["    if strides(actual) != strides(expected):",
                  f'        sys.exit(f"{DIFFERS}: strides {{strides(actual)}}, expected '
                  '{strides(expected)}")']
    if check.signs:
        lines += ["    try:", f"        {close}(signs(actual), signs(expected))",
                  "    except AssertionError as error:",
                  f'        sys.exit(f"{DIFFERS} in signs of zero or NaN: {{error}}")']
    if check.values and recipe.reference:
        lines += ["    try:",
                  f"        {close}(expected, reference, check_dtype=False, equal_nan=True)",
                  "    except AssertionError:",
                  '        print("eager differs from the float64 result too: nothing shown")',
                  "        sys.exit(0)", "    try:",
                  f"        {close}(actual, reference, check_dtype=False, equal_nan=True)",
                  "    except AssertionError as error:",
                  f'        sys.exit(f"{DIFFERS} (eager agrees with float64, compiled does '
                  'not): {error}")']
    elif check.values:
        lines += ["    try:",
                  f"        {close}(actual, expected, equal_nan=True)",
                  "    except AssertionError as error:",
                  f'        sys.exit(f"{DIFFERS}: {{error}}")']
    lines += ['    print("eager and compiled agree")']
    return lines
