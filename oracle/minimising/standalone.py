"""The minimal script a maintainer reads: one file to paste into a PyTorch issue.

It holds the program and its inputs, one eager call and one compiled call (with the backward
for a gradient finding), built as the oracle's worker built them (same seed, module in
``eval()`` mode, floating inputs requiring grad when the oracle's runs did, the recorded
backend, mode and switches), and a few lines that print expected (eager) against actual
(compiled) and exit 1 while they differ. It imports only torch (and a custom
``module:function`` backend when the finding used one); no harness is vendored.

What it compares is what decided the finding's verdict: the exact differences when there are
any (integers and bools exactly, dtypes, shapes, structure, strides of the outputs, types,
exceptions), else the floating ones, with torch.testing.assert_close's default tolerances
(scaled as the oracle's were), NaN positions compared; against a float64 run of the program
when the oracle's verdict rested on its float64 reference. A compile crash, or a compiled
backward that raises, propagates: the script exits 1 with the traceback. The reproducer
folder beside it keeps the oracle's full judgement (sensitivity, precision casts).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

_HEADER = re.compile(r"^\s*#\s*eqrewrite-oracle:.*\n?", re.MULTILINE)
# The line between the program and the lines that run it: what the report cuts at.
MARKER = "# -- eager vs torch.compile "
FLOATING_KINDS = frozenset({"value", "nan", "inf", "signed_zero", "nan_sign"})
_AREA = re.compile(r"result\['(\w+)'\]|result\.(\w+)")
DIFFERS = "compiled differs from eager"  # how the script's exit message starts


@dataclass(frozen=True)
class Recipe:
    """What the script needs besides the program: how the oracle built and ran it."""

    target: dict[str, Any]  # form, attribute, inputs, has_init_inputs (the worker's record)
    settings: dict[str, Any]  # CompileSettings as a dict
    seed: int
    grad_inputs: bool       # floating inputs required grad in the oracle's runs
    grads: bool             # the finding involves gradients: compare them too
    strict: bool
    scale: float
    extra_paths: tuple[str, ...]   # where a ``module:function`` backend imports from
    state: str | None       # path of saved weights, when they could not be dropped
    headline: str           # the finding in one line
    torch_version: str
    # The finding's differences as (path, kind), e.g. ("result['output'][1]", "exact"): what
    # the script compares. Empty: the outputs (and gradients with ``grads``).
    differences: tuple[tuple[str, str], ...] = ()
    reference: bool = False  # the verdict rested on the float64 reference: compare with it
    # The backend read from $TORCH_COMPILE_BACKEND (the compiler bisector's runs set it)
    backend_from_environment: bool = False


def uses_reference(kinds: list[str] | tuple[str, ...], detail: str) -> bool:
    """Did the verdict rest on the float64 reference? Floating values only, and the
    reference agreed with eager (the oracle's ``detail``/evidence says so)."""
    return bool(kinds) and all(k in FLOATING_KINDS for k in kinds) and "value" in kinds and (
        "reference agrees with eager" in detail or detail == "eager")


def minimal_script(program: str, recipe: Recipe) -> str:
    """The text of ``minimal.py`` for ``program`` (the reduced target file)."""
    body = _HEADER.sub("", _without_docstring(program)).strip("\n")
    imports = ["import os"] if recipe.backend_from_environment else []
    imports.append("import sys")
    if re.search(r"^import torch\s*$", body, re.MULTILINE) is None:
        imports += ["", "import torch"]
    parts = [_docstring(recipe), "", *imports, "", body, "", "", _harness(recipe)]
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
    return script.split(MARKER, 1)[0].rstrip() + "\n"


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
            "what eager and torch.compile give and exits 1 while they differ.\n"
            '"""')


