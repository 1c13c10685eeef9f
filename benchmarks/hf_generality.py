"""Graph breaks before and after a rule pack on every model family a library has.

``hf_graph_breaks.py`` measures nine hand-written transformers models; a pack tuned on them may
not carry over. This benchmark enumerates every family generically and splits them in two
halves by a hash of the name (``dev``: the half rules may be developed on; ``held-out``: the
half that says whether they generalise), so no one picks the families by whether they break.

Libraries (``--library``):

* ``transformers``: every model type of ``MODEL_MAPPING_NAMES``, built with
  ``AutoModel.from_config`` from ``AutoConfig.for_model(model_type)`` shrunk by ``hf_configs``
  (width 64, 4 heads, 2 layers, vocabulary 128, ... nested sub-configs alike), inputs from
  ``hf_inputs.candidates`` (token ids with the images, videos, audio or boxes the forward
  takes and their placeholder tokens, richest first; the label of the one that ran is kept),
  with a family's recipe first where it has one (``hf_recipes``: config values and inputs its
  config does not state).
  Variants: ``forward`` for every family and, for the causal LMs
  (``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``), ``decode``: one cached step after an eager prefill;
  for the families whose experts layer can switch implementation (5.x's
  ``@use_experts_implementation``), ``experts_eager``: ``forward`` with
  ``experts_implementation="eager"``, the per-expert dispatch loop (5.x picks ``grouped_mm``
  by default where it can; the loop is what runs where it cannot, and what 4.x always runs).
* ``timm``: one model per timm module (the one with the fewest parameters, counted on the meta
  device), ``pretrained=False``, its default input size, batch 2. Variant ``forward``.
* ``diffusers``: every ``ModelMixin`` class ``diffusers.models`` exports, built from its
  ``__init__`` defaults (its default config) shrunk by ``hf_configs.shrink_diffusers``, inputs
  planned from its ``forward`` signature (``hf_diffusers``: latents as images, videos, token
  sequences or signals, timesteps, text at the config's conditioning width, pooled text,
  rotary ids..., richest first, the label of the one that ran kept). Variant ``forward``.

Each (tree, case) pair runs in a fresh worker process (``hf_workers.run_case``) that
imports the package from ``WORKDIR/LIBRARY/orig`` or ``.../rew``; a family whose model cannot
be built or run eagerly is reported as skipped, with the error. The rewritten tree is measured
only on the cases that break in the original one (``--check-unbroken``: on every case, to see
that none gains breaks). ``--original-only`` measures the original tree alone: the quick scan.
Break counts and outputs are always taken on the CPU.

Every mode of ``--modes`` (default: both) is measured: ``default`` (no Dynamo switch) and
``switches`` (``--dynamo-config``'s, else the two capture switches of ``eqrewrite run
--dynamic-sizes``), each with its own records folder; the breaks removed are printed per half
for each mode, side by side.

Then, unless ``--skip-latency``, every case whose breaks dropped (both trees measured, eager
outputs equal) is timed compiled, with the latency workers of ``hf_workers.py``
(``run_latency``): steady state (both trees in one process, ``--backend``, two warm-up calls,
then the median of ``--repeats`` alternating calls) and cold start (the first call,
compilation included, each tree in a fresh process with an empty Inductor cache,
``--cold-repeats`` times), on ``--device`` (the model and its inputs moved there).
``--latency-cases N`` times only the N cases with the most breaks removed (ties by name). A
per-case table and the geometric means of the after/before ratios are printed, and saved
with ``--json``.

The transformers release is whichever is importable (e.g. ``PYTHONPATH=DIR`` with a
``pip install --target DIR transformers==5.24.0`` folder);
timm likewise (with a torchvision that imports on the installed torch), and diffusers (a
``pip install --target DIR diffusers`` folder, with transformers beside it for the few models
that import it).

Examples::

    python benchmarks/hf_generality.py --original-only --workdir W --jobs 2 --json scan.json
    python benchmarks/hf_generality.py --workdir W --reuse-original --split held-out
    python benchmarks/hf_generality.py --library timm --families resnet,vision_transformer
    PYTHONPATH=DIFFUSERS:TRANSFORMERS python benchmarks/hf_generality.py --library diffusers \
        --workdir W --jobs 2 --skip-latency --check-unbroken --json diffusers.json
    python benchmarks/hf_generality.py --workdir W2 --families jetmoe --modes switches \\
        --dynamo-config capture_scalar_outputs=true
    python benchmarks/hf_generality.py --workdir W --reuse-original --reuse-trees \\
        --reuse-records --latency-cases 5 --device cuda   # time an earlier run's cases
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import hf_families as fam
import hf_trees
import hf_workers as hfw

SPLITS = ("dev", "held-out")


def split_of(family: str) -> str:
    """"dev" or "held-out", fixed by the first byte of the family name's SHA-256."""
    return SPLITS[hashlib.sha256(family.encode()).digest()[0] % 2]


