"""Worker processes of the graph-break benchmarks: one (tree, case) pair in a fresh interpreter.

Both drivers (``hf_graph_breaks.py``: the hand-written models; ``hf_generality.py``: every
family of a library) measure each case of each tree (``WORKDIR/orig``, ``WORKDIR/rew``) in a
fresh process that runs the driver's own script with ``--worker SPEC --worker-out FILE``; the
driver dispatches the spec's ``job`` ("count", "latency", "cold") to its workers, which use
what is here with the driver's builder.

* Worker side (in the fresh process): import the package from one tree (``_import_tree``),
  set the Dynamo switches (``_apply_dynamo_settings``), count graph breaks and save the eager
  outputs (``measure``), time compiled calls (``run_latency_worker``: both trees in one
  process, alternating; ``run_cold_worker``: the first call with an empty compile cache).
* Parent side: start a worker on a spec and read its record (``_run_worker_process``,
  ``run_case``, ``run_latency``), keep the records of an earlier run (``_kept_record``), and
  put each mode's records in its own folder (``outputs_folder``: ``outputs`` for default
  settings, ``outputs-KEY=VALUE,...`` with Dynamo switches).
* Modes, shared by both drivers: ``--modes default,switches`` (``MODES``, ``_modes``,
  ``add_modes_argument``) and each mode's options (``mode_args``: no switch, or the
  ``--dynamo-config`` ones, else those of ``eqrewrite run --dynamic-sizes``).

``_compare`` says whether two lists of output tensors are equal, allclose or different.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

RTOL, ATOL = 1e-6, 1e-7  # "allclose" tolerance when the outputs are not bitwise equal
COMPILED_RTOL, COMPILED_ATOL = 1e-4, 1e-5  # compiled vs eager (Inductor reorders float ops)
WARMUP, REPEATS = 2, 10
# build(package, case, device) -> (callable, kwargs): a driver's case builder, for the
# latency workers (``package`` imported from the tree already).
Builder = Callable[[Any, str, str], tuple[Any, dict]]


# --------------------------------------------------------------------------------------------
# Worker side: one (tree, case) pair in this fresh process
# --------------------------------------------------------------------------------------------

def _tensors(obj: Any) -> list[Any]:
    """Every tensor in a (nested) model output, in a deterministic order."""
    import torch

    if isinstance(obj, torch.Tensor):
        return [obj.detach()]
    if isinstance(obj, (tuple, list)):
        return [t for item in obj for t in _tensors(item)]
    if isinstance(obj, dict):  # ModelOutput is an OrderedDict
        return [t for value in obj.values() for t in _tensors(value)]
    if hasattr(obj, "to_legacy_cache"):  # transformers Cache objects
        return _tensors(obj.to_legacy_cache())
    if hasattr(obj, "__dict__"):
        return [t for _, value in sorted(vars(obj).items()) for t in _tensors(value)]
    return []


def _relative_frame(frame: str | None, tree_parent: str) -> str | None:
    """A frame "path:line" relative to the tree's parent ("transformers/...:N") when inside."""
    if not frame:
        return frame
    prefix = tree_parent.rstrip(os.sep) + os.sep
    return frame[len(prefix):] if frame.startswith(prefix) else frame


def _source_line(frame: str | None) -> str:
    """The stripped source line a "path:line" frame points at ("" if unknown)."""
    import linecache

    if not frame or ":" not in frame:
        return ""
    path, _, line = frame.rpartition(":")
    return linecache.getline(path, int(line)).strip() if line.isdigit() else ""


def _reasons(report: Any, tree_parent: str, suppressed: list[dict]) -> list[dict]:
    """Break reasons deduplicated by (gb_type or reason, frame), most frequent first."""
    merged: dict[tuple[str, str | None], dict] = {}
    for s in suppressed:
        key = ("Dynamo internal error (frame run eagerly)", s["frame"])
        if key in merged:
            merged[key]["count"] += 1
            continue
        merged[key] = {"gb_id": None, "gb_type": key[0], "reason": s["message"],
                       "detail": s["message"], "frame": _relative_frame(s["frame"], tree_parent),
                       "source": _source_line(s["frame"]), "count": 1}
    for r in report.reasons:
        key = (r.gb_type or r.reason, r.frame)
        if key in merged:
            merged[key]["count"] += r.count
            continue
        merged[key] = {"gb_id": r.gb_id, "gb_type": r.gb_type, "reason": r.reason,
                       "detail": r.detail, "frame": _relative_frame(r.frame, tree_parent),
                       "source": _source_line(r.frame), "count": r.count}
    return sorted(merged.values(), key=lambda d: -d["count"])


