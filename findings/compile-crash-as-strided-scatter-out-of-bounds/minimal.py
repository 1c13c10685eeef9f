"""torch.compile (backend=inductor) and eager disagree: compiled raised BackendCompilerFailed: backend='inductor' raised: RuntimeError: as_strided_scatter: sizes [3, 1], strides [3, 0], storage offset 0  and itemsize 4 requiring a storage size of 28 are out of bounds for storage of size 24

Minimal reproducer written by eqrewrite (torch 2.13.0+cpu): prints
what eager and torch.compile give and exits 1 while they differ.
"""

import sys

import torch


def program(x0: torch.Tensor):
    x0.as_strided((3, 1), (3, 0)).sign_()


def get_inputs():
    return [torch.randn((1, 3, 3))[..., ::2]]


# -- eager vs torch.compile ----------------------------------------------------------------
SEED = 0


def run(compiled=False):
    """The program built and called as the oracle did; what the finding compares."""
    fn = program
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
