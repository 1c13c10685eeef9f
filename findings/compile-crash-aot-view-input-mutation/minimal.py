"""torch.compile (backend=inductor) and eager disagree: compiled raised BackendCompilerFailed: backend='inductor' raised: AssertionError: aot_autograd() does not yet handle non-differentiable view input mutations. input 0 (v0) and input 1 (v1) share storage but are not differentiable views of e

Minimal reproducer written by eqrewrite (torch 2.13.0+cpu): prints
what eager and torch.compile give and exits 1 while they differ.
"""

import sys

import torch
from torch import nn


class Program(nn.Module):
    def forward(self, x0: torch.Tensor, x1: torch.Tensor):
        v0 = torch.topk(x0, 1)[0]
        v1 = v0.as_strided((1,), (0,))
        v2 = v0 if v0 > 0.0 else torch.square(v0)
        v1[torch.tensor([0])] += 0
        return {'aux': x1.tan(), 'logits': None, 'a': None, 'b': None}


def get_inputs():
    return [torch.randint(-1, 0, (1,)), torch.randn((1,))]


# -- eager vs torch.compile ----------------------------------------------------------------
SEED = 0


def run(compiled=False):
    """The program built and called as the oracle did; what the finding compares."""
    torch.manual_seed(SEED)
    fn = Program()
    fn.eval()
    torch.manual_seed(SEED)
    args = get_inputs()
    if compiled:
        fn = torch.compile(fn, backend='inductor')
    inputs = [t for t in torch.utils._pytree.tree_leaves(args)
              if isinstance(t, torch.Tensor) and t.is_floating_point()]
    for t in inputs:  # as in the oracle's runs
        t.requires_grad_(True)
    torch.manual_seed(SEED)
    output = fn(**args) if isinstance(args, dict) else fn(*args)
    return output


if __name__ == "__main__":
    expected = run()  # eager
    print("expected (eager):", expected)
    actual = run(compiled=True)  # torch.compile; a compile crash propagates
    print("actual (compiled):", actual)
    try:
        torch.testing.assert_close(actual, expected, equal_nan=True)
    except AssertionError as error:
        sys.exit(f"compiled differs from eager: {error}")
    print("eager and compiled agree")
