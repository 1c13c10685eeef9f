"""torch.compile (backend=inductor) and eager disagree: result['grads']['input0']: NaN positions differ at 1 of 1 values; first at index (0, 0, 0): expected 0.0461304635, got -nan

Minimal reproducer written by eqrewrite (torch 2.13.0+cpu): prints
what eager and torch.compile give and exits 1 while they differ.
"""

import sys

from functools import partial

import torch
from torch import nn


class Program(nn.Module):
    def forward(self, x0: torch.Tensor, x1: torch.Tensor):
        v1 = torch.addcdiv(x1, x1, x0)
        torch._dynamo.graph_break()
        v1[:0] = 0.0
        return x0, partial(torch.clamp, min=0.0)(x1)


def get_inputs():
    b_x0 = torch.randn((1, 1, 1))
    b_x0.view(1)[[0]] = torch.tensor([1e-30])
    return [b_x0, torch.randn((1, 1, 1))]


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
    projection = torch.Generator().manual_seed(1234)
    loss = sum((t * torch.randn(t.shape, generator=projection).to(t.dtype)).sum()
               for t in torch.utils._pytree.tree_leaves(output)
               if isinstance(t, torch.Tensor) and t.requires_grad)
    if isinstance(loss, torch.Tensor):  # some output needs grad
        loss.backward()
    return [t.grad for t in inputs] + [p.grad for p in fn.parameters()]


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
