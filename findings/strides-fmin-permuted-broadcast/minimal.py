"""torch.compile (backend=inductor) and eager disagree: result['output']: tensor 0 (shape [2, 2, 1, 2]) has strides [2, 4, 4, 1], expected [4, 2, 2, 1]

Minimal reproducer written by eqrewrite (torch 2.13.0+cpu): prints
what eager and torch.compile give and exits 1 while they differ.
"""

import sys

import torch


def program(x0: torch.Tensor, x1: torch.Tensor):
    return torch.fmin(x0, x1)


def get_inputs():
    return [torch.randn((2, 2, 1, 2)), torch.randn((2, 1, 1, 2)).permute(3, 0, 1, 2)]


# -- eager vs torch.compile ----------------------------------------------------------------
SEED = 0


def run(compiled=False):
    """The program built and called as the oracle did; what the finding compares."""
    fn = program
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


def strides(value):
    """Each tensor's strides, dimensions of size 1 aside (their stride means nothing)."""
    return [[s for s, n in zip(t.stride(), t.shape) if n > 1]
            for t in torch.utils._pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]


if __name__ == "__main__":
    expected = run()  # eager
    print("expected (eager):", expected)
    actual = run(compiled=True)  # torch.compile; a compile crash propagates
    print("actual (compiled):", actual)
    if strides(actual) != strides(expected):
        sys.exit(f"compiled differs from eager: strides {strides(actual)}, expected {strides(expected)}")
    print("eager and compiled agree")
