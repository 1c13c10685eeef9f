"""One transformers family, built as ``hf_generality.py`` builds it, run once under
``torch._dynamo.explain``: graphs and breaks printed, the eager output saved; with
``--latency N``, compiled too: the first call (compilation included: cold, with an empty
Inductor cache when the caller gives this process a fresh ``TORCHINDUCTOR_CACHE_DIR``) and the
median of N calls after two warm-up calls (steady), and whether the compiled output is close
to the eager one (torch.testing's float32 tolerances).

Meant to be run under ``eqrewrite run`` with and without the pack and the switches, to see what
one command leaves of a family's breaks, that the output does not change, and what it costs::

    python benchmarks/hf_one_family.py llava plain.pt
    eqrewrite run --package transformers benchmarks/hf_one_family.py llava pack.pt
    eqrewrite run --dynamic-sizes --package transformers benchmarks/hf_one_family.py llava \\
        both.pt --latency 20

Arguments: the model type, the file the eager output goes to, optionally the variant
(``forward`` by default), ``--latency N`` and ``--backend`` (inductor by default). The
transformers release is whichever is importable; break counts and times are on the CPU.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hf_families as families  # noqa: E402
import hf_workers as workers  # noqa: E402


def main(argv: list[str]) -> int:
    """Build, run eagerly, explain, save, optionally time compiled; print one line each."""
    import torch
    import transformers

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("family")
    parser.add_argument("out", type=Path)
    parser.add_argument("variant", nargs="?", default="forward")
    parser.add_argument("--latency", type=int, default=0, metavar="N",
                        help="also time the compiled call: cold, and the median of N calls")
    parser.add_argument("--backend", default="inductor")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    fn, kwargs, notes = families.build_transformers(transformers, args.family, args.variant)
    with torch.no_grad():
        eager = workers._tensors(fn(**kwargs))
        explained = torch._dynamo.explain(fn)(**kwargs)
    torch.save(eager, args.out)
    print(f"{args.family}:{args.variant}: inputs {notes['inputs']}, graphs "
          f"{explained.graph_count}, breaks {explained.graph_break_count}")
    if args.latency:
        torch._dynamo.reset()
        print(time_compiled(torch.compile(fn, backend=args.backend), kwargs, eager,
                            args.latency))
    return 0


def time_compiled(compiled: object, kwargs: dict, eager: list, repeats: int) -> str:
    """``cold S s, steady M ms (median of N), compiled vs eager: close|DIFFERENT``."""
    import torch

    with torch.no_grad():
        start = time.perf_counter()
        first = workers._tensors(compiled(**kwargs))  # type: ignore[operator]
        cold = time.perf_counter() - start
        for _ in range(2):
            compiled(**kwargs)  # type: ignore[operator]
        steady = []
        for _ in range(repeats):
            start = time.perf_counter()
            compiled(**kwargs)  # type: ignore[operator]
            steady.append(time.perf_counter() - start)
    # torch.testing's float32 tolerances: Inductor's fused kernels round differently from
    # eager's (hf_workers' own tolerances are stricter, for the rewritten tree's outputs).
    match = workers._compare(eager, first, rtol=1.3e-6, atol=1e-5)
    return (f"cold {cold:.2f} s, steady {1e3 * statistics.median(steady):.2f} ms (median of "
            f"{repeats}), compiled vs eager: {match['verdict']} (max |diff| "
            f"{match['max_abs']:.1e})")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
