"""Standalone reproducers for eager-vs-compiled disagreements.

The script needs only torch and the target's source tree: it rebuilds the target
with the same seed and weights (saved beside it), runs it eagerly and compiled
with the same settings, compares outputs, inputs after the call and parameter
gradients, and exits 1
while the disagreement reproduces (0 once it is fixed), so it can be attached to
a bug report or bisected on its own.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import torch

from . import compare as cmp
from .targets import CompileSettings, Target

_TEMPLATE = '''\
"""Reproducer written by eqrewrite's oracle for {name}.

Eager and torch.compile({backend!r}) disagree. Exits 1 while that reproduces, 0 otherwise.
"""
import importlib
import io
import sys

import torch

sys.path[:0] = {paths!r}
SEED = {seed}
RTOL, ATOL, STRICT = {rtol!r}, {atol!r}, {strict!r}
STATE = {state!r}


def build():
    torch.manual_seed(SEED)
    source = importlib.import_module({module!r})
    fn = getattr(source, {attribute!r})
    if {is_module!r}:
        torch.manual_seed(SEED)
        fn = fn(*({init}))
        if STATE is not None:
            fn.load_state_dict(torch.load(io.BytesIO(STATE), weights_only=True))
        fn.eval()
    torch.manual_seed(SEED)
    inputs = {inputs}
    return fn, inputs


def backend():
    spec = {backend!r}
    if ":" not in spec:
        return spec
    module, _, function = spec.partition(":")
    return getattr(importlib.import_module(module), function)


def tensors(obj, detach=True):
    if isinstance(obj, torch.Tensor):
        yield obj.detach() if detach else obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from tensors(value, detach)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            yield from tensors(value, detach)


def mismatch(expected, actual):
    pairs = list(zip(tensors(expected), tensors(actual)))
    if len(pairs) != len(list(tensors(expected))) or len(pairs) != len(list(tensors(actual))):
        return "different number of tensors"
    for index, (e, a) in enumerate(pairs):
        if e.dtype != a.dtype or e.shape != a.shape:
            return (f"tensor {{index}}: {{e.dtype}}{{tuple(e.shape)}} vs "
                    f"{{a.dtype}}{{tuple(a.shape)}}")
        try:
            torch.testing.assert_close(a, e, rtol=RTOL, atol=ATOL, equal_nan=True)
        except AssertionError as error:
            return f"tensor {{index}}: {{error}}"
        if STRICT and e.is_floating_point():
            special = (e == 0) | e.isnan()
            if not torch.equal(e.signbit()[special], a.signbit()[special]):
                return f"tensor {{index}}: sign of zero or NaN differs"
    return None


def gradients(fn, output):
    """Parameter gradients through a fixed projection of the floating outputs."""
    outputs = [t for t in tensors(output, detach=False)
               if t.is_floating_point() and t.requires_grad]
    if not outputs or not isinstance(fn, torch.nn.Module):
        return {{}}
    generator = torch.Generator().manual_seed(1234)
    sum((t * torch.randn(t.shape, generator=generator, dtype=t.dtype)).sum()
        for t in outputs).backward()
    return {{name: p.grad for name, p in fn.named_parameters()}}


def grad_mismatch(expected, actual):
    for name in expected:
        e, a = expected[name], actual.get(name)
        if (e is None) != (a is None):
            return f"gradient of {{name}}: {{e}} eagerly, {{a}} compiled"
        if e is not None and mismatch(e, a):
            return f"gradient of {{name}}: " + mismatch(e, a)
    return None


fn, inputs = build()
torch.manual_seed(SEED)
expected = fn(*inputs)
expected_grads = gradients(fn, expected)
fn, compiled_inputs = build()
compiled = torch.compile(fn, backend=backend(), mode={mode!r}, dynamic={dynamic!r},
                         fullgraph={fullgraph!r})
with torch._inductor.config.patch({inductor!r}):
    torch.manual_seed(SEED)
    actual = compiled(*compiled_inputs)
    actual_grads = gradients(fn, actual)
problem = (mismatch((expected, inputs), (actual, compiled_inputs))
           or grad_mismatch(expected_grads, actual_grads))
print("MISMATCH: " + problem if problem else "eager and compiled agree")
sys.exit(1 if problem else 0)
'''


def write_reproducer(folder: Path, root: Path, target: Target, settings: CompileSettings,
                     state: bytes | None, options: cmp.Options, seed: int = 0) -> Path:
    """Write ``repro_<target>.py`` under ``folder`` and return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    tolerance = options.tolerance(torch.float32)
    paths = [str(root)] + _backend_paths(settings.backend)
    inputs = ("source.get_inputs()" if target.inputs == "get_inputs"
              else "__import__('copy').deepcopy(source.inputs)")
    script = _TEMPLATE.format(
        name=target.name, backend=settings.backend, paths=paths, seed=seed,
        rtol=tolerance.rtol, atol=tolerance.atol,
        strict=options.strict, state=state, module=target.module_name,
        attribute=target.attribute, is_module=target.kind == "module",
        init="source.get_init_inputs()" if target.has_init_inputs else "",
        inputs=inputs, mode=settings.mode, dynamic=settings.dynamic,
        fullgraph=settings.fullgraph, inductor=dict(settings.inductor_config))
    path = folder / f"repro_{re.sub(r'[^A-Za-z0-9_]+', '_', target.name)}.py"
    path.write_text(script, encoding="utf-8")
    return path


def _backend_paths(backend: str) -> list[str]:
    """Folders to put on sys.path so a ``module:function`` backend imports on its own."""
    if ":" not in backend:
        return []
    module = backend.partition(":")[0]
    try:
        spec = importlib.util.find_spec(module.split(".")[0])
    except (ImportError, ValueError):
        return []
    if spec is None or spec.origin is None:
        return []
    origin = Path(spec.origin)
    return [str(origin.parent.parent if origin.name == "__init__.py" else origin.parent)]