class _Records(logging.Handler):
    """Keeps the WARNING records Dynamo logs when it suppresses an error in a frame."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _user_frame(text: str) -> str | None:
    """The innermost ``File "...", line N`` frame after "from user code:" in an error text."""
    _, _, user = text.partition("from user code:")
    frames = re.findall(r'File "([^"]+)", line (\d+)', user)
    return f"{frames[-1][0]}:{frames[-1][1]}" if frames else None


def _count(count_graph_breaks: Callable, model: Any, kwargs: dict
           ) -> tuple[Any, str | None, list[dict]]:
    """count_graph_breaks under no_grad; if Dynamo crashes, again with suppress_errors.

    Returns (report, the crash "Type: message" or None, one dict per suppressed error).
    """
    import torch
    import torch._dynamo

    with torch.no_grad():
        try:
            return count_graph_breaks(model, (), kwargs, backend="eager"), None, []
        except Exception as error:
            crash = f"{type(error).__name__}: {str(error).strip().splitlines()[0][:300]}"
        torch._dynamo.config.suppress_errors = True
        handler = _Records()
        logger = logging.getLogger("torch._dynamo.convert_frame")
        logger.addHandler(handler)
        try:
            report = count_graph_breaks(model, (), kwargs, backend="eager")
        finally:
            logger.removeHandler(handler)
    suppressed = []
    for record in handler.records:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += "\n" + str(record.exc_info[1])
        if "from user code:" in text:
            first = next((ln.strip() for ln in text.splitlines() if "Error" in ln), "")
            suppressed.append({"frame": _user_frame(text), "message": first[:300]})
    return report, crash, suppressed


def _import_tree(tree_parent: str, package: str = "transformers") -> Any:
    """Import ``package`` from ``tree_parent`` (forgetting any copy imported before)."""
    import importlib

    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]
    sys.path.insert(0, tree_parent)
    try:
        module = importlib.import_module(package)
    finally:
        sys.path.remove(tree_parent)
    module_file = os.path.abspath(module.__file__ or "")
    if not module_file.startswith(os.path.join(tree_parent, package) + os.sep):
        raise RuntimeError(f"imported {module_file}, expected a copy under {tree_parent}")
    return module



def _apply_dynamo_settings(spec: dict) -> None:
    """Set the worker's ``torch._dynamo.config`` switches (an unknown one fails loudly)."""
    import torch._dynamo

    for key, value in spec.get("dynamo_config", {}).items():
        if not hasattr(torch._dynamo.config, key):
            raise SystemExit(f"unknown torch._dynamo.config switch: {key}")
        setattr(torch._dynamo.config, key, value)



def measure(model: Any, kwargs: dict, spec: dict, package: Any) -> dict:
    """Eager outputs (saved to ``spec["outputs_file"]``) and graph breaks of ``model(**kwargs)``
    built from the tree ``spec["tree_parent"]`` of ``package``; the JSON-able result."""
    import torch
    from eqrewrite.oracle.judging.graphbreaks import count_graph_breaks

    tree_parent, name = spec["tree_parent"], package.__name__
    with torch.no_grad():
        eager = _tensors(model(**kwargs))
    traced = None
    if spec.get("record"):
        from eqrewrite.oracle.traced import record_traced

        with record_traced() as traced:
            report, crash, suppressed = _count(count_graph_breaks, model, kwargs)
    else:
        report, crash, suppressed = _count(count_graph_breaks, model, kwargs)
    result: dict[str, Any] = {
        "case": spec["case"], "tree": spec["tree"],
        f"{name}_file": os.path.abspath(package.__file__),
        f"{name}_version": package.__version__, "torch_version": torch.__version__,
        # A frame on which Dynamo crashes runs eagerly (suppress_errors): one more break.
        "breaks": report.breaks + len(suppressed), "graph_count": report.graph_count,
        "explain_breaks": report.explain_breaks, "break_events": report.break_events,
        "fullgraph_ok": report.fullgraph_ok, "fullgraph_error": report.fullgraph_error,
        "skipped_frames": report.skipped_frames, "dynamo_crash": crash,
        "reasons": _reasons(report, tree_parent, suppressed),
        "outputs_file": spec["outputs_file"], "n_outputs": len(eager),
        "dynamo_config": spec.get("dynamo_config", {}),
    }
    if traced is not None:
        result["traced"] = traced.entries()
    torch.save(eager, spec["outputs_file"])
    return result


