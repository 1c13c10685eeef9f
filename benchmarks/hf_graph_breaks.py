"""Graph breaks in Hugging Face transformers before and after an eqrewrite rule pack.

The benchmark copies the installed ``transformers`` package to ``WORKDIR/orig/transformers``,
rewrites it with ``eqrewrite orig/transformers --rules PACK --out rew/transformers`` (the
whole package by default; ``hf_trees.py``) and then, for every case (a model of
``hf_models.py`` and a variant: ``forward``, the head with ``labels``, ``attn`` /
``attn_eager`` = ``output_attentions=True`` with the default sdpa and with the eager attention
implementation, Longformer's ``global`` attention, and ``decode``: one cached decoding step
after an eager prefill) and for each of the two trees, starts a fresh Python process running
this script as a worker (``hf_workers.py``) that

* imports ``transformers`` from that tree (and checks ``transformers.__file__``),
* builds the model from a tiny config with random weights (``torch.manual_seed(0)``, eval
  mode, no downloads) and fixed seeded inputs (batch 2 x 16 tokens),
* computes the eager output and counts graph breaks with
  ``oracle.graphbreaks.count_graph_breaks(..., backend="eager")``,
* writes a JSON record and the output tensors (``torch.save``) for the parent.

Then, unless ``--skip-latency``, every case whose breaks dropped is timed on ``--device``
(``cpu`` by default, ``cuda`` on a GPU machine, unchanged otherwise): steady state in one
more process that imports both trees, compiles both models with ``--backend`` (Inductor by
default) and times them in alternation (two warm-up calls, then the median of
``--repeats``); cold start (the first call, compilation included, GraphMend's other figure)
``--cold-repeats`` times per tree, each in a fresh process with an empty Inductor cache.

All of it runs in each mode of ``--modes`` (default: both): ``default`` (Dynamo's default
settings) and ``switches`` (the ``--dynamo-config`` switches, else the two capture switches
of ``eqrewrite run --dynamic-sizes``: the ones the audit names for breaks on data-dependent
values), set in every worker of both trees; each mode's records go to their own outputs
folder. Per mode the parent prints one row per case (breaks before/after, fullgraph
before/after, whether the eager outputs of the two trees match, compiled latency ratio
after/before), totals compared with GraphMend's 72 % (122 -> 34 breaks), and every break
reason (gb_type and the frame in transformers, with its source line); then, with more than
one mode, the modes side by side. ``--json`` saves everything (``"modes": {mode: ...}``).

Examples::

    python benchmarks/hf_graph_breaks.py                      # rules/graphbreaks.yaml
    python benchmarks/hf_graph_breaks.py --rules default --models t5,bert --skip-latency
    python benchmarks/hf_graph_breaks.py --backend aot_eager --json /tmp/hf.json
    python benchmarks/hf_graph_breaks.py --device cuda --models mixtral,llama --cold-repeats 3
    python benchmarks/hf_graph_breaks.py --record-profile traced.txt --skip-latency
    python benchmarks/hf_graph_breaks.py --eqrewrite-args "--scope traced:traced.txt"
    python benchmarks/hf_graph_breaks.py --modes switches \\
        --dynamo-config capture_scalar_outputs=true

This module is the driver (options, modes, printing); models live in ``hf_models.py``
(``MODELS``: a tiny config and the classes; variants in ``_build_variant``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import hf_trees
import hf_workers as hfw
from hf_models import CASES, MODELS, VARIANTS, NotApplicable

GRAPHMEND = (122, 34)  # GraphMend's total breaks before -> after on its benchmark (72 % removed)


# --------------------------------------------------------------------------------------------
# Worker jobs (in the fresh process this script runs as with --worker)
# --------------------------------------------------------------------------------------------

def run_worker(spec: dict) -> dict:
    """Build one case from one tree and count its breaks under the spec's Dynamo switches;
    the JSON-able result."""
    import torch

    transformers = hfw._import_tree(spec["tree_parent"])
    torch.set_num_threads(spec["threads"])
    hfw._apply_dynamo_settings(spec)
    torch.manual_seed(0)
    try:
        model, kwargs = CASES[spec["case"]].build(spec.get("device", "cpu"))
    except NotApplicable as reason:
        return {"not_applicable": str(reason)}
    return hfw.measure(model, kwargs, spec, transformers)


def _build_case(package: Any, case: str, device: str) -> tuple[Any, dict]:
    """``(callable, keyword arguments)`` of one of ``CASES`` on ``device`` (the latency
    workers' builder; ``package`` is the tree's transformers, imported already)."""
    return CASES[case].build(device)


WORKER_JOBS = {
    "count": run_worker,
    "latency": lambda spec: hfw.run_latency_worker(spec, _build_case),
    "cold": lambda spec: hfw.run_cold_worker(spec, _build_case),
}


# --------------------------------------------------------------------------------------------
# Parent: one mode's table, totals and reasons; the modes side by side
# --------------------------------------------------------------------------------------------

def _totals(results: dict, cases: list[str]) -> dict[str, float]:
    """Breaks of ``cases`` summed over each tree, and the share removed."""
    before = sum(results[c]["orig"]["breaks"] for c in cases)
    after = sum(results[c]["rew"]["breaks"] for c in cases)
    return {"breaks_before": before, "breaks_after": after,
            "percent_removed": 100.0 * (before - after) / before if before else 0.0}


def _fmt_ratio(latency: dict | None) -> str:
    """Compiled latency after/before, or "-"."""
    if not latency or "error" in latency:
        return "-" if not latency else "ERR"
    b, a = latency["orig"]["median_s"], latency["rew"]["median_s"]
    return f"{a / b:.2f}" if b else "-"


def _row(case: str, before: dict, after: dict, latency: dict | None
         ) -> tuple[list[str], dict]:
    """One printed table row and the per-case comparison record."""
    import torch

    if "not_applicable" in before:
        return [case, "n/a", "n/a", "-", before["not_applicable"], "-"], {
            "not_applicable": before["not_applicable"]}
    if "not_applicable" in after:
        after = {"error": f"not applicable after the rewrite: {after['not_applicable']}"}
    if "error" in before or "error" in after:
        which = "before" if "error" in before else "after"
        record = {"error": (before if which == "before" else after)["error"]}
        return [case, "ERR", "ERR", "-", which + " failed", "-"], record
    match = hfw._compare(torch.load(before["outputs_file"]), torch.load(after["outputs_file"]))
    fg = "/".join("yes" if r["fullgraph_ok"] else "no" for r in (before, after))
    ratio = _fmt_ratio(latency)
    record = {"breaks_before": before["breaks"], "breaks_after": after["breaks"],
              "fullgraph_before": before["fullgraph_ok"], "fullgraph_after": after["fullgraph_ok"],
              "outputs_match": match, "latency_ratio_after_before": ratio,
              "latency": latency}
    shown = match["verdict"] if match["verdict"] == "equal" else (
        f"{match['verdict']} ({match['max_abs']:.1e})" if match["max_abs"] is not None
        else match["verdict"])
    b, a = (f"{r['breaks']}{'*' if r.get('dynamo_crash') else ''}" for r in (before, after))
    return [case, b, a, fg, shown, ratio], record


TABLE_HEADER = ["model", "breaks before", "breaks after", "fullgraph b/a", "outputs match",
                "latency after/before"]


def _print_table(rows: list[list[str]], header: list[str] = TABLE_HEADER) -> None:
    """Print rows as an aligned text table with a header."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, ["-" * w for w in widths], *rows]:
        print(" | ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())


def _print_reasons(results: dict[str, dict[str, dict]]) -> None:
    """Every distinct break reason per case and tree: count, gb_id, gb_type, frame, source."""
    for case, trees in results.items():
        for tree in ("orig", "rew"):
            res = trees.get(tree, {})
            reasons = res.get("reasons") or []
            if not reasons:
                continue
            print(f"\n{case} [{tree}] {res['breaks']} breaks, {res['graph_count']} graphs, "
                  f"fullgraph error: {res.get('fullgraph_error')}")
            for r in reasons:
                print(f"  {r['count']:>3}x {r['gb_id'] or '?':7} {r['gb_type'] or r['reason']}")
                print(f"       at {r['frame']}: {r['source']}")
                if r["detail"]:
                    print(f"       {r['detail'][:160]}")


def _print_latency(latencies: dict[str, dict]) -> None:
    """Cold-start and steady-state compiled latency of the cases whose breaks dropped, and
    the geometric means of after/before."""
    timed = {c: t for c, t in latencies.items() if "error" not in t}
    if not timed:
        return
    device = next(iter(timed.values()))["orig"].get("device", "cpu")
    print(f"\ncompiled latency on {device}: cold = first call in a fresh process with an "
          "empty compile cache (compilation included), steady = median of repeated calls "
          "(both trees in one process, alternating):")
    steady, cold = [], []
    for case, timing in timed.items():
        before, after = timing["orig"], timing["rew"]
        steady.append(after["median_s"] / before["median_s"])
        line = (f"  {case:24} steady before {1e3 * before['median_s']:8.2f} ms  after "
                f"{1e3 * after['median_s']:8.2f} ms  after/before {steady[-1]:.2f}")
        if "cold_s" in before:
            cold.append(after["cold_s"] / before["cold_s"])
            line += (f" | cold before {before['cold_s']:6.2f} s  after {after['cold_s']:6.2f} s"
                     f"  after/before {cold[-1]:.2f}")
        print(line)
    print(f"  geometric mean of after/before over {len(steady)} cases: steady "
          f"{statistics.geometric_mean(steady):.2f}"
          + (f", cold {statistics.geometric_mean(cold):.2f}" if cold else ""))
    for case, timing in latencies.items():
        if "error" in timing:
            print(f"  {case}: latency run failed: {timing['error']}")



def measure_mode(cases: list[str], workdir: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One mode (the Dynamo switches ``args`` set): both trees' records of every case, the
    latency of the cases whose breaks dropped, the table, totals and reasons printed; what
    the JSON keeps of it."""
    settings = hfw.dynamo_settings(args)
    print(f"\n===== mode: {'switches ' + str(settings) if settings else 'default'} =====\n")
    results: dict[str, dict[str, dict]] = {}
    for case in cases:
        results[case] = {}
        for tree in ("orig", "rew"):
            print(f"{case} [{tree}] ...", file=sys.stderr, flush=True)
            res = hfw.run_case(tree, workdir / tree, case, workdir, args, __file__)
            if "error" in res:
                print(f"  FAILED: {res['error']}\n{res.get('stderr_tail', '')}",
                      file=sys.stderr)
            results[case][tree] = res
    latencies: dict[str, dict] = {}
    for case in cases:
        orig, rew = results[case]["orig"], results[case]["rew"]
        if args.skip_latency or {"error", "not_applicable"} & (set(orig) | set(rew)):
            continue
        if rew["breaks"] < orig["breaks"]:  # every case whose breaks dropped
            print(f"{case} latency, both trees ...", file=sys.stderr, flush=True)
            latencies[case] = hfw.run_latency(case, workdir, args, __file__)
    rows, comparison = [], {}
    for case in cases:
        row, comparison[case] = _row(case, results[case]["orig"], results[case]["rew"],
                                     latencies.get(case))
        rows.append(row)
    _print_table(rows)
    _print_latency(latencies)
    ok = [c for c in cases if not {"error", "not_applicable"} & set(comparison[c])]
    totals = _totals(results, ok)
    print(f"\ntotal breaks: {_before_after(totals)} ({totals['percent_removed']:.0f} % removed; "
          f"GraphMend: {GRAPHMEND[0]} -> {GRAPHMEND[1]}, {_graphmend_removed():.0f} % removed)")
    traced = [c for c in ok if not any(r.get("dynamo_crash") for r in results[c].values())]
    traced_totals = _totals(results, traced)
    if len(traced) < len(ok):
        print("* Dynamo crashed on a frame (internal error); counted again with "
              "suppress_errors=True, each suppressed crash counted as one break")
        print(f"without the {len(ok) - len(traced)} case(s) on which Dynamo crashes (what "
              f"hf_generality.py lists as failing under Dynamo only): "
              f"{_before_after(traced_totals)} ({traced_totals['percent_removed']:.0f} % removed)")
    controls = [c for c in ok if CASES[c].control and results[c]["orig"]["breaks"]]
    if controls:
        print(f"warning: control model(s) with breaks: {', '.join(controls)}")
    _print_reasons(results)
    return {"dynamo_config": settings,
            "totals": {**totals, "cases": len(ok), "graphmend": {
                "before": GRAPHMEND[0], "after": GRAPHMEND[1],
                "percent_removed": _graphmend_removed()},
                "without_dynamo_crashes": {**traced_totals, "cases": len(traced)}},
            "comparison": comparison, "results": results}


def _before_after(totals: dict) -> str:
    """"before -> after" of a totals record."""
    return f"{totals['breaks_before']} -> {totals['breaks_after']}"


def _graphmend_removed() -> float:
    """The share of breaks GraphMend removed on its benchmark, in percent."""
    return 100.0 * (GRAPHMEND[0] - GRAPHMEND[1]) / GRAPHMEND[0]


def _cell(record: dict) -> str:
    """One case in one mode, for the side-by-side table: breaks before -> after, "n/a" or
    "ERR"."""
    if "not_applicable" in record:
        return "n/a"
    if "error" in record:
        return "ERR"
    return f"{record['breaks_before']} -> {record['breaks_after']}"


def print_modes(modes: dict[str, dict], cases: list[str]) -> None:
    """Every case's breaks before -> after in each mode, side by side, then each mode's
    totals and the share removed."""
    print("\nmodes side by side (breaks before -> after):")
    rows = [[case] + [_cell(m["comparison"][case]) for m in modes.values()] for case in cases]
    rows.append(["total"] + [f"{_before_after(m['totals'])} "
                             f"({m['totals']['percent_removed']:.0f} % removed)"
                             for m in modes.values()])
    _print_table(rows, ["case", *modes])
    for mode, measured in modes.items():
        t = measured["totals"]
        settings = ", ".join(f"{k}={v}" for k, v in measured["dynamo_config"].items())
        print(f"{mode:9}: {_before_after(t)} ({t['percent_removed']:.0f} % removed) over "
              f"{t['cases']} cases" + (f"; switches {settings}" if settings else ""))


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------

def select_cases(models: str) -> list[str]:
    """The cases of ``--models``: models (all their variants) or "model:variant" cases."""
    cases = []
    for item in (m.strip() for m in models.split(",") if m.strip()):
        chosen = [item] if item in CASES else [c for c in CASES if c.startswith(item + ":")]
        if not chosen:
            hf_trees._fail(f"unknown model or case {item!r}; choose from {', '.join(MODELS)} "
                           f"or {', '.join(CASES)}")
        cases += chosen
    return cases


def run(args: argparse.Namespace) -> int:
    """The benchmark driver: make the trees, measure every mode, print them side by side."""
    cases = select_cases(args.models)
    pack = hf_trees._check_pack(args.rules)
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="hf-graph-breaks-"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        folders = sorted({folder for case in cases for folder in CASES[case].folders})
        rewrite = hf_trees.prepare_trees(workdir, pack, args.rewrite_scope, folders,
                                         args.reuse_trees, args.eqrewrite_args.split())
        print(f"\nrule pack: {pack}   backend (latency): "
              f"{'skipped' if args.skip_latency else args.backend}   outputs: 'equal' = "
              f"torch.equal on every output tensor, 'allclose' = rtol {hfw.RTOL}, "
              f"atol {hfw.ATOL}")
        modes = {mode: measure_mode(cases, workdir, hfw.mode_args(args, mode))
                 for mode in args.modes}
        if args.record_profile:  # what Dynamo traced in the original tree, in any mode
            entries = sorted({e for m in modes.values() for c in cases
                              for e in m["results"][c]["orig"].get("traced", [])})
            args.record_profile.write_text(
                "# functions Dynamo traced (hf_graph_breaks.py --record-profile)\n"
                + "".join(e + "\n" for e in entries))
            print(f"profile of {len(entries)} functions written to {args.record_profile}",
                  file=sys.stderr)
        if len(modes) > 1:
            print_modes(modes, cases)
        if args.json:
            args.json.write_text(json.dumps(
                {"rules": pack, "backend": None if args.skip_latency else args.backend,
                 "workdir": str(workdir), "rewrite": rewrite, "modes": modes}, indent=1))
            print(f"\nresults written to {args.json}")
        failed = any("error" in m["comparison"][c] for m in modes.values() for c in cases)
        return 1 if failed else 0
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Parse options; run as the benchmark driver or as a one-case worker."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", default="graphbreaks",
                        help="rule pack name or path (default: graphbreaks)")
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated models ({', '.join(MODELS)}) or model:variant "
                             f"cases (variants: {', '.join(VARIANTS)})")
    parser.add_argument("--eqrewrite-args", default="",
                        help="extra arguments for the eqrewrite command, e.g. "
                             "'--scope traced:profile.txt'")
    parser.add_argument("--backend", default="inductor",
                        help="torch.compile backend for latency (inductor, aot_eager, eager)")
    parser.add_argument("--device", default="cpu",
                        help="device the models run on, for the break counts and the latency "
                             "(cpu, cuda, cuda:1...)")
    parser.add_argument("--cold-repeats", type=int, default=1,
                        help="cold starts per tree and case, each in a fresh process with an "
                             "empty compile cache; the median is kept (default: 1)")
    parser.add_argument("--skip-latency", action="store_true",
                        help="do not time compiled runs (otherwise: cases whose breaks all went "
                             "away, both trees timed in one process)")
    parser.add_argument("--json", type=Path, help="write the full results to this JSON file")
    hfw.add_dynamo_config_argument(parser)
    hfw.add_modes_argument(parser)
    parser.add_argument("--workdir", type=Path,
                        help="folder for the two trees and outputs (default: a temp folder, "
                             "removed at the end)")
    parser.add_argument("--reuse-trees", action="store_true",
                        help="with --workdir: reuse orig/ and rew/ if both exist")
    parser.add_argument("--rewrite-scope", choices=["all", "cases"], default="all",
                        help="rewrite the whole package (default) or only the selected cases' "
                             "model folders plus the shared modules (faster)")
    parser.add_argument("--repeats", type=int, default=hfw.REPEATS,
                        help=f"timed calls after {hfw.WARMUP} warm-up calls; the median is kept "
                             f"(default: {hfw.REPEATS})")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads per worker (default: 1; more threads are slower "
                             "and noisier for tiny models on a busy machine)")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds per worker process (default: 1800)")
    parser.add_argument("--reuse-original", action="store_true",
                        help="with --workdir: take the original tree's per-case records from "
                             "an earlier run there when the installed transformers and torch "
                             "versions match (the rewritten tree is always measured)")
    parser.add_argument("--reuse-records", action="store_true",
                        help="with --reuse-trees: take both trees' per-case records from earlier "
                             "runs in the workdir (to time more cases, or to finish a run split "
                             "over several processes)")
    parser.add_argument("--record-profile", type=Path,
                        help="write the functions Dynamo traced in the original tree (all "
                             "cases, every mode) to this file, for --eqrewrite-args "
                             "'--scope traced:FILE'")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        spec = json.loads(args.worker)
        result = WORKER_JOBS[spec["job"]](spec)
        Path(args.worker_out).write_text(json.dumps(result, indent=1))
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
