"""The minimiser's final product: one self-contained script a PyTorch developer can paste into
an issue.

The script holds the reduced program, builds its inputs as the oracle's worker does (same
seed, module in ``eval()`` mode, floating inputs requiring grad when the oracle's runs did),
runs it eagerly and through ``torch.compile`` with the recorded settings, prints both
results and the differences, and exits 1 while they differ. Its comparison is a plain one
(types, dtypes, shapes, strides, NaN and infinity positions, values within torch.testing's
tolerances, signs of zero in strict mode): the reduced reproducer folder next to it keeps
the oracle's full judgement (float64 reference, sensitivity).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_HEADER = re.compile(r"^\s*#\s*eqrewrite-oracle:.*\n?", re.MULTILINE)


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


def minimal_script(program: str, recipe: Recipe) -> str:
    """The text of ``minimal.py`` for ``program`` (the reduced target file)."""
    body = _HEADER.sub("", _without_docstring(program)).strip("\n")
    imports_torch = re.search(r"^import torch\s*$", body, re.MULTILINE) is not None
    parts = [_docstring(recipe), "" if imports_torch else "import torch\n", body, "",
             _harness(recipe)]
    return "\n".join(parts).rstrip() + "\n"


def _without_docstring(program: str) -> str:
    import ast

    tree = ast.parse(program)
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
            and isinstance(first.value.value, str):
        lines = program.splitlines(keepends=True)
        return "".join(lines[:first.lineno - 1] + lines[first.end_lineno:])
    return program


def _docstring(recipe: Recipe) -> str:
    settings = _describe(recipe.settings)
    return (f'"""torch.compile ({settings}) and eager disagree: {recipe.headline}\n\n'
            f"Minimal reproducer written by eqrewrite reduce (torch {recipe.torch_version}).\n"
            "Prints both results and where they differ; exits 1 while they differ.\n"
            '"""')


def _describe(settings: dict[str, Any]) -> str:
    parts = [f"backend={settings['backend']}"]
    parts += [f"{k}={settings[k]}" for k in ("mode", "dynamic") if settings.get(k) is not None]
    parts += ["fullgraph=True"] if settings.get("fullgraph") else []
    parts += ["under torch.no_grad()"] if settings.get("inference") else []
    parts += [f"inductor.{k}={v}" for k, v in settings.get("inductor_config", ())]
    parts += [f"dynamo.{k}={v}" for k, v in settings.get("dynamo_config", ())]
    return ", ".join(parts)


def _harness(recipe: Recipe) -> str:
    settings = recipe.settings
    lines = ["# -- eager vs torch.compile " + "-" * 60]
    lines += _config_lines(settings, recipe.extra_paths)
    lines += [f"SEED = {recipe.seed}", f"STRICT = {recipe.strict!r}", "", "",
              "def _run(compiled):",
              '    """The program built, compiled or not, and called as the oracle did."""',
              "    torch.manual_seed(SEED)"]
    if settings.get("inference"):
        lines += ["    torch.set_grad_enabled(False)  # the oracle ran it under torch.no_grad()"]
    lines += _construct(recipe)
    lines += ["    if compiled:", "        torch._dynamo.reset()",
              f"        fn = torch.compile(fn{_compile_arguments(settings)})"]
    if recipe.grad_inputs:
        lines += ["    for value in _tensors(args):",
                  "        if value.is_floating_point():",
                  "            value.requires_grad_(True)"]
    lines += ["    torch.manual_seed(SEED)", "    try:",
              "        output = fn(**args) if isinstance(args, dict) else fn(*args)",
              "        if hasattr(output, '__next__'):  # what an iterator yields, and its type",
              "            output = (type(output).__name__, list(output))",
              "    except Exception as error:  # raising is an outcome too",
              "        return {'raised': f'{type(error).__name__}: {error}'}",
              "    result = {'output': output, 'inputs after the call': args}"]
    if recipe.grads:
        lines += _gradient_lines(recipe)
    lines += ["    return result", "", ""]
    lines += _COMPARISON.format(scale=recipe.scale).splitlines()
    lines += ["", "", 'if __name__ == "__main__":',
              "    eager, compiled = _run(False), _run(True)",
              '    print("eager:   ", eager)', '    print("compiled:", compiled)',
              "    found = list(_differences(eager, compiled))",
              "    for line in found:",
              '        print("DIFFERS:", line)',
              "    raise SystemExit(1 if found else 0)"]
    return "\n".join(lines) + "\n"


def _config_lines(settings: dict[str, Any], extra_paths: tuple[str, ...]) -> list[str]:
    lines = []
    if ":" in settings["backend"]:
        module, _, function = settings["backend"].partition(":")
        if extra_paths:
            lines += ["import sys", "", f"sys.path[:0] = {list(extra_paths)!r}"]
        lines += [f"from {module} import {function} as backend  # noqa: E402"]
    for prefix, key in (("torch._inductor.config", "inductor_config"),
                        ("torch._dynamo.config", "dynamo_config")):
        if settings.get(key):
            lines.append(f"import {prefix}  # noqa: E402")
            lines += [f"{prefix}.{name} = {value!r}" for name, value in settings[key]]
    return lines + ([""] if lines else [])