def _timer(device: str) -> Callable[[Callable[[], Any]], tuple[float, Any]]:
    """``time(call) -> (seconds, result)``, waiting for the device's queued work."""
    import torch

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    def time_call(call: Callable[[], Any]) -> tuple[float, Any]:
        sync()
        start = time.perf_counter()
        result = call()
        sync()
        return time.perf_counter() - start, result

    return time_call


def run_latency_worker(spec: dict, build: Builder) -> dict:
    """Steady-state compiled latency of one case from both trees in this one process.

    Both trees are imported (one after the other, as distinct module objects), both models
    are compiled with the same backend, warmed up, then timed in alternation (before, after,
    before, ...) so that load on the machine hits both alike; medians are reported. ``build``
    makes the case: ``build(package, case, device) -> (callable, kwargs)``, ``package`` being
    ``spec["package"]`` (transformers by default) imported from the tree.
    """
    import torch
    import torch._dynamo

    torch.set_num_threads(spec["threads"])
    _apply_dynamo_settings(spec)
    device = spec.get("device", "cpu")
    time_call = _timer(device)
    callables = {}
    for tree, parent in (("orig", spec["orig_parent"]), ("rew", spec["rew_parent"])):
        package = _import_tree(parent, spec.get("package", "transformers"))
        torch.manual_seed(0)
        callables[tree] = build(package, spec["case"], device)
    torch._dynamo.reset()
    times: dict[str, list[float]] = {"orig": [], "rew": []}
    agree = {}
    with torch.no_grad():
        compiled = {tree: torch.compile(fn, backend=spec["backend"])
                    for tree, (fn, _) in callables.items()}
        for tree, fn in compiled.items():
            kwargs = callables[tree][1]
            eager = _tensors(callables[tree][0](**kwargs))
            agree[tree] = _compare([t.cpu() for t in eager],
                                   [t.cpu() for t in _tensors(fn(**kwargs))],
                                   COMPILED_RTOL, COMPILED_ATOL)
            for _ in range(WARMUP - 1):
                fn(**kwargs)
        for _ in range(spec["repeats"]):
            for tree, fn in compiled.items():
                kwargs = callables[tree][1]
                times[tree].append(time_call(lambda fn=fn, kwargs=kwargs: fn(**kwargs))[0])
    return {tree: {"backend": spec["backend"], "device": device,
                   "median_s": statistics.median(times[tree]), "min_s": min(times[tree]),
                   "times_s": times[tree], "compiled_vs_eager": agree[tree]}
            for tree in times}


def run_cold_worker(spec: dict, build: Builder) -> dict:
    """Cold start of one case from one tree: the first compiled call, compilation included,
    in a fresh process whose Inductor cache folder is empty (``spec["cache_dir"]``);
    ``build`` as for run_latency_worker."""
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = spec["cache_dir"]
    os.environ["TRITON_CACHE_DIR"] = os.path.join(spec["cache_dir"], "triton")
    import torch

    torch.set_num_threads(spec["threads"])
    _apply_dynamo_settings(spec)
    package = _import_tree(spec["tree_parent"], spec.get("package", "transformers"))
    torch.manual_seed(0)
    fn, kwargs = build(package, spec["case"], spec.get("device", "cpu"))
    compiled = torch.compile(fn, backend=spec["backend"])
    with torch.no_grad():
        seconds, _ = _timer(spec.get("device", "cpu"))(lambda: compiled(**kwargs))
    return {"first_call_s": seconds, "backend": spec["backend"]}



def _compare(a: list[Any], b: list[Any], rtol: float = RTOL, atol: float = ATOL) -> dict:
    """"equal" (bitwise, NaN == NaN), "allclose" (rtol/atol) or "DIFFERENT", with max |a-b|."""
    import torch

    if len(a) != len(b) or any(x.shape != y.shape or x.dtype != y.dtype for x, y in zip(a, b)):
        return {"verdict": "DIFFERENT", "max_abs": None, "why": "tensor count/shape/dtype"}
    diffs = [(x.double() - y.double()).abs().nan_to_num(0.0).max().item() if x.numel() else 0.0
             for x, y in zip(a, b)]
    max_abs = max(diffs, default=0.0)
    if all(torch.equal(x, y) or (torch.equal(x.isnan(), y.isnan())
                                 and torch.equal(x.nan_to_num(), y.nan_to_num()))
           for x, y in zip(a, b)):
        return {"verdict": "equal", "max_abs": max_abs}
    if all(torch.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True) for x, y in zip(a, b)):
        return {"verdict": "allclose", "max_abs": max_abs}
    return {"verdict": "DIFFERENT", "max_abs": max_abs}



