"""The graph-break audit on Hugging Face transformers (4.46.3): static and dynamic, timed in
one run.

1. Static: ``eqrewrite audit <the installed transformers package> --format json`` over the
   whole package (no torch import): wall time, files, findings by cause and by fix.
2. A work tree ``WORKDIR/tree``: a copy of the installed package, plus one oracle target per
   model case of ``hf_graph_breaks.py`` (tiny configs, random weights, no download):
   ``cases/<case>.py`` wraps the model in an ``nn.Module`` whose ``forward`` takes the
   case's tensors in order.
3. One model's dynamic audit, timed: ``eqrewrite audit cases/<case>.py --run --what-if``
   (``--timed-case``, default t5). The static audit of the whole package must take less.
4. Every selected model at once: ``eqrewrite audit transformers cases --run --rules
   graphbreaks --what-if`` (the package rewritten into a temporary tree for the "after"
   column): breaks, graphs and fullgraph before/after per model, outputs equal, and which
   Dynamo switch removes which of the breaks that are left.

Needs ``pip install torch==2.13.0 transformers==4.46.3`` (in that order) and eqrewrite.
Examples::

    python benchmarks/audit_hf.py                        # t5 timed; every case audited
    python benchmarks/audit_hf.py --cases t5,mixtral,longformer --json /tmp/audit_hf.json
    python benchmarks/audit_hf.py --timing-only          # steps 1-3: static vs one model
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from hf_models import CASES  # noqa: E402 - the model builders, shared

CASE_FILE = '''\
"""Audit target: the {name} case of benchmarks/hf_graph_breaks.py (tiny config, random
weights)."""

import torch

from _hf_cases import build, inputs


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model, self.keys, self.flags = build({name!r})

    def forward(self, *tensors):
        return self.model(**dict(zip(self.keys, tensors)), **self.flags)


def get_inputs():
    return inputs({name!r})
'''

HELPERS = '''\
"""Builds the benchmark's models for the audit targets in cases/."""

import sys

import torch

sys.path.insert(0, {bench!r})
from hf_models import CASES  # noqa: E402


def _split(name):
    torch.manual_seed(0)
    model, _, kwargs = CASES[name].build()
    model.eval()
    tensors = {{k: v for k, v in kwargs.items() if isinstance(v, torch.Tensor)}}
    flags = {{k: v for k, v in kwargs.items() if k not in tensors}}
    return model, tensors, flags


def build(name):
    model, tensors, flags = _split(name)
    return model, list(tensors), flags


def inputs(name):
    return list(_split(name)[1].values())
