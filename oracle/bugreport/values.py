"""What eager and compiled actually gave, read from the minimal script's own run functions:
the title and the description say which side is NaN or infinite from these values, not from
the record (whose message is about the program before it was minimised).

A child imports the script (its ``__main__`` block does not run), calls ``run()`` and
``run(compiled=True)``, and compares the floating tensors leaf by leaf: for each pair that
differs, the first element whose class (NaN, inf, -inf, finite) differs, else the first
that differs at all, with both values, and how many differ.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

from .runs import Runner, run_process

_MARK = "EQREWRITE-VALUES "

_PROBE = '''\
import json, runpy, sys

import torch
from torch.utils._pytree import keystr, tree_flatten_with_path

INF = float("inf")


def flat(value):
    return [(keystr(path), leaf) for path, leaf in tree_flatten_with_path(value)[0]]


def kind(v):
    return "NaN" if v != v else "inf" if v == INF else "-inf" if v == -INF else "finite"


def shown(v):
    return kind(v) if kind(v) != "finite" else f"{v:.6g}"


def classes(t):
    return torch.where(t.isnan(), 0, torch.where(t == INF, 1, torch.where(t == -INF, 2, 3)))


def compare(path, e, c):
    if not (isinstance(e, torch.Tensor) and isinstance(c, torch.Tensor)):
        return None
    if e.shape != c.shape or not (e.is_floating_point() and c.is_floating_point()):
        return None
    e, c = e.detach().double().cpu(), c.detach().double().cpu()
    differ = ~((e == c) | (e.isnan() & c.isnan()))
    if not differ.any():
        return None
    switched = classes(e) != classes(c)
    index = tuple(int(i) for i in (switched if switched.any() else differ).nonzero()[0])
    ev, cv = float(e[index]), float(c[index])
    return {"path": path, "index": list(index), "eager": shown(ev), "compiled": shown(cv),
            "eager_kind": kind(ev), "compiled_kind": kind(cv), "differ": int(differ.sum()),
            "switched": int(switched.sum()), "total": e.numel()}


# the harness's run(), found by its docstring: it is renamed when the program binds "run"
namespace = runpy.run_path(sys.argv[1], run_name="eqrewrite_values")
run = next(f for f in namespace.values() if callable(f) and (f.__doc__ or "").startswith(
    "The program built and called as the oracle did"))
try:
    expected = run()
    actual = run(compiled=True)
except BaseException as error:  # a side raises: the script's run shows it
    print("EQREWRITE-VALUES " + json.dumps({"error": f"{type(error).__name__}: {error}"[:300]}))
    sys.exit(0)
found = [compare(p, e, c) for (p, e), (q, c) in zip(flat(expected), flat(actual)) if p == q]
print("EQREWRITE-VALUES " + json.dumps({"differences": [f for f in found if f]}))
'''

_AREAS = (("gradients", "gradient"), ("inputs after the call", "inputs after the call"),
          ("module state", "module state"), ("output", "output"))


@dataclass(frozen=True)
class Difference:
    """One pair of tensors that differ: where, the first telling element, how many."""

    path: str
    index: tuple[int, ...]
    eager: str          # "NaN", "inf", "-inf" or the number
    compiled: str
    eager_kind: str     # NaN | inf | -inf | finite
    compiled_kind: str
    differ: int
    switched: int       # elements whose class (NaN, inf, -inf, finite) differs
    total: int

    def area(self, default: str) -> str:
        return next((name for key, name in _AREAS if f"['{key}']" in self.path), default)


@dataclass(frozen=True)
class Values:
    """The differences the probe found, or why it found none (``note``)."""

    differences: tuple[Difference, ...] = ()
    note: str = ""

    @property
    def special(self) -> Difference | None:
        """The first difference where NaN or infinity is on one side only."""
        return next((d for d in self.differences if d.switched), None)


def probe(runner: Runner, script: str) -> Values:
    """Run the script's ``run()`` both ways in a child and read what differs."""
    path = runner.write(script, "values_script.py")
    driver = runner.write(_PROBE, "values_driver.py")
    done = run_process([sys.executable, str(driver), str(path)], runner.scratch,
                       runner.timeout)
    return parse(done.stdout, done.returncode)


def parse(stdout: str, returncode: int | None) -> Values:
    line = next((line for line in stdout.splitlines() if line.startswith(_MARK)), None)
    if returncode != 0 or line is None:
        why = "timed out" if returncode is None else f"exit {returncode}"
        return Values(note=f"the values probe failed ({why})")
    answer = json.loads(line[len(_MARK):])
    if "error" in answer:
        return Values(note=f"a run raised: {answer['error']}")
    return Values(tuple(Difference(**{**d, "index": tuple(d["index"])})
                        for d in answer["differences"]))


def headline(values: Values, default_area: str) -> str | None:
    """The title's words when NaN or infinity is on one side only: which side, which value
    (``output is -inf where eager's is NaN``); None otherwise."""
    found = values.special
    if found is None:
        return None
    return f"{found.area(default_area)} is {found.compiled} where eager's is {found.eager}"


def sentence(values: Values, default_area: str) -> str:
    """The values in a sentence for the description ("" when nothing differs)."""
    found = values.special or (values.differences[0] if values.differences else None)
    if found is None:
        return ""
    where = f"index {found.index}" if found.index else "the single element"
    name = f" `{found.path}`" if found.path else ""
    return (f"At {where} of the {found.area(default_area)}{name}, eager gives "
            f"{found.eager} and the compiled call {found.compiled} ({found.differ} of "
            f"{found.total} values differ).")