# --------------------------------------------------------------------------------------------
# Parent side: starting workers, keeping their records
# --------------------------------------------------------------------------------------------

def _run_worker_process(spec: dict, result_file: Path, tree_parents: list[str],
                        args: argparse.Namespace, script: str) -> dict:
    """Run ``script`` (a driver, which dispatches ``spec["job"]`` to its workers) with
    ``--worker`` on ``spec`` in a fresh interpreter; its result or an error."""
    result_file.unlink(missing_ok=True)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               OMP_NUM_THREADS=str(args.threads))
    cmd = [sys.executable, os.path.abspath(script), "--worker", json.dumps(spec),
           "--worker-out", str(result_file)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                              timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout} s"}
    seconds = time.perf_counter() - start
    if proc.returncode != 0 or not result_file.exists():
        return {"error": f"worker exited {proc.returncode}", "stderr_tail": proc.stderr[-3000:]}
    result = json.loads(result_file.read_text())
    result["worker_seconds"] = round(seconds, 1)
    return result


def run_case(tree: str, tree_parent: Path, case: str, workdir: Path, args: argparse.Namespace,
             script: str, package: str = "transformers") -> dict:
    """Count one (tree, case) pair's breaks in a fresh interpreter running ``script`` (or take
    the record an earlier run left in the workdir: ``--reuse-original``, ``--reuse-records``)."""
    reuse = (args.reuse_records and args.reuse_trees) or (tree == "orig" and args.reuse_original)
    if reuse and not (tree == "orig" and args.record_profile):
        kept = _kept_record(workdir, tree, case, package, dynamo_settings(args))
        if kept is not None:
            return {"case": case, "tree": tree, **kept}
    spec = {"job": "count", "tree": tree, "tree_parent": str(tree_parent.resolve()),
            "case": case, "package": package, "threads": args.threads,
            "device": getattr(args, "device", "cpu"),
            "record": bool(args.record_profile) and tree == "orig",
            "dynamo_config": dynamo_settings(args),
            "outputs_file": str(outputs_dir(workdir, args) / f"{tree}_{case}.pt")}
    result = _run_worker_process(spec, outputs_dir(workdir, args) / f"{tree}_{case}.json",
                                 [spec["tree_parent"]], args, script)
    return {"case": case, "tree": tree, **result}



def add_dynamo_config_argument(parser: argparse.ArgumentParser) -> None:
    """``--dynamo-config KEY=VALUE``, shared with hf_generality.py (read by
    ``dynamo_settings``)."""
    parser.add_argument("--dynamo-config", action="append", default=[], metavar="KEY=VALUE",
                        help="a torch._dynamo.config switch set in every worker, both trees "
                             "(repeatable; e.g. capture_scalar_outputs=true, the switches the "
                             "audit names for the breaks no rewrite removes)")


def outputs_folder(workdir: Path, settings: Mapping[str, object]) -> Path:
    """Where the records and outputs of one mode go: ``outputs`` for default settings,
    ``outputs-KEY=VALUE,...`` with Dynamo switches (so the modes never overwrite each
    other), created if missing."""
    name = "outputs" + ("-" + ",".join(f"{k}={v}" for k, v in sorted(settings.items()))
                        if settings else "")
    folder = workdir / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def outputs_dir(workdir: Path, args: argparse.Namespace) -> Path:
    """``outputs_folder`` of the switches ``args`` set (``--dynamo-config``)."""
    return outputs_folder(workdir, dynamo_settings(args))


def dynamo_settings(args: argparse.Namespace) -> dict[str, object]:
    """``--dynamo-config KEY=VALUE`` switches as a dict (none unless the driver takes them)."""
    from eqrewrite.oracle.judging.settings import parse_settings

    return parse_settings(getattr(args, "dynamo_config", None) or [])



