"""Throughput of the oracle: tiny targets validated four ways per minute, before and after.

The script writes N (default 12) small, varied ``nn.Module`` target files (MLP, conv block,
attention, manual LayerNorm, SwiGLU, TCN, RNN loop, embedding pooling, focal loss, pooling
pyramid, rotary embedding, mixture of experts, and one with a data-dependent graph break)
into a temporary folder, rewrites a copy of that tree with the real command line
(``eqrewrite TREE --out TREE_rewritten --no-cache``, default rule pack), and validates every
target with an ``eqrewrite.oracle.harness.harness.Harness`` along two paths, one after the other in
the same run, each with its own empty Inductor cache (cold compiles for both):

* ``before``: the previous design: one target at a time, graph breaks counted apart from
  the runs (``explain`` plus a ``fullgraph=True`` compile, both trees), every target run
  again in the rewritten tree, no Inductor warm-up. (The previous code also used a second
  worker process for the rewritten tree, which paid its own start-up: this path is, if
  anything, faster than the old code was.)
* ``after``: the current default: two targets validated at once, each with one worker
  serving both trees and warmed up for Inductor while starting, breaks counted during the
  compiled runs themselves, targets that execute none of the rewritten files not run again.

For each path it prints targets per minute with warm workers (worker start excluded) and
including start, the median seconds per target (each target's own wall time), the workers'
CPU seconds (reaped children, so Inductor's g++ included), then the ratio after/before, and
checks that both paths reach the same verdict and the same graph-break count for every
target. The load average is
printed at start and end: above the CPU count, other processes share the cores.

Usage: ``python benchmarks/oracle_throughput.py [--targets N] [--backend eager|aot_eager|
inductor] [--no-breaks] [--keep]``. Exit status 0 when every verdict is ``passed``, both paths
agree, and ``after`` is at least twice as fast as ``before`` (warm).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from string import Template

SPEEDUP_TARGET = 2.0  # after / before, warm targets per minute
BACKENDS = ("eager", "aot_eager", "inductor")
PATHS = {  # harness options, and how many targets are validated at once
    "before": ({"separate_break_count": True}, 1),
    "after": ({}, 2),
}

# -- generated targets ------------------------------------------------------------------------
# Each family is a complete target file; ``$cls`` and the size placeholders are filled per
# target. Forward parameters are annotated so the default rule pack has operators to rewrite.

_HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"

FAMILIES: dict[str, str] = {
    "mlp": """import math

import torch
import torch.nn as nn


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


