"""torch.compile (backend=inductor) and eager disagree: result['grads']: missing keys ['input0'], unexpected keys ['backward_error']

Minimal reproducer written by eqrewrite (torch 2.13.0+cpu): prints
what eager and torch.compile give and exits 1 while they differ.
"""

import sys

import torch
from torch import nn


class Program(nn.Module):
    def forward(self, x0: torch.Tensor):
        v2 = torch.logcumsumexp(x0, 0)
        torch._dynamo.graph_break()
        v3 = x0.acosh()
        v2.clamp_(0)
        return v3


def get_inputs():
    b_x0 = torch.randn((1, 1))
    return [b_x0]


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