WORKER_JOBS: dict[str, Callable[[dict], dict]] = {
    "count": fam.run_worker,
    "latency": lambda spec: hfw.run_latency_worker(spec, fam.build_case),
    "cold": lambda spec: hfw.run_cold_worker(spec, fam.build_case),
}


# --------------------------------------------------------------------------------------------
# Parent
# --------------------------------------------------------------------------------------------

def select_families(all_families: dict[str, tuple[str, ...]], split: str, chosen: str
                    ) -> dict[str, tuple[str, ...]]:
    """The families of ``--split`` (dev, held-out, all), narrowed to ``--families`` if given."""
    wanted = {f.strip() for f in chosen.split(",") if f.strip()}
    unknown = wanted - set(all_families)
    if unknown:
        hf_trees._fail(f"unknown families: {', '.join(sorted(unknown))}")
    return {f: v for f, v in all_families.items()
            if (split == "all" or split_of(f) == split) and (not wanted or f in wanted)}


def scope_excludes(library: fam.Library, package: Any, all_families: list[str],
                   chosen: list[str]) -> list[str]:
    """eqrewrite ``--exclude`` arguments that leave out the code of every family not chosen
    (code a chosen family shares with another stays in)."""
    keep = {library.code(package, family) for family in chosen}
    code = sorted({library.code(package, family) for family in all_families} - keep)
    return [arg for glob in code for arg in ("--exclude", glob)]


def _run_all(tree: str, cases: list[str], workdir: Path, args: argparse.Namespace
             ) -> dict[str, dict]:
    """Every case in one tree, ``--jobs`` worker processes at a time."""
    def one(case: str) -> dict:
        print(f"{case} [{tree}] ...", file=sys.stderr, flush=True)
        result = hfw.run_case(tree, workdir / tree, case, workdir, args, __file__,
                              fam.LIBRARIES[args.library].package)
        if "error" in result:
            print(f"  {case} [{tree}] FAILED: {result['error']}\n"
                  f"{result.get('stderr_tail', '')[-800:]}", file=sys.stderr)
        return result

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        return dict(zip(cases, pool.map(one, cases)))


def _why(record: dict) -> str:
    """Why a worker gave no measurement: the skip reason, why the case does not apply, or its
    error and the last line of its stderr (the exception)."""
    for reason in ("skipped", "not_applicable"):
        if reason in record:
            return str(record[reason])
    lines = [ln for ln in record.get("stderr_tail", "").splitlines() if ln.strip()]
    return f"{record.get('error')}: {lines[-1].strip()[:300]}" if lines else str(
        record.get("error"))


def _status(record: dict | None) -> str:
    """"ok", "not_applicable", "skipped" or "error" for one worker record (None: not
    measured)."""
    if record is None:
        return "not measured"
    for status in ("not_applicable", "skipped", "error"):
        if status in record:
            return status
    return "ok"


def _top_reasons(record: dict, count: int = 3) -> list[str]:
    """The most frequent break reasons of a record, one line each."""
    return [f"{r['count']}x {r['gb_type'] or r['reason']} at {r['frame']}: {r['source']}"
            for r in (record.get("reasons") or [])[:count]]


