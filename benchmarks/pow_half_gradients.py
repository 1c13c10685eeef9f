"""How far the gradients of ``x ** 0.5`` and ``torch.sqrt(x)`` differ at positive inputs.

The figures behind the ``safety_note`` of ``pow-half-to-sqrt`` (rules/default.yaml): values
agree bit for bit at every positive input, but the backward formulas differ (pow's is
``grad * (0.5 * x ** -0.5)``, sqrt's ``grad / (2 * sqrt(x))``) and so round differently.
Printed per input set, dtype and upstream gradient (ones, as ``.sum().backward()``; random
normal, as the oracle's projection): the share of elements whose gradient differs and the
largest relative difference among normal (not subnormal) results, beside the dtype's eps.

    python benchmarks/pow_half_gradients.py [--size 1000000] [--seed 0]
"""

from __future__ import annotations

import argparse

import torch

DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def input_sets(size: int) -> dict[str, torch.Tensor]:
    """Positive inputs: uniform, |normal|, and a spread of positive float32 bit patterns."""
    step = max(1, 0x7F800000 // size)
    return {
        "uniform(0,1)": torch.rand(size),
        "|normal|": torch.randn(size).abs(),
        "float32 bit patterns": torch.arange(1, 0x7F800000, step, dtype=torch.int32).view(
            torch.float32),
    }


def measure(x: torch.Tensor, dtype: torch.dtype, upstream: str) -> tuple[int, float, float]:
    """(elements, share whose gradient differs, max relative difference on normal results)."""
    x = x.to(dtype)
    x = x[torch.isfinite(x) & (x > 0)]
    grad = torch.ones_like(x) if upstream == "ones" else torch.randn(x.shape, dtype=dtype)
    pow_input, sqrt_input = x.clone().requires_grad_(), x.clone().requires_grad_()
    (pow_input ** 0.5).backward(grad)
    torch.sqrt(sqrt_input).backward(grad)
    assert torch.equal(pow_input ** 0.5, torch.sqrt(sqrt_input)), "values differ"
    before, after = pow_input.grad, sqrt_input.grad
    differ = before != after
    normal = differ & (after.abs() >= torch.finfo(dtype).tiny)
    relative = ((before.double() - after.double()).abs() / after.double().abs())[normal]
    return x.numel(), differ.double().mean().item(), (
        relative.max().item() if relative.numel() else 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    print(f"torch {torch.__version__}; gradient of x ** 0.5 against torch.sqrt(x), x > 0")
    print(f"{'inputs':22} {'dtype':10} {'upstream':8} {'elements':>9} {'differ':>8} "
          f"{'max rel':>9} {'eps':>9}")
    for name, x in input_sets(args.size).items():
        for dtype in DTYPES:
            for upstream in ("ones", "random"):
                count, share, worst = measure(x, dtype, upstream)
                print(f"{name:22} {str(dtype)[6:]:10} {upstream:8} {count:9} "
                      f"{share * 100:7.2f}% {worst:9.2g} {torch.finfo(dtype).eps:9.2g}")


if __name__ == "__main__":
    main()
