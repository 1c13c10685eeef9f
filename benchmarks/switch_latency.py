"""What Dynamo's switches cost or save: each named transformers case run twice under
``eqrewrite run --package transformers`` (the pack applied in both runs), once in default
settings and once with ``--dynamic-sizes``, through ``hf_one_family.py --latency N``, each
run in a fresh process with an empty Inductor (and Triton) cache. Printed per case: breaks
default → switches, compiled steady latency (median of N calls after two warm-up calls) and
cold latency (the first call, compilation included), the ratios, whether the two runs' eager
outputs are bitwise equal and whether each compiled output is close to its eager one.

Meant for the cases whose breaks drop only with the switches (issue 33's latency item), on
the CPU and, where one is lent, a GPU::

    python benchmarks/switch_latency.py jetmoe higgs_audio_v2 vjepa2
    python benchmarks/switch_latency.py jetmoe higgs_audio_v2 vjepa2 --device cuda \\
        --threads 8 --json gpu.json

A case is ``FAMILY`` or ``FAMILY:VARIANT`` (``forward`` by default). The transformers
release is whichever the subprocesses import. The two runs of a case follow each other, so
that load on a shared machine hits both alike; a run that fails is reported with the end of
its output, and the others go on.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ONE_FAMILY = Path(__file__).resolve().parent / "hf_one_family.py"
MODES = {"default": [], "switches": ["--dynamic-sizes"]}


def run_mode(case: str, mode: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """One ``eqrewrite run [--dynamic-sizes] ... hf_one_family.py`` process: its record, or
    ``{"error": ...}`` with the end of its output."""
    family, _, variant = case.partition(":")
    folder = work / f"{family}-{variant or 'forward'}-{mode}"
    folder.mkdir(parents=True, exist_ok=True)
    cache = Path(tempfile.mkdtemp(prefix="inductor-", dir=folder))
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache),
           "TRITON_CACHE_DIR": str(cache / "triton")}
    command = [sys.executable, "-m", "eqrewrite.rewriter", "run", "--package", "transformers",
               "--cache-dir", str(work / "eqrewrite-cache"), *MODES[mode], str(ONE_FAMILY),
               family, str(folder / "eager.pt"), variant or "forward",
               "--latency", str(args.repeats), "--backend", args.backend,
               "--device", args.device, "--threads", str(args.threads),
               "--record", str(folder / "record.json")]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True,
                              timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout} s"}
    wall = time.perf_counter() - start
    if done.returncode != 0 or not (folder / "record.json").is_file():
        tail = (done.stdout + done.stderr).strip().splitlines()[-8:]
        return {"error": f"exit {done.returncode}: " + " | ".join(tail)}
    record = json.loads((folder / "record.json").read_text())
    return {**record, "wall_s": wall, "eager_file": str(folder / "eager.pt")}


def eager_equal(first: str, second: str) -> bool:
    """Whether two saved eager outputs are bitwise equal (NaN equal to NaN)."""
    import torch

    a, b = torch.load(first), torch.load(second)
    return len(a) == len(b) and all(
        x.shape == y.shape and x.dtype == y.dtype
        and torch.equal(x.nan_to_num(), y.nan_to_num()) and torch.equal(x.isnan(), y.isnan())
        for x, y in zip(a, b))


def row(case: str, runs: dict[str, dict[str, Any]], equal: bool | None) -> dict[str, Any]:
    """One case's figures: breaks, steady and cold latency per mode and their ratios
    (switches / default), or the error of the run that failed."""
    errors = {mode: run["error"] for mode, run in runs.items() if "error" in run}
    if errors:
        return {"case": case, "errors": errors}
    base, switched = runs["default"], runs["switches"]
    return {"case": case,
            "breaks": [base["breaks"], switched["breaks"]],
            "steady_ms": [base["steady_ms"], switched["steady_ms"]],
            "steady_ratio": switched["steady_ms"] / base["steady_ms"],
            "cold_s": [base["cold_s"], switched["cold_s"]],
            "cold_ratio": switched["cold_s"] / base["cold_s"],
            "eager_equal": equal,
            "compiled_vs_eager": [base["compiled_vs_eager"], switched["compiled_vs_eager"]],
            "max_abs": max(base["max_abs"], switched["max_abs"])}


def table(rows: list[dict[str, Any]]) -> str:
    """The Markdown table of ``rows`` with the geometric means of the ratios."""
    lines = ["| case | breaks | steady ms, default → switches | ratio | cold s, default → "
             "switches | ratio | eager equal | compiled vs eager |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "errors" in r:
            lines.append(f"| {r['case']} | " + "; ".join(
                f"{mode}: {error}" for mode, error in r["errors"].items()) + " | | | | | | |")
            continue
        lines.append(
            f"| {r['case']} | {r['breaks'][0]} → {r['breaks'][1]} | {r['steady_ms'][0]:.2f} → "
            f"{r['steady_ms'][1]:.2f} | {r['steady_ratio']:.2f} | {r['cold_s'][0]:.2f} → "
            f"{r['cold_s'][1]:.2f} | {r['cold_ratio']:.2f} | "
            f"{'yes' if r['eager_equal'] else 'NO'} | {', '.join(r['compiled_vs_eager'])} |")
    timed = [r for r in rows if "errors" not in r]
    if timed:
        lines.append(f"| geometric mean | | | **{geomean(r['steady_ratio'] for r in timed):.2f}**"
                     f" | | **{geomean(r['cold_ratio'] for r in timed):.2f}** | | |")
    return "\n".join(lines)


def geomean(values: Any) -> float:
    """The geometric mean of positive ``values``."""
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main(argv: list[str]) -> int:
    """Run every case in both modes, print the table; exit 1 if a run failed or the eager
    outputs of a case differ between the modes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+", metavar="FAMILY[:VARIANT]")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--backend", default="inductor")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--timeout", type=int, default=600, help="seconds per run")
    parser.add_argument("--workdir", type=Path,
                        help="where the runs' outputs go (default: a temporary folder)")
    parser.add_argument("--json", type=Path, metavar="FILE")
    args = parser.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="switch-latency-"))
    rows = []
    for case in args.cases:
        runs = {mode: run_mode(case, mode, args, work) for mode in MODES}
        both = all("error" not in run for run in runs.values())
        equal = eager_equal(runs["default"]["eager_file"], runs["switches"]["eager_file"]) \
            if both else None
        rows.append(row(case, runs, equal))
        print(json.dumps({"case": case, **runs}), flush=True)
        if args.json:
            args.json.write_text(json.dumps({"settings": vars(args) | {
                "workdir": str(work), "json": str(args.json)}, "rows": rows},
                indent=1, default=str) + "\n")
    print(f"\n{args.backend} on {args.device}, {args.threads} thread(s), steady = median of "
          f"{args.repeats} calls; the pack applied in both modes\n")
    print(table(rows))
    failed = any("errors" in r or not r["eager_equal"] for r in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
