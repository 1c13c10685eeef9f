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
(``forward`` by default), ``--latency N``, ``--backend`` (inductor by default), ``--device``
(cpu by default; the break count is the same on any device), ``--threads`` (1) and
``--record FILE`` (the printed figures as JSON, for ``switch_latency.py``). The transformers
release is whichever is importable.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
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
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--record", type=Path, metavar="FILE",
                        help="also write the figures printed as JSON")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    fn, kwargs, notes = families.build_transformers(transformers, args.family, args.variant,
                                                    args.device)
    with torch.no_grad():
        eager = [t.cpu() for t in workers._tensors(fn(**kwargs))]
        explained = torch._dynamo.explain(fn)(**kwargs)
    torch.save(eager, args.out)
    record = {"case": f"{args.family}:{args.variant}", "inputs": notes["inputs"],
              "graphs": explained.graph_count, "breaks": explained.graph_break_count,
              "device": args.device, "threads": args.threads, "backend": args.backend,
              "torch": torch.__version__, "transformers": transformers.__version__}
    print(f"{record['case']}: inputs {notes['inputs']}, graphs {record['graphs']}, breaks "
          f"{record['breaks']}")
    if args.latency:
        torch._dynamo.reset()
        record.update(time_compiled(torch.compile(fn, backend=args.backend), kwargs, eager,
                                    args.latency, args.device))
        print(f"cold {record['cold_s']:.2f} s, steady {record['steady_ms']:.2f} ms (median of "
              f"{args.latency}), compiled vs eager: {record['compiled_vs_eager']} (max |diff| "
              f"{record['max_abs']:.1e})")
    if args.record:
        args.record.write_text(json.dumps(record, indent=1) + "\n")
    return 0


def time_compiled(compiled: object, kwargs: dict, eager: list, repeats: int,
                  device: str = "cpu") -> dict:
    """``{cold_s, steady_ms, repeats, compiled_vs_eager, max_abs}``: the first call
    (compilation included) and the median of ``repeats`` calls after two warm-up calls, each
    waited for on ``device``; the first call's outputs against ``eager``."""
    import torch

    time_call = workers._timer(device)
    with torch.no_grad():
        cold, first = time_call(lambda: compiled(**kwargs))  # type: ignore[operator]
        for _ in range(2):
            compiled(**kwargs)  # type: ignore[operator]
        steady = [time_call(lambda: compiled(**kwargs))[0]  # type: ignore[operator]
                  for _ in range(repeats)]
    # torch.testing's float32 tolerances: Inductor's fused kernels round differently from
    # eager's (hf_workers' own tolerances are stricter, for the rewritten tree's outputs).
    match = workers._compare(eager, [t.cpu() for t in workers._tensors(first)],
                             rtol=1.3e-6, atol=1e-5)
    return {"cold_s": cold, "steady_ms": 1e3 * statistics.median(steady), "repeats": repeats,
            "compiled_vs_eager": match["verdict"], "max_abs": match["max_abs"] or 0.0}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