def _missing_modalities(record: dict) -> list[str]:
    """The modalities a measured case's forward takes that its inputs did not hold (a
    vision-language model run on text alone measures none of its vision code)."""
    if "modalities_given" in record:  # what the inputs held (a recipe's label names none)
        return [m for m in record.get("modalities", []) if m not in record["modalities_given"]]
    label = str(record.get("inputs", ""))  # a record of an earlier run: the label says
    return [] if "+" in label else [m for m in record.get("modalities", []) if m not in label]


def summarize(cases: list[str], orig: dict[str, dict], rew: dict[str, dict]) -> dict:
    """Totals per split and overall, skipped and failed cases, output mismatches, gains."""
    import torch

    # breaking / breaks: the original tree; compared, before, after: the breaking cases
    # measured in both trees.
    per_split: dict[str, dict[str, int]] = {s: dict.fromkeys(
        ("cases", "breaking", "breaks", "compared", "before", "after"), 0) for s in SPLITS}
    report: dict[str, Any] = {key: {} for key in (
        "skipped", "dynamo_only", "not_applicable", "without_modality", "errors", "breaking",
        "mismatches", "gained")}
    report["per_split"] = per_split
    for case in cases:
        before, after = orig.get(case), rew.get(case)
        status = _status(before)
        if status != "ok":
            if status == "skipped" and str(before["skipped"]).startswith(fam.DYNAMO_ONLY):
                status = "dynamo_only"
            key = status if status in ("skipped", "dynamo_only", "not_applicable") else "errors"
            report[key][case] = _why(before or {})
            continue
        missing = _missing_modalities(before)
        if missing:
            report["without_modality"][case] = f"ran as {before['inputs']!r}; takes {missing}"
        split = per_split[split_of(case.rsplit(":", 1)[0])]
        split["cases"] += 1
        if before["breaks"]:
            split["breaking"] += 1
            split["breaks"] += before["breaks"]
            report["breaking"][case] = {"breaks": before["breaks"], "split": split_of(
                case.rsplit(":", 1)[0]), "reasons": _top_reasons(before)}
        if _status(after) != "ok":
            if after is not None:
                report["errors"][case + " [rew]"] = _why(after)
            continue
        if before["breaks"]:
            split["compared"] += 1
            split["before"] += before["breaks"]
            split["after"] += after["breaks"]
            report["breaking"][case]["after"] = after["breaks"]
        match = hfw._compare(torch.load(before["outputs_file"]), torch.load(after["outputs_file"]))
        if match["verdict"] != "equal":
            report["mismatches"][case] = match
        if after["breaks"] > before["breaks"]:
            report["gained"][case] = {"before": before["breaks"], "after": after["breaks"],
                                      "reasons": _top_reasons(after)}
    return report


def _percent(before: int, after: int) -> str:
    """Breaks removed, in percent of before."""
    return f"{100.0 * (before - after) / before:.0f} %" if before else "-"


def print_report(report: dict, families: dict[str, tuple[str, ...]], original_only: bool
                 ) -> None:
    """The split, the breaking cases with their top reasons, totals, skips and problems."""
    for split in SPLITS:
        names = [f for f in families if split_of(f) == split]
        print(f"{split} ({len(names)} families): {', '.join(names)}\n")
    print("breaking cases (original tree):")
    for case, info in report["breaking"].items():
        after = "" if original_only else f" -> {info.get('after', '?')}"
        print(f"  {case:36} {info['split']:8} {info['breaks']}{after}")
        for line in info["reasons"]:
            print(f"      {line[:220]}")
    print()
    for split, t in report["per_split"].items():
        print(f"{split:8}: {t['cases']} cases measured, {t['breaking']} breaking with "
              f"{t['breaks']} breaks" + ("" if original_only else
                                         f"; {t['compared']} compared: {t['before']} -> "
                                         f"{t['after']} ({_percent(t['before'], t['after'])} "
                                         "removed)"))
    if not original_only:
        before = sum(t["before"] for t in report["per_split"].values())
        after = sum(t["after"] for t in report["per_split"].values())
        print(f"total   : breaks {before} -> {after} ({_percent(before, after)} removed)")
    measured = sum(t["cases"] for t in report["per_split"].values())
    total = measured + sum(len(report[k]) for k in ("skipped", "dynamo_only", "errors"))
    print(f"skipped for lack of inputs or a config that builds: {len(report['skipped'])} of "
          f"{total} cases ({_percent(total, total - len(report['skipped']))})")
    for title, key in (("skipped (could not be built or run eagerly)", "skipped"),
                       ("fail under Dynamo only (run eagerly: candidates for the oracle)",
                        "dynamo_only"),
                       ("measured without a modality their forward takes", "without_modality"),
                       ("not applicable (e.g. a decode step of a model without a cache)",
                        "not_applicable"),
                       ("failed (worker error)", "errors"),
                       ("eager outputs differ between the trees", "mismatches"),
                       ("gained breaks", "gained")):
        print(f"\n{title}: {len(report[key])}")
        for case, why in report[key].items():
            print(f"  {case}: {why}")