def _construct(recipe: Recipe) -> list[str]:
    target = recipe.target
    if target["form"] == "module":
        init = "*get_init_inputs()" if target["has_init_inputs"] else ""
        lines = [f"    fn = {target['attribute']}({init})"]
        if recipe.state is not None:
            lines += [f"    fn.load_state_dict(torch.load({recipe.state!r}, weights_only=True))"]
        lines += ["    fn.eval()"]
    else:
        lines = [f"    fn = {target['attribute']}"]
    lines += ["    torch.manual_seed(SEED)"]
    if target["inputs"] == "get_inputs":
        return lines + ["    args = get_inputs()"]
    return lines + ["    import copy", "", "    args = copy.deepcopy(inputs)"]


def _compile_arguments(settings: dict[str, Any]) -> str:
    backend = "backend" if ":" in settings["backend"] else repr(settings["backend"])
    arguments = [f"backend={backend}"]
    arguments += [f"{k}={settings[k]!r}" for k in ("mode", "dynamic")
                  if settings.get(k) is not None]
    arguments += ["fullgraph=True"] if settings.get("fullgraph") else []
    return ", " + ", ".join(arguments)


def _gradient_lines(recipe: Recipe) -> list[str]:
    """Backward through the same fixed projection of the floating outputs as the oracle."""
    lines = ["    floating = [t for t in _tensors(output)",
             "                if t.is_floating_point() and t.requires_grad]",
             "    if floating:",
             "        projection = torch.Generator().manual_seed(1234)",
             "        loss = sum((t * torch.randn(t.shape, generator=projection)"
             ".to(t.dtype)).sum()",
             "                   for t in floating)",
             *_backward_lines(recipe),
             "        result['input grads'] = [t.grad for t in _tensors(args)]"]
    if recipe.target["form"] == "module":
        lines += ["        result['parameter grads'] = {n: p.grad for n, p in "
                  "fn.named_parameters()}"]
    return lines


def _backward_lines(recipe: Recipe) -> list[str]:
    """``loss.backward()``; with Compiled Autograd, compiled runs call it in a compiled frame,
    as the oracle does (Compiled Autograd traces only a backward called there)."""
    if not dict(map(tuple, recipe.settings.get("dynamo_config", ()))).get("compiled_autograd"):
        return ["        loss.backward()"]
    arguments = _compile_arguments({**recipe.settings, "fullgraph": False})
    return ["        if compiled:  # Compiled Autograd traces the backward of a compiled frame",
            f"            torch.compile(lambda l: l.backward(){arguments})(loss)",
            "        else:", "            loss.backward()"]


_COMPARISON = '''\
def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


TOLERANCES = {{torch.float64: (1e-7, 1e-7), torch.float32: (1.3e-6, 1e-5),
              torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5)}}


def _differences(eager, compiled, path="result"):
    """Where two results differ (type, dtype, shape, strides, NaN/inf, values, signs)."""
    if type(eager) is not type(compiled):
        yield f"{{path}}: {{type(eager).__name__}} vs {{type(compiled).__name__}}"
    elif isinstance(eager, torch.Tensor):
        yield from _tensor_differences(eager.detach(), compiled.detach(), path)
    elif isinstance(eager, (list, tuple)) and len(eager) == len(compiled):
        for index, (left, right) in enumerate(zip(eager, compiled)):
            yield from _differences(left, right, f"{{path}}[{{index}}]")
    elif isinstance(eager, dict) and list(eager) == list(compiled):
        for key in eager:
            yield from _differences(eager[key], compiled[key], f"{{path}}[{{key!r}}]")
    elif eager != compiled and not (eager != eager and compiled != compiled):
        yield f"{{path}}: {{eager!r}} vs {{compiled!r}}"


def _tensor_differences(eager, compiled, path):
    if eager.dtype != compiled.dtype or eager.shape != compiled.shape:
        yield (f"{{path}}: {{eager.dtype}}{{list(eager.shape)}} vs "
               f"{{compiled.dtype}}{{list(compiled.shape)}}")
        return
    sized = [d for d, n in enumerate(eager.shape) if n > 1]
    if [eager.stride(d) for d in sized] != [compiled.stride(d) for d in sized]:
        yield f"{{path}}: strides {{eager.stride()}} vs {{compiled.stride()}}"
    if not eager.is_floating_point():
        if not torch.equal(eager, compiled):
            count = int((eager != compiled).sum())
            yield f"{{path}}: {{count}} of {{eager.numel()}} elements differ"
        return
    if not torch.equal(eager.isnan(), compiled.isnan()):
        yield f"{{path}}: NaN at other positions"
    rtol, atol = TOLERANCES.get(eager.dtype, (0.0, 0.0))
    if not torch.allclose(eager, compiled, rtol * {scale}, atol * {scale}, equal_nan=True):
        both = torch.isfinite(eager) & torch.isfinite(compiled)
        worst = float((eager.double() - compiled.double())[both].abs().max()) if both.any() else 0
        yield f"{{path}}: values differ (largest finite difference {{worst:.6g}})"
    elif STRICT and not torch.equal(eager.signbit(), compiled.signbit()):
        yield f"{{path}}: signs of zero or NaN differ"
'''
