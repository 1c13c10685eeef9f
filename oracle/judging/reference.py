"""Alternative eager executions the triage compares against.

* The **float64 reference**: the same program with every floating computation done in float64,
  an estimate of the exact result. Inputs, parameters and buffers are built as usual and then
  cast; while the target runs, a ``TorchFunctionMode`` turns every request for a narrower
  floating dtype (``.half()``, ``.to(torch.float16)``, ``dtype=torch.float32``, tensors the
  program creates with the default dtype) into float64. Random draws are made in the dtype
  the program asked for (float32 when it named none) and then cast, because a generator gives
  different numbers in float64: the reference sees the same random values as eager.
* **Perturbed** runs: eager, with every floating input, parameter and buffer multiplied by
  ``1 ± 2 eps`` (random signs, a fixed seed per run). How far their results move measures the
  program's own sensitivity to rounding.
* **Nudged references**: the float64 reference with every floating input, parameter and buffer
  multiplied by ``1 ± 2**-40`` (far above float64's rounding, far below float32's): where a
  discrete result (a floor, a quotient rounded down) of the reference stays the same under
  them, the exact answer is not decided by rounding.

While the reference runs, the names of the torch functions the program calls are recorded
(``Float64Mode.called``; a division with a ``rounding_mode`` as ``div:floor``), so the triage
knows which discontinuous operations the program contains.

Limits: bit reinterpretation (``x.view(torch.int32)``) and code that checks for a particular
floating dtype behave differently in float64, and then the reference is reported unavailable
or disagreeing; ``_like`` random factories draw in float32.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from .observe import tensors

_COMPLEX_WIDE = {torch.complex32: torch.complex128, torch.complex64: torch.complex128}
_NARROWING = {torch.Tensor.half, torch.Tensor.float, torch.Tensor.bfloat16}
# Functions that draw random numbers: run at the dtype the program asked for, then widened.
_RANDOM_FACTORIES = {torch.randn, torch.rand, torch.normal, torch.randn_like, torch.rand_like,
                     torch.bernoulli, torch.multinomial, torch.poisson,
                     torch.nn.functional.dropout, torch.dropout}
_RANDOM_IN_PLACE = {getattr(torch.Tensor, name) for name in (
    "normal_", "uniform_", "exponential_", "cauchy_", "log_normal_", "geometric_",
    "bernoulli_", "random_")}


def _wide(dtype: object) -> object:
    if isinstance(dtype, torch.dtype):
        if dtype.is_floating_point:
            return torch.float64
        return _COMPLEX_WIDE.get(dtype, dtype)
    return dtype


class Float64Mode(TorchFunctionMode):
    """While active, floating computations requested at a narrower dtype run in float64."""

    def __init__(self, draw_dtype: torch.dtype = torch.float32):
        super().__init__()
        self.draw_dtype = draw_dtype  # the program's default dtype, for random draws
        self.called: set[str] = set()  # names of the torch functions called

    def __torch_function__(self, func: Callable[..., Any], types: Collection[type],
                           args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = dict(kwargs or {})
        self.called.add(_name(func, kwargs))
        if func in _NARROWING:
            return args[0].double()
        if func in _RANDOM_FACTORIES:
            return self._drawn(func, args, kwargs)
        if func in _RANDOM_IN_PLACE and args[0].is_floating_point():
            narrow = args[0].detach().to(self.draw_dtype)
            func(narrow, *args[1:], **kwargs)
            with torch.no_grad():
                return args[0].copy_(narrow)
        if "dtype" in kwargs:
            kwargs["dtype"] = _wide(kwargs["dtype"])
        if func in (torch.Tensor.to, torch.Tensor.type):
            args = tuple(_wide(a) for a in args)
        return func(*args, **kwargs)

    def _drawn(self, func: Callable[..., Any], args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> Any:
        asked = kwargs.get("dtype")
        if isinstance(asked, torch.dtype) and asked.is_floating_point:
            kwargs["dtype"] = asked
        elif asked is None and func in (torch.randn, torch.rand):
            kwargs["dtype"] = self.draw_dtype
        narrow = tuple(_narrowed(a, self.draw_dtype) for a in args)
        result = func(*narrow, **{k: _narrowed(v, self.draw_dtype) for k, v in kwargs.items()})
        return result.double() if result.is_floating_point() else result


def _name(func: Callable[..., Any], kwargs: dict[str, Any]) -> str:
    """``floor_divide``, ``__floordiv__``; a division with a rounding mode ``div:floor``."""
    name = getattr(func, "__name__", type(func).__name__)
    mode = kwargs.get("rounding_mode")
    return f"{name}:{mode}" if isinstance(mode, str) else name


def _narrowed(value: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor) and value.dtype == torch.float64:
        return value.to(dtype)
    return value


@contextlib.contextmanager
def float64_reference() -> Iterator[Float64Mode]:
    """Run the enclosed (eager) code as the float64 reference: default dtype float64 and
    narrower dtype requests widened. The previous default dtype is restored afterwards.
    Yields the mode, whose ``called`` names the torch functions the code called."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with Float64Mode(previous) as mode:
            yield mode
    finally:
        torch.set_default_dtype(previous)


NUDGE = 2.0 ** -40  # the relative change of a nudged reference's inputs


def perturb(inputs: Any, module: torch.nn.Module | None, which: int,
            relative: float | None = None) -> None:
    """Multiply every floating input, parameter and buffer by ``1 ± 2 eps`` in place, the
    signs drawn at random with a seed per ``which``. With ``relative`` (a nudged reference,
    ``which`` from 1), by ``1 ± relative``, the runs in pairs: run ``2k`` nudges every value
    the other way from run ``2k - 1``, so a tie broken one way by one is broken the other way
    by its partner."""
    seed, sign = (which, 1) if relative is None else ((which + 1) // 2, 1 - 2 * (which % 2 == 0))
    generator = torch.Generator().manual_seed(10_000 + seed)
    targets = list(tensors(inputs))
    if module is not None:
        targets += list(module.parameters()) + list(module.buffers())
    with torch.no_grad():
        for tensor in targets:
            if tensor.is_floating_point() and tensor.numel():
                signs = (torch.randint(0, 2, tensor.shape, generator=generator) * 2 - 1) * sign
                step = 2 * torch.finfo(tensor.dtype).eps if relative is None else relative
                factor = 1 + step * signs.to(tensor.dtype)
                tensor.mul_(factor)