def _kept_record(workdir: Path, tree: str, case: str, package: str = "transformers",
                 settings: dict[str, object] | None = None) -> dict | None:
    """The record of ``case`` in ``tree`` from an earlier run in ``workdir``, if it succeeded
    with the ``package`` and torch versions installed now and the same Dynamo switches
    (``settings``). The original tree is the
    installed package, so its breaks and outputs do not depend on the rule pack; the
    rewritten tree is the same only while it is reused (``--reuse-trees``)."""
    from importlib.metadata import version

    folder = outputs_folder(workdir, settings or {})
    record_file = folder / f"{tree}_{case}.json"
    outputs_file = folder / f"{tree}_{case}.pt"
    try:
        record = json.loads(record_file.read_text())
    except (OSError, ValueError):
        return None
    # A case skipped (not buildable generically) stays skipped with the same versions
    # (records of skips written before they carried versions are taken as current).
    skipped = "skipped" in record
    installed = {f"{package}_version": version(package), "torch_version": version("torch")}
    if ("error" in record or not (skipped or outputs_file.is_file())
            or any(record.get(key, value if skipped else None) != value
                   for key, value in installed.items())
            or record.get("dynamo_config", {}) != (settings or {})):
        return None
    print(f"  ({tree}: record kept from an earlier run, {record_file.name})",
          file=sys.stderr)
    return {**record, "outputs_file": str(outputs_file), "kept": True}


def run_latency(case: str, workdir: Path, args: argparse.Namespace, script: str,
                package: str = "transformers") -> dict:
    """Steady-state latency of one case from both trees in one fresh interpreter (see
    run_latency_worker), then ``--cold-repeats`` cold starts of each tree, alternating, each
    in a fresh interpreter with an empty compile cache (see run_cold_worker). The workers run
    ``script`` (a driver, which dispatches the "latency" and "cold" jobs to those functions
    with its own builder) on ``package`` imported from each tree."""
    parents = {tree: str((workdir / tree).resolve()) for tree in ("orig", "rew")}
    common = {"case": case, "backend": args.backend, "threads": args.threads,
              "device": args.device, "package": package,
              "dynamo_config": dynamo_settings(args)}
    spec = {"job": "latency", **common, "repeats": args.repeats,
            "orig_parent": parents["orig"], "rew_parent": parents["rew"]}
    result = _run_worker_process(spec, outputs_dir(workdir, args) / f"latency_{case}.json",
                                 list(parents.values()), args, script)
    if "error" in result:
        return result
    for attempt in range(args.cold_repeats):
        for tree, parent in parents.items():
            cache = tempfile.mkdtemp(prefix=f"cold-{tree}-", dir=workdir)
            cold = _run_worker_process(
                {"job": "cold", **common, "tree_parent": parent, "cache_dir": cache},
                outputs_dir(workdir, args) / f"cold_{tree}_{attempt}_{case}.json", [parent], args,
                script)
            shutil.rmtree(cache, ignore_errors=True)
            if "error" in cold:
                return {"error": f"cold start ({tree}): {cold['error']}"}
            result[tree].setdefault("cold_runs_s", []).append(cold["first_call_s"])
    for tree in parents:
        if result[tree].get("cold_runs_s"):  # none with --cold-repeats 0
            result[tree]["cold_s"] = statistics.median(result[tree]["cold_runs_s"])
    return result


# --------------------------------------------------------------------------------------------
# Modes: default settings, and with the switches the audit names (set in both trees)
# --------------------------------------------------------------------------------------------

MODES = ("default", "switches")


def _modes(text: str) -> tuple[str, ...]:
    """``--modes``: known modes, in the order given."""
    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise argparse.ArgumentTypeError(f"modes are {', '.join(MODES)}; got {text!r}")
    return modes


def add_modes_argument(parser: argparse.ArgumentParser) -> None:
    """``--modes default,switches`` (read with ``mode_args``), shared by both drivers."""
    parser.add_argument("--modes", type=_modes, default=MODES,
                        help="comma-separated modes to measure: default (no Dynamo switch) and "
                             "switches (--dynamo-config's, else the two capture switches of "
                             "eqrewrite run --dynamic-sizes); default: both")


def mode_args(args: argparse.Namespace, mode: str) -> argparse.Namespace:
    """``args`` for one mode: no Dynamo switch in ``default``; in ``switches`` the
    ``--dynamo-config`` ones, else those of ``eqrewrite run --dynamic-sizes`` (the two capture
    switches the audit names for breaks on data-dependent values)."""
    from eqrewrite.rewriter.api import DYNAMIC_SIZES

    switches = args.dynamo_config or [f"{key}={str(value).lower()}"
                                      for key, value in DYNAMIC_SIZES.items()]
    return argparse.Namespace(**{**vars(args),
                                 "dynamo_config": switches if mode == "switches" else []})