def latency_cases(report: dict, limit: int | None = None) -> list[str]:
    """The cases to time: breaks dropped (measured in both trees) and eager outputs equal,
    the most breaks removed first, ties by name; the first ``limit`` (None: all)."""
    removed = {case: info["breaks"] - info["after"] for case, info in report["breaking"].items()
               if "after" in info and info["after"] < info["breaks"]
               and case not in report["mismatches"]}
    ranked = sorted(removed, key=lambda case: (-removed[case], case))
    return ranked if limit is None else ranked[:max(limit, 0)]


def latency_means(latencies: dict[str, dict]) -> dict[str, Any]:
    """Geometric means of after/before over the timed cases (failed ones left out): steady
    state (median call) and cold start (first call); None where no case has the figure."""
    steady, cold = [], []
    for timing in latencies.values():
        if "error" in timing:
            continue
        before, after = timing["orig"], timing["rew"]
        steady.append(after["median_s"] / before["median_s"])
        if "cold_s" in before and "cold_s" in after:
            cold.append(after["cold_s"] / before["cold_s"])
    return {"cases": len(steady),
            "steady": statistics.geometric_mean(steady) if steady else None,
            "cold": statistics.geometric_mean(cold) if cold else None}


def latency_rows(latencies: dict[str, dict], report: dict) -> list[list[str]]:
    """One table row per timed case: breaks, steady ms and cold s before/after, ratios."""
    rows = []
    for case, timing in latencies.items():
        info = report["breaking"][case]
        breaks = f"{info['breaks']} -> {info['after']}"
        if "error" in timing:
            rows.append([case, breaks] + ["ERR"] * 6)
            continue
        before, after = timing["orig"], timing["rew"]
        row = [case, breaks, f"{1e3 * before['median_s']:.2f}", f"{1e3 * after['median_s']:.2f}",
               f"{after['median_s'] / before['median_s']:.2f}"]
        if "cold_s" in before and "cold_s" in after:
            row += [f"{before['cold_s']:.2f}", f"{after['cold_s']:.2f}",
                    f"{after['cold_s'] / before['cold_s']:.2f}"]
        else:
            row += ["-"] * 3
        rows.append(row)
    return rows