'''


def _cpu() -> float:
    """CPU seconds of finished child processes (their own children included)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _eqrewrite(*args: str, cwd: Path, timeout: float) -> tuple[dict, int, str]:
    """Run eqrewrite; ({wall, cpu} seconds, exit status, stderr tail). CPU seconds do not
    depend on what else the machine runs as much as wall time does."""
    command = [sys.executable, "-m", "eqrewrite.rewriter", *args]
    started, cpu = time.perf_counter(), _cpu()
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1"))
    seconds = {"wall": round(time.perf_counter() - started, 1), "cpu": round(_cpu() - cpu, 1)}
    return seconds, proc.returncode, proc.stderr[-3000:]


def _package() -> Path:
    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.origin:
        sys.exit("error: transformers is not installed (pip install transformers==4.46.3)")
    return Path(spec.origin).parent


def make_tree(workdir: Path, cases: list[str]) -> Path:
    """WORKDIR/tree: the package copied, the helpers and one target per case."""
    tree = workdir / "tree"
    if tree.exists():
        shutil.rmtree(tree)
    shutil.copytree(_package(), tree / "transformers",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (tree / "pyproject.toml").write_text("[project]\nname = 'audit-hf'\n")
    (tree / "_hf_cases.py").write_text(HELPERS.format(bench=str(HERE)))
    (tree / "cases").mkdir()
    for name in cases:
        (tree / "cases" / f"{name}.py").write_text(CASE_FILE.format(name=name))
    return tree


def static_audit(workdir: Path, timeout: float) -> dict:
    report, load = workdir / "static.json", _load()
    # Default workers (one per core), as the rewrite command.
    seconds, status, stderr = _eqrewrite("audit", str(_package()), "--format", "json", "-o",
                                         str(report), cwd=workdir, timeout=timeout)
    if status not in (0, 1):
        sys.exit(f"error: static audit exited {status}:\n{stderr}")
    document = json.loads(report.read_text())
    return {"seconds": seconds, "summary": document["summary"], "load": load}


def _load() -> str:
    """The load average: the machine may be shared, and wall times depend on it."""
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def timed_dynamic(tree: Path, case: str, timeout: float) -> dict:
    report = tree.parent / f"dynamic-{case}.json"
    seconds, status, stderr = _eqrewrite(
        "audit", f"cases/{case}.py", "_hf_cases.py", "--run", "--what-if", "--format", "json",
        "-o", str(report), "--parallel", "1", cwd=tree, timeout=timeout)
    if not report.exists():
        sys.exit(f"error: dynamic audit of {case} exited {status}:\n{stderr}")
    return {"case": case, "seconds": seconds,
            "dynamic": json.loads(report.read_text())["dynamic"]}


def full_audit(tree: Path, timeout: float) -> tuple[dict, dict]:
    report = tree.parent / "audit.json"
    seconds, status, stderr = _eqrewrite(
        "audit", "transformers", "cases", "--run", "--rules", "graphbreaks", "--what-if",
        "-o", str(report), "-o", str(tree.parent / "audit.html"), "-o",
        str(tree.parent / "audit.md"), cwd=tree, timeout=timeout)
    if not report.exists():
        sys.exit(f"error: the audit exited {status}:\n{stderr}")
    return seconds, json.loads(report.read_text())


def _print_static(static: dict) -> None:
    s = static["summary"]
    print(f"\nStatic audit of transformers ({s['files']} files): {static['seconds']['wall']} s "
          f"wall, {static['seconds']['cpu']} s CPU, "
          f"{s['findings']} findings in {s['files_with_findings']} files; by rule "
          f"{s['by_fix']['rule']}, by setting {s['by_fix']['setting']}, manual "
          f"{s['by_fix']['manual']}")
    print("| cause | findings | rule | setting | manual |\n|---|---|---|---|---|")
    for c in s["causes"]:
        print(f"| {c['pattern']} | {c['count']} | {c['rule']} | {c['setting']} | "
              f"{c['manual']} |")


def _print_full(document: dict) -> None:
    dynamic = document["dynamic"]
    ba = dynamic["before_after"]
    print("\n| model | breaks before | after | graphs before/after | fullgraph before/after "
          "| outputs |\n|---|---|---|---|---|---|")
    for row in ba["targets"]:
        if row["error"]:
            print(f"| {row['name']} | error: {row['error'][:80]} | | | | |")
            continue
        b, a = row["before"], row["after"]
        print(f"| {row['name'].split('::')[0]} | {b['breaks']} | {a['breaks']} | "
              f"{b['graphs']} / {a['graphs']} | {_yes(b['fullgraph'])} / "
              f"{_yes(a['fullgraph'])} | {'equal' if row['outputs_equal'] else 'DIFFER'} |")
    t = ba["totals"]
    print(f"\nTotal: {t['before']['breaks']} -> {t['after']['breaks']} breaks "
          f"({round(100 * t['removed_share'])} % removed), outputs equal for "
          f"{t['outputs_equal']} of {t['targets']} models.")
    what_if = dynamic["what_if"]
    print(f"\nWhat if (on the {what_if['tree']} code):\n| switch | models tried | breaks "
          "removed | models left without a break | values equal |\n|---|---|---|---|---|")
    for s in what_if["switches"]:
        print(f"| {s['switch']} | {s['targets']} | {s['breaks_removed']} | "
              f"{s['targets_fixed']} | {'yes' if s['outputs_equal'] else 'no'} |")


def _both(seconds: dict) -> str:
    return f"{seconds['wall']} s wall, {seconds['cpu']} s CPU"


def _yes(value) -> str:
    return "-" if value is None else "yes" if value else "no"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES),
                        help=f"comma-separated cases (default: all: {','.join(CASES)})")
    parser.add_argument("--timed-case", default="t5", help="the model whose dynamic audit is "
                        "timed against the static audit (default: t5)")
    parser.add_argument("--workdir", type=Path, help="work folder (default: a temporary one)")
    parser.add_argument("--timeout", type=float, default=7200.0)
    parser.add_argument("--json", type=Path, help="save every figure here")
    parser.add_argument("--timing-only", action="store_true", help="stop after the static "
                        "audit and the timed dynamic one (steps 1-3)")
    args = parser.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in cases + [args.timed_case] if c not in CASES]
    if unknown:
        sys.exit(f"error: unknown case(s) {', '.join(unknown)} (known: {', '.join(CASES)})")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="audit-hf-"))
    workdir.mkdir(parents=True, exist_ok=True)
    tree = make_tree(workdir, sorted(set(cases) | {args.timed_case}))
    static = static_audit(workdir, args.timeout)
    _print_static(static)
    timed = timed_dynamic(tree, args.timed_case, args.timeout)
    print(f"\nOne model's dynamic audit ({args.timed_case}, --run --what-if): "
          f"{_both(timed['seconds'])}; the static audit of the whole package: "
          f"{_both(static['seconds'])}")
    for clock in ("wall", "cpu"):
        ratio = static["seconds"][clock] / max(timed["seconds"][clock], 1e-9)
        verdict = "less" if ratio < 1 else "MORE"
        print(f"  {clock}: static {static['seconds'][clock]} s / dynamic "
              f"{timed['seconds'][clock]} s = {ratio:.2f}: the static audit took {verdict}")
    print(f"  load average (1, 5, 15 min) before the static audit: {static['load']}, after the "
          f"dynamic one: {_load()}; {os.cpu_count()} cores")
    if args.timing_only:
        return 0
    if args.timed_case not in cases:
        (tree / "cases" / f"{args.timed_case}.py").unlink()
    seconds, document = full_audit(tree, args.timeout)
    print(f"\nDynamic audit of {len(cases)} models with --rules graphbreaks --what-if: "
          f"{_both(seconds)}; reports in {workdir}")
    _print_full(document)
    if args.json:
        args.json.write_text(json.dumps({"static": static, "timed": timed,
                                         "full_seconds": seconds, "full": document}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