def _describe(settings: dict[str, Any]) -> str:
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
    check = checks(recipe)
    settings = recipe.settings
    lines = [MARKER + "-" * (92 - len(MARKER))]
    lines += _config_lines(settings, recipe.extra_paths) + [f"SEED = {recipe.seed}"]
    if recipe.backend_from_environment:
        lines += [f"BACKEND = os.environ.get('TORCH_COMPILE_BACKEND', "
                  f"{settings['backend']!r})"]
    lines += ["", "", "def run(compiled=False, float64=False):" if recipe.reference
              else "def run(compiled=False):",
              '    """The program built and called as the oracle did; what the finding '
              'compares."""']
    if settings.get("inference"):
        lines += ["    torch.set_grad_enabled(False)  # the oracle ran it under torch.no_grad()"]
    lines += _construct(recipe)
    if recipe.reference:
        lines += ["    if float64:  # the float64 run: an estimate of the exact result",
                  "        args = torch.utils._pytree.tree_map(",
                  "            lambda t: t.double() if isinstance(t, torch.Tensor) "
                  "and t.is_floating_point() else t, args)"]
        if recipe.target["form"] == "module":
            lines += ["        fn = fn.double()"]
    lines += ["    if compiled:", f"        fn = torch.compile(fn{_compile_arguments(recipe)})"]
    grads = "grads" in check.parts
    if recipe.grad_inputs:
        lines += ["    inputs = [t for t in torch.utils._pytree.tree_leaves(args)",
                  "              if isinstance(t, torch.Tensor) and t.is_floating_point()]",
                  "    for t in inputs:  # as in the oracle's runs",
                  "        t.requires_grad_(True)"]
    lines += ["    torch.manual_seed(SEED)",
              "    output = fn(**args) if isinstance(args, dict) else fn(*args)"]
    if check.types:
        lines += ["    if hasattr(output, '__next__'):  # what an iterator yields, and its type",
                  "        output = {type(output).__name__: list(output)}"]
    if grads:
        lines += _gradient_lines(recipe)
    lines += _returned(recipe, check)
    helpers = _helpers(check, recipe.scale)
    lines += ["", "", *helpers] if helpers else []
    lines += ["", ""] + _main(recipe, check)
    return "\n".join(lines) + "\n"


def _config_lines(settings: dict[str, Any], extra_paths: tuple[str, ...]) -> list[str]:
    lines = []
    if ":" in settings["backend"]:
        module, _, function = settings["backend"].partition(":")
        if extra_paths:
            lines += [f"sys.path[:0] = {list(extra_paths)!r}"]
        lines += [f"from {module} import {function} as backend  # noqa: E402"]
    for prefix, key in (("torch._inductor.config", "inductor_config"),
                        ("torch._dynamo.config", "dynamo_config")):
        if settings.get(key):
            lines.append(f"import {prefix}  # noqa: E402")
            lines += [f"{prefix}.{name} = {value!r}" for name, value in settings[key]]
    return lines + ([""] if lines else [])


def _construct(recipe: Recipe) -> list[str]:
    target = recipe.target
    lines = []
    if target["form"] == "module":
        init = "*get_init_inputs()" if target["has_init_inputs"] else ""
        lines += ["    torch.manual_seed(SEED)", f"    fn = {target['attribute']}({init})"]
        if recipe.state is not None:
            lines += [f"    fn.load_state_dict(torch.load({recipe.state!r}, weights_only=True))"]
        lines += ["    fn.eval()"]
    else:
        lines += [f"    fn = {target['attribute']}"]
    lines += ["    torch.manual_seed(SEED)"]
    if target["inputs"] == "get_inputs":
        return lines + ["    args = get_inputs()"]
    return lines + ["    import copy", "", "    args = copy.deepcopy(inputs)"]


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
    settings = {**recipe.settings, "fullgraph": False}
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
    lines += [f"    actual = {call}(compiled=True)  # torch.compile"
              + ("; a compile crash propagates" if not check.exception else ""),
              '    print("actual (compiled):", actual)']
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