def print_latency(latencies: dict[str, dict], report: dict, args: argparse.Namespace) -> None:
    """The latency table, the geometric means, compiled outputs off the eager ones, failures."""
    print(f"\ncompiled latency ({args.backend}, {args.device}, {args.threads} thread(s)): "
          f"steady = median of {args.repeats} calls (both trees in one process, alternating), "
          f"cold = first call with compilation in a fresh process with an empty compile cache "
          f"(median of {args.cold_repeats}); ratio = after/before")
    header = ["case", "breaks", "steady before ms", "steady after ms", "ratio",
              "cold before s", "cold after s", "ratio"]
    rows = latency_rows(latencies, report)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, ["-" * w for w in widths], *rows]:
        print("  " + " | ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    means = latency_means(latencies)
    shown = {k: "-" if means[k] is None else f"{means[k]:.2f}" for k in ("steady", "cold")}
    print(f"  geometric mean of after/before over {means['cases']} cases: steady "
          f"{shown['steady']}, cold {shown['cold']}")
    for case, timing in latencies.items():
        if "error" in timing:
            print(f"  {case}: latency run failed: {_why(timing)}")
            continue
        for tree in ("orig", "rew"):
            verdict = timing[tree].get("compiled_vs_eager", {}).get("verdict")
            if verdict == "DIFFERENT":
                print(f"  {case} [{tree}]: compiled outputs differ from eager ones "
                      f"(max |diff| {timing[tree]['compiled_vs_eager']['max_abs']})")


def run_latencies(report: dict, workdir: Path, args: argparse.Namespace) -> dict[str, dict]:
    """Time the chosen cases (``latency_cases``) with hf_workers' ``run_latency``, each in
    fresh worker processes of this script."""
    latencies = {}
    for case in latency_cases(report, args.latency_cases):
        print(f"{case} latency, both trees ...", file=sys.stderr, flush=True)
        latencies[case] = hfw.run_latency(case, workdir, args, __file__,
                                          fam.LIBRARIES[args.library].package)
        if "error" in latencies[case]:
            print(f"  {case} latency FAILED: {latencies[case]['error']}\n"
                  f"{latencies[case].get('stderr_tail', '')[-800:]}", file=sys.stderr)
    return latencies


def main(argv: list[str] | None = None) -> int:
    """Parse options; run as the benchmark driver or as a one-case worker."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", choices=sorted(fam.LIBRARIES), default="transformers")
    parser.add_argument("--rules", default="graphbreaks",
                        help="rule pack name or path (default: graphbreaks)")
    parser.add_argument("--split", choices=[*SPLITS, "all"], default="all")
    parser.add_argument("--families", default="", help="comma-separated families (default: all)")
    parser.add_argument("--workdir", type=Path,
                        help="folder for the trees and records (default: a temp folder, kept)")
    parser.add_argument("--original-only", action="store_true",
                        help="measure the original tree only: which families break")
    parser.add_argument("--check-unbroken", action="store_true",
                        help="measure the rewritten tree on unbroken cases too (gained breaks)")
    parser.add_argument("--reuse-original", action="store_true",
                        help="take the original tree's records from an earlier run in the "
                             "workdir when the package and torch versions match")
    parser.add_argument("--rewrite-scope", choices=["all", "families"], default="all",
                        help="rewrite the whole package (default) or leave out the code of the "
                             "families not selected (faster; a family's breaks in another "
                             "family's code are then not rewritten)")
    parser.add_argument("--reuse-trees", action="store_true",
                        help="reuse the workdir's orig/ and rew/ trees if both exist")
    parser.add_argument("--reuse-records", action="store_true",
                        help="with --reuse-trees: take both trees' records from an earlier run "
                             "in the workdir when the versions match (e.g. to time its cases)")
    parser.add_argument("--json", type=Path, help="write the full results to this JSON file")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes at a time")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds per worker process (default: 600)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    hfw.add_dynamo_config_argument(parser)
    hfw.add_modes_argument(parser)
    parser.add_argument("--skip-latency", action="store_true",
                        help="do not time compiled runs (otherwise: every case whose breaks "
                             "dropped, both trees)")
    parser.add_argument("--latency-cases", type=int, metavar="N",
                        help="time only the N cases with the most breaks removed (ties by "
                             "name; default: all)")
    parser.add_argument("--backend", default="inductor",
                        help="torch.compile backend for latency (inductor, aot_eager, eager)")
    parser.add_argument("--device", default="cpu",
                        help="device the latency runs use (cpu, cuda, cuda:1...); break counts "
                             "are taken on the CPU")
    parser.add_argument("--repeats", type=int, default=hfw.REPEATS,
                        help=f"timed calls after {hfw.WARMUP} warm-up calls; the median is kept "
                             f"(default: {hfw.REPEATS})")
    parser.add_argument("--cold-repeats", type=int, default=1,
                        help="cold starts per tree and case, each in a fresh process with an "
                             "empty compile cache; the median is kept (default: 1; 0: none)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", help=argparse.SUPPRESS)
    parser.set_defaults(record_profile=None)
    args = parser.parse_args(argv)
    if args.worker:
        spec = json.loads(args.worker)
        result = WORKER_JOBS[spec.get("job", "count")](spec)
        Path(args.worker_out).write_text(json.dumps(result, indent=1))
        return 0
    return run(args)


def run(args: argparse.Namespace) -> int:
    """The benchmark driver: list, split, make the trees, then measure every mode."""
    import importlib

    library = fam.LIBRARIES[args.library]
    package = importlib.import_module(library.package)
    every = library.families(package)
    families = select_families(every, args.split, args.families)
    cases = [f"{family}:{variant}" for family, variants in families.items()
             for variant in variants]
    root = (args.workdir or Path(tempfile.mkdtemp(prefix="generality-"))).resolve()
    workdir = root / args.library
    pack = hf_trees._check_pack(args.rules)
    rewrite = None
    if args.original_only:
        hf_trees.copy_original(workdir, library.package, args.reuse_original)
    else:
        excludes = (scope_excludes(library, package, list(every), list(families))
                    if args.rewrite_scope == "families" else [])
        rewrite = hf_trees.prepare_trees(workdir, pack, "all", [], args.reuse_trees, excludes,
                                    library.package)
    modes = {mode: measure_mode(cases, families, workdir, hfw.mode_args(args, mode))
             for mode in args.modes}
    if len(modes) > 1 and not args.original_only:
        print_modes(modes)
    if args.json:
        args.json.write_text(json.dumps(
            {"library": args.library, "version": _version(library.package), "rules": pack,
             "workdir": str(root), "rewrite": rewrite, "split": {f: split_of(f) for f in families},
             "modes": modes}, indent=1))
        print(f"\nresults written to {args.json}")
    failed = any(m["report"]["errors"] or m["report"]["mismatches"] or m["report"]["gained"]
                 for m in modes.values())
    return 1 if failed else 0


def measure_mode(cases: list[str], families: dict[str, tuple[str, ...]], workdir: Path,
                 args: argparse.Namespace) -> dict[str, Any]:
    """One mode: the original tree, the rewritten one on the cases that break, the report
    printed, latency unless skipped; what the JSON keeps of it."""
    settings = hfw.dynamo_settings(args)
    print(f"\n===== mode: {'switches ' + str(settings) if settings else 'default'} =====\n")
    orig = _run_all("orig", cases, workdir, args)
    rew: dict[str, dict] = {}
    if not args.original_only:
        chosen = [c for c in cases if _status(orig[c]) == "ok"
                  and (orig[c]["breaks"] or args.check_unbroken)]
        rew = _run_all("rew", chosen, workdir, args)
    report = summarize(cases, orig, rew)
    print_report(report, families, args.original_only)
    latency = None
    if not (args.original_only or args.skip_latency):
        latency = measure_latency(report, workdir, args)
    return {"dynamo_config": settings, "report": report, "latency": latency, "orig": orig,
            "rew": rew}


def measure_latency(report: dict, workdir: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Time the cases whose breaks dropped, print the table; what the JSON keeps."""
    latencies = run_latencies(report, workdir, args)
    if latencies:
        print_latency(latencies, report, args)
    means = latency_means(latencies)
    return {"backend": args.backend, "device": args.device, "threads": args.threads,
            "repeats": args.repeats, "cold_repeats": args.cold_repeats,
            "limit": args.latency_cases, "geomean_steady": means["steady"],
            "geomean_cold": means["cold"],
            "cases": {case: {"breaks_before": report["breaking"][case]["breaks"],
                             "breaks_after": report["breaking"][case]["after"], **timing}
                      for case, timing in latencies.items()}}


def print_modes(modes: dict[str, dict]) -> None:
    """Breaks removed per half in each mode, side by side."""
    print("\nper half and mode (breaking cases measured in both trees: before -> after):")
    for split in SPLITS:
        cells = []
        for mode, measured in modes.items():
            t = measured["report"]["per_split"][split]
            cells.append(f"{mode} {t['before']} -> {t['after']} "
                         f"({_percent(t['before'], t['after'])})")
        print(f"  {split:8}: " + "; ".join(cells))


def _version(package: str) -> str:
    """The installed version of ``package``."""
    from importlib.metadata import version

    return version(package)


if __name__ == "__main__":
    sys.exit(main())
