"""torch.compile (backend=inductor, inductor.fallback_random=True) and eager disagree: compiled raised BackendCompilerFailed: backend='inductor' raised: RuntimeError: more than one element of the written-to tensor refers to a single memory location

Minimal reproducer written by eqrewrite (torch 2.13.0+cpu): prints
what eager and torch.compile give and exits 1 while they differ.
"""

import sys

import torch
from torch import nn


class Program(nn.Module):
    def forward(self, x2: torch.Tensor):
        x2.index_put_((torch.tensor([0]),), torch.ones((1, 1, 1), dtype=torch.int8))


def get_inputs():
    return [torch.randint(0, 1, (1, 1, 1), dtype=torch.int8).expand(1, 2, 1)]


# -- eager vs torch.compile ----------------------------------------------------------------
import torch._inductor.config  # noqa: E402
torch._inductor.config.fallback_random = True

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
