"""torch.compile (backend=inductor) and eager disagree: result['grads']: missing keys ['input0', 'input1'], unexpected keys ['backward_error']

Minimal reproducer written by eqrewrite reduce (torch 2.13.0+cpu).
Prints both results and where they differ; exits 1 while they differ.
"""

import torch
import torch.nn.functional as F
from torch import nn


class Program(nn.Module):
    def forward(self, x0: torch.Tensor, x1: torch.Tensor, x2: torch.Tensor):
        v2 = torch.logcumsumexp(x0, -1)
        if x0.max():
            v3 = x0
        else:
            pass
        v2.data.clamp_(-1, 1)
        v5 = v3.type_as(v2) if v3.float().sum() > 0 else F.logsigmoid(v3)
        return [v2, v5]


def get_inputs():
    g = torch.Generator().manual_seed(1002)
    b_x0 = torch.randn((5, 3), generator=g, dtype=torch.float32)
    b_x1 = torch.randint(-8, 9, (5, 3), generator=g, dtype=torch.int32)
    b_x2 = torch.randn((1, 4), generator=g, dtype=torch.float32)
    return [b_x0, b_x1, b_x2]

# -- eager vs torch.compile ------------------------------------------------------------
SEED = 0
STRICT = False


def _run(compiled):
    """The program built, compiled or not, and called as the oracle did."""
    torch.manual_seed(SEED)
    fn = Program()
    fn.eval()
    torch.manual_seed(SEED)
    args = get_inputs()
    if compiled:
        torch._dynamo.reset()
        fn = torch.compile(fn, backend='inductor')
    for value in _tensors(args):
        if value.is_floating_point():
            value.requires_grad_(True)
    torch.manual_seed(SEED)
    try:
        output = fn(**args) if isinstance(args, dict) else fn(*args)
        if hasattr(output, '__next__'):  # what an iterator yields, and its type
            output = (type(output).__name__, list(output))
    except Exception as error:  # raising is an outcome too
        return {'raised': f'{type(error).__name__}: {error}'}
    result = {'output': output, 'inputs after the call': args}
    floating = [t for t in _tensors(output)
                if t.is_floating_point() and t.requires_grad]
    if floating:
        projection = torch.Generator().manual_seed(1234)
        sum((t * torch.randn(t.shape, generator=projection).to(t.dtype)).sum()
            for t in floating).backward()
        result['input grads'] = [t.grad for t in _tensors(args)]
        result['parameter grads'] = {n: p.grad for n, p in fn.named_parameters()}
    return result


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


TOLERANCES = {torch.float64: (1e-7, 1e-7), torch.float32: (1.3e-6, 1e-5),
              torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5)}


def _differences(eager, compiled, path="result"):
    """Where two results differ (type, dtype, shape, strides, NaN/inf, values, signs)."""
    if type(eager) is not type(compiled):
        yield f"{path}: {type(eager).__name__} vs {type(compiled).__name__}"
    elif isinstance(eager, torch.Tensor):
        yield from _tensor_differences(eager.detach(), compiled.detach(), path)
    elif isinstance(eager, (list, tuple)) and len(eager) == len(compiled):
        for index, (left, right) in enumerate(zip(eager, compiled)):
            yield from _differences(left, right, f"{path}[{index}]")
    elif isinstance(eager, dict) and list(eager) == list(compiled):
        for key in eager:
            yield from _differences(eager[key], compiled[key], f"{path}[{key!r}]")
    elif eager != compiled and not (eager != eager and compiled != compiled):
        yield f"{path}: {eager!r} vs {compiled!r}"


def _tensor_differences(eager, compiled, path):
    if eager.dtype != compiled.dtype or eager.shape != compiled.shape:
        yield (f"{path}: {eager.dtype}{list(eager.shape)} vs "
               f"{compiled.dtype}{list(compiled.shape)}")
        return
    sized = [d for d, n in enumerate(eager.shape) if n > 1]
    if [eager.stride(d) for d in sized] != [compiled.stride(d) for d in sized]:
        yield f"{path}: strides {eager.stride()} vs {compiled.stride()}"
    if not eager.is_floating_point():
        if not torch.equal(eager, compiled):
            count = int((eager != compiled).sum())
            yield f"{path}: {count} of {eager.numel()} elements differ"
        return
    if not torch.equal(eager.isnan(), compiled.isnan()):
        yield f"{path}: NaN at other positions"
    rtol, atol = TOLERANCES.get(eager.dtype, (0.0, 0.0))
    if not torch.allclose(eager, compiled, rtol * 1.0, atol * 1.0, equal_nan=True):
        both = torch.isfinite(eager) & torch.isfinite(compiled)
        worst = float((eager.double() - compiled.double())[both].abs().max()) if both.any() else 0
        yield f"{path}: values differ (largest finite difference {worst:.6g})"
    elif STRICT and not torch.equal(eager.signbit(), compiled.signbit()):
        yield f"{path}: signs of zero or NaN differ"


if __name__ == "__main__":
    eager, compiled = _run(False), _run(True)
    print("eager:   ", eager)
    print("compiled:", compiled)
    found = list(_differences(eager, compiled))
    for line in found:
        print("DIFFERS:", line)
    raise SystemExit(1 if found else 0)