class $cls(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.gamma = nn.Parameter(0.1 * torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = gelu_tanh(self.fc1(self.norm(x)))
        return x + self.gamma * self.fc2(h)


def get_init_inputs():
    return [$dim, $hidden]


def get_inputs():
    return [torch.randn($batch, $seq, $dim)]
""",
    "conv": _HEADER + """class $cls(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.register_buffer("mean", torch.linspace(-0.1, 0.1, channels).view(1, -1, 1, 1))
        self.register_buffer("std", torch.linspace(0.9, 1.1, channels).view(1, -1, 1, 1))
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = (x - self.mean) / self.std
        identity = x
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.conv2(out)
        out = out + identity
        return F.relu(out)


def get_init_inputs():
    return [$channels]


def get_inputs():
    return [torch.randn($batch, $channels, $side, $side)]
""",
    "attention": _HEADER + """class $cls(nn.Module):
    def __init__(self, dim: int, heads: int, max_len: int = 32):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("causal", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        qkv = self.qkv(x).reshape(B, T, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = q @ k.transpose(-2, -1) * self.scale
        attn = attn.masked_fill(~self.causal[:T, :T], float("-inf"))
        attn = attn.softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(B, T, C)
        return self.proj(out)


def get_init_inputs():
    return [$dim, $heads]


def get_inputs():
    return [torch.randn($batch, $seq, $dim)]
""",
    "layernorm": _HEADER + """class $cls(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.linspace(0.5, 1.5, dim))
        self.bias = nn.Parameter(torch.linspace(-0.2, 0.2, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        y = (x - mean) / torch.sqrt(var + self.eps)
        return y * self.weight + self.bias


def get_init_inputs():
    return [$dim]


def get_inputs():
    return [torch.randn($batch, $seq, $dim)]
""",
    "swiglu": _HEADER + """def rms_norm(x: torch.Tensor, weight: torch.Tensor,
             eps: float = 1e-6) -> torch.Tensor:
    variance = x.pow(2).mean(-1, keepdim=True)
    return x * torch.rsqrt(variance + eps) * weight


class $cls(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = rms_norm(x, self.weight)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def get_init_inputs():
    return [$dim, $hidden]


def get_inputs():
    return [torch.randn($batch, $seq, $dim)]
""",
    "tcn": _HEADER + """class $cls(nn.Module):
    def __init__(self, channels: int, kernel: int):
        super().__init__()
        self.depthwise = nn.Conv1d(channels, channels, kernel, padding=kernel // 2,
                                   groups=channels)
        self.pointwise = nn.Conv1d(channels, 2 * channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.pointwise(self.depthwise(x)).chunk(2, dim=1)
        return x + a * torch.sigmoid(b)


def get_init_inputs():
    return [$channels, $kernel]


def get_inputs():
    return [torch.randn($batch, $channels, $seq)]
""",
    "rnn": _HEADER + """class $cls(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.hidden = hidden
        self.w_ih = nn.Parameter(torch.randn(dim, hidden) * dim ** -0.5)
        self.w_hh = nn.Parameter(torch.randn(hidden, hidden) * hidden ** -0.5)
        self.bias = nn.Parameter(torch.zeros(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(x.shape[0], self.hidden)
        outputs = []
        for t in range(x.shape[1]):
            h = torch.tanh(x[:, t] @ self.w_ih + h @ self.w_hh + self.bias)
            outputs.append(h)
        return torch.stack(outputs, dim=1)


def get_init_inputs():
    return [$dim, $hidden]


def get_inputs():
    return [torch.randn($batch, $steps, $dim)]
""",
    "embedding": _HEADER + """class $cls(nn.Module):
    def __init__(self, vocab: int, dim: int, classes: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        e = self.embed(tokens)
        mask = (tokens != 0).unsqueeze(-1).to(e.dtype)
        pooled = (e * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.head(pooled)


def get_init_inputs():
    return [$vocab, $dim, $classes]


def get_inputs():
    return [torch.randint(0, $vocab, ($batch, $seq))]
""",
    "focal": _HEADER + """class $cls(nn.Module):
    def __init__(self, gamma: float):
        super().__init__()
        self.gamma = gamma

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        logp = F.log_softmax(logits, dim=-1)
        logpt = logp.gather(1, target.unsqueeze(1)).squeeze(1)
        pt = logpt.exp()
        loss = -((1 - pt) ** self.gamma) * logpt
        return loss.mean()


def get_init_inputs():
    return [$gamma]


def get_inputs():
    return [torch.randn($batch, $classes), torch.randint(0, $classes, ($batch,))]
""",
    "pyramid": _HEADER + """class $cls(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        low = F.avg_pool2d(x, 2)
        up = F.interpolate(low, scale_factor=2.0, mode="nearest")
        detail = x - up
        return self.conv(detail) + 0.5 * x


def get_init_inputs():
    return [$channels]


def get_inputs():
    return [torch.randn($batch, $channels, $side, $side)]
""",
    "rotary": _HEADER + """def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class $cls(nn.Module):
    def __init__(self, dim: int, base: float = 10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = torch.arange(x.shape[-2], dtype=x.dtype)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return x * emb.cos() + rotate_half(x) * emb.sin()


def get_init_inputs():
    return [$dim]


def get_inputs():
    return [torch.randn($batch, $heads, $seq, $dim)]
""",
    "experts": _HEADER + """class $cls(nn.Module):
    def __init__(self, dim: int, experts: int):
        super().__init__()
        self.router = nn.Linear(dim, experts)
        self.weight = nn.Parameter(torch.randn(experts, dim, dim) * dim ** -0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = self.router(x).softmax(dim=-1)
        y = torch.einsum("btd,edf->btef", x, self.weight)
        return x + (y * gate.unsqueeze(-1)).sum(dim=-2)


def get_init_inputs():
    return [$dim, $experts]


def get_inputs():
    return [torch.randn($batch, $seq, $dim)]
""",
    "branchy": _HEADER + """class $cls(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        if h.mean().item() > 0:  # data-dependent branch: one graph break
            h = h * 2.0
        else:
            h = h - 1.0
        return F.relu(h)


def get_init_inputs():
    return [$dim]


def get_inputs():
    return [torch.randn($batch, $dim)]
""",
}


def sizes(variant: int) -> dict[str, object]:
    """Small shapes for the ``variant``-th copy of a family (all families share them)."""
    dim = (16, 24, 32, 12)[variant % 4]
    return {
        "dim": dim, "hidden": 2 * dim, "heads": (2, 4, 4, 2)[variant % 4],
        "batch": 2 + variant % 2, "seq": (5, 8, 6, 7)[variant % 4], "steps": 3 + variant % 3,
        "channels": (4, 6, 8, 3)[variant % 4], "side": (6, 8, 10, 4)[variant % 4],
        "kernel": (3, 5, 3, 7)[variant % 4], "vocab": (20, 30, 50, 17)[variant % 4],
        "classes": (5, 7, 3, 4)[variant % 4], "gamma": (2.0, 1.5, 3.0, 0.5)[variant % 4],
        "experts": (2, 3, 4, 2)[variant % 4],
    }


def write_targets(root: Path, count: int) -> list[Path]:
    """Write ``count`` target files under ``root``, cycling through the families."""
    names = list(FAMILIES)
    files = []
    for index in range(count):
        family = names[index % len(names)]
        variant = index // len(names)
        cls = "".join(part.title() for part in family.split("_")) + f"{index:02d}"
        text = Template(FAMILIES[family]).substitute(cls=cls, **sizes(variant))
        path = root / f"t{index:02d}_{family}.py"
        path.write_text(text, encoding="utf-8")
        files.append(path)
    return files


def rewrite_tree(tree: Path, out: Path) -> tuple[float, str]:
    """Run ``eqrewrite TREE --out OUT --no-cache``; return seconds and its summary line."""
    executable = shutil.which("eqrewrite")
    command = [executable] if executable else [sys.executable, "-m", "eqrewrite.rewriter"]
    started = time.perf_counter()
    done = subprocess.run([*command, str(tree), "--out", str(out), "--no-cache"],
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"eqrewrite failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    lines = (done.stdout + done.stderr).strip().splitlines()
    summary = next((ln for ln in reversed(lines) if "rewritten" in ln), "(no summary)")
    missing = sorted(f.name for f in tree.glob("*.py") if not (out / f.name).is_file())
    if missing:
        sys.exit(f"eqrewrite exited 0 but did not write {', '.join(missing)} under {out}:\n"
                 f"{done.stdout}{done.stderr}")
    return seconds, summary


# -- measurement ------------------------------------------------------------------------------


@dataclass
class PathRun:
    """One path's validation of every target."""

    name: str
    verdicts: dict[str, str] = field(default_factory=dict)
    breaks: dict[str, dict[str, int]] = field(default_factory=dict)
    walls: list[float] = field(default_factory=list)
    start: float = 0.0       # all workers: spawn + import torch
    validation: float = 0.0  # first target started to last target done
    total: float = 0.0       # start to close
    worker_cpu: float = 0.0  # CPU seconds of the workers and their children (g++)
    phases: Counter = field(default_factory=Counter)  # worker-reported seconds per phase

    @property
    def warm_rate(self) -> float:
        return 60.0 * len(self.walls) / max(self.validation, 1e-9)

    @property
    def overall_rate(self) -> float:
        return 60.0 * len(self.walls) / max(self.total, 1e-9)


def children_cpu() -> float:
    """CPU seconds of this process's reaped children (workers after they exit, compilers)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def validate_all(path: str, original: Path, rewritten: Path, files: list[Path], backend: str,
                 count_breaks: bool, timeout: float, cache: Path) -> PathRun:
    """Validate every file four ways with a HarnessPool configured as ``path``."""
    from eqrewrite.oracle.harness.harness import HarnessOptions, HarnessPool
    from eqrewrite.oracle.harness.targets import find_target
    from eqrewrite.oracle.judging.settings import CompileSettings

    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache)  # inherited by the spawned workers
    changed = tuple(str(f.resolve()) for f in files
                    if f.read_bytes() != (rewritten / f.name).read_bytes())
    # The old path ran every target again in the rewritten tree: no coverage, no reuse.
    coverage = changed if path == "after" else ()
    settings, jobs = PATHS[path]
    targets = [find_target(original, file) for file in files]
    run = PathRun(path)
    cpu_before = children_cpu()
    began = time.perf_counter()
    pool = HarnessPool(original, rewritten, HarnessOptions(
        CompileSettings(backend=backend), count_breaks=count_breaks, timeout=timeout,
        **settings), jobs)
    if path == "before":
        for harness in pool.harnesses:  # the old workers did not warm Inductor up
            harness.worker.close()
            harness.worker.warm_up = False
            harness.worker.start()
    try:
        workers = [h.worker for h in pool.harnesses]
        for worker in workers:  # start them all, as the first targets would
            worker.submit("purge", timeout)
        for worker in workers:
            worker.receive(timeout)
        run.start = time.perf_counter() - began
        started = {}

        def timed(harness, target, report, coverage):
            run.walls.append(time.perf_counter() - started.pop(target.name))
            progress(f"  [{path}] {target.name:<34} {report.verdict.value:<10} "
                     f"{run.walls[-1]:6.2f} s")
            return report

        original_validate = [h.validate for h in pool.harnesses]
        for harness, validate in zip(pool.harnesses, original_validate):
            def stamped(target, coverage_files=(), _validate=validate):
                started[target.name] = time.perf_counter()
                return _validate(target, coverage_files)
            harness.validate = stamped
        first = time.perf_counter()
        reports = pool.validate_all(targets, coverage, after=timed)
        run.validation = time.perf_counter() - first
        for target, report in zip(targets, reports):
            run.verdicts[target.name] = report.verdict.value
            run.breaks[target.name] = {tree: found.breaks
                                       for tree, found in report.breaks.items()}
            run.phases.update(report.seconds)
    finally:
        pool.close()
    run.total = time.perf_counter() - began
    run.worker_cpu = children_cpu() - cpu_before
    return run


def print_results(runs: dict[str, PathRun]) -> bool:
    """Both paths side by side, the ratio, and the agreement checks."""
    print(f"\n{'path':<8} {'targets/min warm':>17} {'incl. start':>12} {'median s':>9} "
          f"{'start s':>8} {'total s':>8} {'worker CPU s':>13}")
    for run in runs.values():
        print(f"{run.name:<8} {run.warm_rate:>17.1f} {run.overall_rate:>12.1f} "
              f"{statistics.median(run.walls):>9.2f} {run.start:>8.2f} {run.total:>8.2f} "
              f"{run.worker_cpu:>13.1f}")
    print("(warm: targets over the time from the first target's start to the last one's end)")
    print("\nseconds per phase, summed over targets (as the workers timed them):")
    for run in runs.values():
        top = ", ".join(f"{label} {seconds:.1f}" for label, seconds in run.phases.most_common(6))
        print(f"  {run.name:<8} {top}")
    before, after = runs["before"], runs["after"]
    ratio = after.warm_rate / before.warm_rate
    print(f"\nafter / before: {ratio:.2f}x warm, "
          f"{after.overall_rate / before.overall_rate:.2f}x including worker start, "
          f"{before.worker_cpu / max(after.worker_cpu, 1e-9):.2f}x less worker CPU")
    same_verdicts = before.verdicts == after.verdicts
    same_breaks = all(before.breaks[name].get(tree) == count
                      for name, counts in after.breaks.items() for tree, count in counts.items())
    print(f"verdicts identical on both paths: {same_verdicts}; graph-break counts identical: "
          f"{same_breaks}")
    if not same_breaks:
        for name, counts in after.breaks.items():
            if counts != before.breaks[name]:
                print(f"  {name}: before {before.breaks[name]}, after {counts}")
    verdicts = Counter(after.verdicts.values())
    print("verdicts: " + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())))
    met = ratio >= SPEEDUP_TARGET
    print(f"target >= {SPEEDUP_TARGET:.0f}x targets/min (warm): {'MET' if met else 'NOT MET'}")
    return met and same_verdicts and verdicts.get("passed", 0) == len(after.walls)


def load_average() -> str:
    """The 1/5/15-minute load averages, or "n/a"; above the CPU count, timings are inflated."""
    try:
        return "/".join(f"{x:.1f}" for x in os.getloadavg())
    except (AttributeError, OSError):
        return "n/a"


def progress(message: str) -> None:
    """One progress line on stderr."""
    print(message, file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=12, help="number of targets (12)")
    parser.add_argument("--backend", choices=BACKENDS, default="inductor",
                        help="torch.compile backend (inductor)")
    parser.add_argument("--no-breaks", action="store_true", help="skip graph-break counting")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per request")
    parser.add_argument("--keep", action="store_true", help="keep the generated trees")
    options = parser.parse_args(argv)
    if options.targets < 1:
        parser.error("--targets must be at least 1")
    return options


def main(argv: list[str] | None = None) -> int:
    """Generate, rewrite, validate along both paths and report."""
    options = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="eqrewrite-oracle-bench-"))
    try:
        original, rewritten = work / "tree", work / "tree_rewritten"
        original.mkdir()
        files = write_targets(original, options.targets)
        rewrite_seconds, summary = rewrite_tree(original, rewritten)
        print(f"cpus: {os.cpu_count()}  load average: {load_average()}  backend: "
              f"{options.backend}  targets: {len(files)}  graph breaks: "
              f"{'off' if options.no_breaks else 'on'}")
        changed = sum(f.read_bytes() != (rewritten / f.name).read_bytes() for f in files)
        print(f"setup (not in throughput): eqrewrite {rewrite_seconds:.2f} s: {summary} "
              f"({changed}/{len(files)} targets differ)", flush=True)
        runs = {path: validate_all(path, original, rewritten, files, options.backend,
                                   not options.no_breaks, options.timeout,
                                   work / f"inductor-cache-{path}") for path in PATHS}
        ok = print_results(runs)
    finally:
        if options.keep:
            print(f"\nwork folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"load average at the end: {load_average()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
