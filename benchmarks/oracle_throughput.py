"""Throughput of the oracle: tiny targets validated four ways per minute, and where time goes.

The script writes N (default 30) small, varied ``nn.Module`` target files (MLP, conv block,
attention, manual LayerNorm, SwiGLU, TCN, RNN loop, embedding pooling, focal loss, pooling
pyramid, rotary embedding, mixture of experts, and one with a data-dependent graph break)
into a temporary folder, rewrites a copy of that tree with the real command line
(``eqrewrite TREE --out TREE_rewritten --no-cache``, default rule pack), and validates every
target with one ``oracle.harness.Harness``: original eager twice, original compiled,
rewritten eager, rewritten compiled, and graph-break counting in both workers.

Timing is wall-clock (``time.perf_counter``). Each worker's ``call`` is wrapped (on the
instance, the oracle is not modified) to time every request's round trip, so the cost is
split into:

* worker start: spawn plus ``import torch``, measured as the round trip of a no-op
  ``purge`` request sent to each fresh worker before the first target (the harness would
  otherwise start them lazily, one after the other, in the first target's first and fourth
  requests); ``Worker.start_seconds`` alone covers only the spawn call, not the import;
* load, eager calls, compiled runs (``torch._dynamo.reset`` + compile + first call), summed
  from each report's ``seconds`` (keys ``<run>.load`` and ``<run>.call``);
* worker post-run + IPC: round trip minus the worker's own load and call seconds (backward
  for gradients, which for aot_eager and inductor includes compiling the backward graph,
  converting results, pickling both ways);
* graph-break counting: round trips of the ``breaks`` requests;
* float64 triage: extra reference runs requested when eager and compiled differ;
* parent: the rest of ``Harness.validate`` (result comparison, bookkeeping);
* worker shutdown: ``Harness.close()``.

"Warm" throughput leaves out worker start and shutdown; "steady" also leaves out the first
target, which pays for each worker's first use of Dynamo (lazy imports, one-time setup).

On Linux the workers' CPU seconds per request are read from ``/proc/PID/stat`` (all
threads, plus children the worker waited for, such as inductor's ``g++``; not long-lived
helper processes) and the parent's from ``time.process_time``. The harness runs one
request at a time, so on an otherwise idle machine wall time is close to CPU time. The load
average is printed at start and end: when it exceeds the CPU count, other processes share
the cores and the CPU-bound estimate (targets per CPU-minute of validation) is the better
guide to an idle 2-core machine.

Generating the tree, the rewrite and the parent's own ``import torch`` are reported but are
not part of the oracle's time. Inductor's on-disk cache is pointed at a fresh folder unless
``--reuse-inductor-cache`` is given, so repeated runs measure cold compiles.

Usage: ``python benchmarks/oracle_throughput.py [--targets N] [--backend eager|aot_eager|
inductor] [--no-breaks] [--keep] [-v]``. Exit status 0 when every verdict is ``passed`` and
the warm rate meets the product target of 10 targets per minute.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from string import Template

TARGETS_PER_MINUTE = 10.0  # product target: warm workers, tiny modules, eager-like backend
BACKENDS = ("eager", "aot_eager", "inductor")
EAGER_RUNS = ("original_eager", "original_eager_again", "rewritten_eager")
COMPILED_RUNS = ("original_compiled", "rewritten_compiled")

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


# -- instrumented validation ------------------------------------------------------------------


@dataclass
class Call:
    """One request to a worker: which tree, what kind, round trip and the worker's seconds."""

    tree: str
    kind: str  # "eager" | "compiled" | "float64" | "breaks" | "purge"
    round_trip: float
    worker_seconds: float  # the worker's own load + call, 0 for non-run requests
    cpu: float  # the worker's CPU seconds (all threads, reaped children) during the request


@dataclass
class TargetResult:
    """One validated target: verdict, wall time, report seconds and the requests it made."""

    name: str
    verdict: str
    detail: str
    wall: float
    seconds: dict[str, float]
    calls: list[Call]
    breaks: dict[str, int] = field(default_factory=dict)
    parent_cpu: float = 0.0  # this process's CPU seconds inside validate()


def request_kind(request: dict | None) -> str:
    """Classify a worker request for the cost split."""
    if request is None:
        return "stop"
    if request.get("op") != "run":
        return str(request.get("op"))
    if request.get("float64"):
        return "float64"
    return str(request.get("variant"))


def _clock_ticks() -> int:
    """Kernel clock ticks per second (``/proc`` CPU times are in ticks)."""
    try:
        return os.sysconf("SC_CLK_TCK")
    except (AttributeError, ValueError, OSError):
        return 100


CLOCK_TICKS = _clock_ticks()


def process_cpu(pid: int | None) -> float:
    """CPU seconds of process ``pid`` and its reaped children (0 without ``/proc``)."""
    if pid is None:
        return 0.0
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return 0.0
    # After the ")" ending the command name: [11] utime, [12] stime, [13] cutime, [14] cstime;
    # the children's part counts compilers the worker ran and waited for (inductor's g++).
    fields = text.rpartition(")")[2].split()
    return sum(int(value) for value in fields[11:15]) / CLOCK_TICKS


def _pid(worker: object) -> int | None:
    """The worker's process id, None when it is not running."""
    process = getattr(worker, "process", None)
    return process.pid if process is not None and process.is_alive() else None


def instrument(workers: dict, log: list[Call]) -> None:
    """Wrap each worker's ``call`` (on the instance) to append a ``Call`` per request."""
    for tree, worker in workers.items():
        def timed(request: dict, timeout: float | None = None, _tree: str = tree,
                  _worker: object = worker, _call: Callable[..., dict] = worker.call) -> dict:
            """Time one request's round trip and the worker's CPU time during it."""
            before = _pid(_worker)
            cpu_before = process_cpu(before)
            started = time.perf_counter()
            response = _call(request) if timeout is None else _call(request, timeout)
            elapsed = time.perf_counter() - started
            after = _pid(_worker)
            cpu = process_cpu(after) - (cpu_before if after == before else 0.0)
            reported = sum(response.get("seconds", {}).values())
            log.append(Call(_tree, request_kind(request), elapsed, reported, cpu))
            return response

        worker.call = timed


def break_counts(report: object) -> dict[str, int]:
    """``tree -> breaks`` from a report's BreakReports."""
    return {tree: int(getattr(found, "breaks", -1)) for tree, found in report.breaks.items()}


# -- the cost split -------------------------------------------------------------------------


PHASES = {
    "start": "worker start (spawn + import torch, both)",
    "load": "load (import, build, inputs), 5 runs",
    "eager": "eager calls, 3 runs",
    "compiled": "compiled: reset + compile + call, 2 runs",
    "post": "worker post-run + IPC (backward, pickling)",
    "breaks": "graph-break counting, 2 requests",
    "float64": "float64 triage runs",
    "parent": "parent: compare + bookkeeping",
    "shutdown": "worker shutdown (Harness.close)",
    "other": "other (target discovery, between targets)",
}


@dataclass
class Split:
    """Seconds per phase, summed over all targets."""

    phases: dict[str, float]
    total: float


def cost_split(run: Run) -> Split:
    """Attribute the total to phases; "parent" is validate wall time not spent in requests."""
    phases = dict.fromkeys(PHASES, 0.0)
    phases["start"], phases["shutdown"] = run.start, run.shutdown
    for result in run.results:
        for key, value in result.seconds.items():
            label, _, part = key.rpartition(".")
            if part == "load":
                phases["load"] += value
            elif label in EAGER_RUNS:
                phases["eager"] += value
            elif label in COMPILED_RUNS:
                phases["compiled"] += value
        in_requests = 0.0
        for call in result.calls:
            in_requests += call.round_trip
            if call.kind in ("eager", "compiled"):
                phases["post"] += call.round_trip - call.worker_seconds
            elif call.kind in ("breaks", "float64"):
                phases[call.kind] += call.round_trip
            else:
                phases["other"] += call.round_trip
        phases["parent"] += result.wall - in_requests
    phases["other"] += run.total - sum(phases.values())
    return Split(phases, run.total)


CPU_ROWS = {
    "start": "worker start",
    "eager": "eager run requests (3 per target)",
    "compiled": "compiled run requests (2 per target)",
    "breaks": "graph-break requests (2 per target)",
    "float64": "float64 triage requests",
    "parent": "parent inside validate()",
}


def cpu_split(run: Run) -> dict[str, tuple[float, float]]:
    """``row -> (CPU seconds, wall seconds)`` per request kind, summed over targets."""
    rows = dict.fromkeys(CPU_ROWS, (0.0, 0.0))
    rows["start"] = (run.start_cpu, run.start)
    for result in run.results:
        for call in result.calls:
            if call.kind in rows:
                cpu, wall = rows[call.kind]
                rows[call.kind] = (cpu + call.cpu, wall + call.round_trip)
        cpu, wall = rows["parent"]
        in_requests = sum(call.round_trip for call in result.calls)
        rows["parent"] = (cpu + result.parent_cpu, wall + result.wall - in_requests)
    return rows


def print_cpu(run: Run) -> float:
    """Print CPU against wall seconds per request kind; return the CPU-bound rate estimate."""
    rows = cpu_split(run)
    print(f"\n{'CPU time (workers incl. reaped children, /proc)':<46} {'cpu s':>9} "
          f"{'wall s':>9}")
    for key, (cpu, wall) in rows.items():
        print(f"{CPU_ROWS[key]:<46} {cpu:>9.2f} {wall:>9.2f}")
    busy = sum(cpu for key, (cpu, _) in rows.items() if key != "start")
    rate = per_minute(len(run.results), busy)
    print(f"CPU-bound estimate, warm (targets / CPU seconds of validate): {rate:.1f} targets/min")
    return rate


def per_minute(count: int, seconds: float) -> float:
    """Targets per minute, 0 for an empty interval."""
    return 60.0 * count / seconds if seconds > 0 else 0.0


def print_results(run: Run, verbose: bool) -> bool:
    """Print rates, the cost table and verdicts; return whether the run met its goals."""
    results, split = run.results, cost_split(run)
    count = len(results)
    walls = [r.wall for r in results]
    warm = split.total - run.start - run.shutdown
    print(f"\ntargets validated: {count} in {split.total:.2f} s (worker start {run.start:.2f} s, "
          f"of which Worker.start_seconds {run.spawn_only:.3f} s)")
    print(f"per target: first {walls[0]:.2f} s, median {statistics.median(walls):.2f} s, "
          f"max {max(walls):.2f} s ({results[walls.index(max(walls))].name})")
    overall, warm_rate = per_minute(count, split.total), per_minute(count, warm)
    steady = per_minute(count - 1, sum(walls[1:])) if count > 1 else warm_rate
    print(f"\nthroughput overall (incl. worker start): {overall:6.1f} targets/min")
    print(f"throughput warm (excl. worker start/stop): {warm_rate:4.1f} targets/min")
    print(f"throughput steady (excl. first target):  {steady:6.1f} targets/min")
    print(f"\n{'phase':<46} {'seconds':>9} {'%':>6}")
    for key, seconds in split.phases.items():
        name = PHASES[key]
        share = 100.0 * seconds / split.total if split.total else 0.0
        print(f"{name:<46} {seconds:>9.2f} {share:>6.1f}")
    print(f"{'total':<46} {split.total:>9.2f} {100.0:>6.1f}")
    verdicts = Counter(r.verdict for r in results)
    print("\nverdicts: " + ", ".join(f"{v}={n}" for v, n in verdicts.most_common()))
    for result in results:
        if result.verdict != "passed":
            print(f"  {result.name}: {result.verdict}: {result.detail[:300]}")
    broken = {r.name: r.breaks for r in results if any(n > 0 for n in r.breaks.values())}
    if results and results[0].breaks:
        print(f"graph breaks: {len(broken)} target(s) with breaks: "
              + (", ".join(f"{n} {b}" for n, b in broken.items()) or "none"))
    if verbose:
        print(f"\n{'target':<34} {'verdict':<10} {'wall':>7} {'eager':>7} {'compiled':>9} "
              f"{'breaks':>7}")
        for r in results:
            eager = sum(v for k, v in r.seconds.items() if k.rpartition(".")[0] in EAGER_RUNS)
            comp = sum(v for k, v in r.seconds.items() if k.rpartition(".")[0] in COMPILED_RUNS)
            brk = sum(c.round_trip for c in r.calls if c.kind == "breaks")
            print(f"{r.name:<34} {r.verdict:<10} {r.wall:>7.2f} {eager:>7.2f} {comp:>9.2f} "
                  f"{brk:>7.2f}")
    if any(call.cpu for result in results for call in result.calls):
        print_cpu(run)
    met = warm_rate >= TARGETS_PER_MINUTE
    print(f"\ntarget >= {TARGETS_PER_MINUTE:.0f} targets/min (warm workers): "
          f"{'MET' if met else 'NOT MET'} ({warm_rate:.1f}); incl. worker start: "
          f"{'met' if overall >= TARGETS_PER_MINUTE else 'not met'} ({overall:.1f})")
    return met and verdicts.get("passed", 0) == count


@dataclass
class Run:
    """All targets validated by one Harness, with the time spent outside ``validate``."""

    results: list[TargetResult]
    start: float  # both workers: spawn + import torch (first-request round trips)
    start_cpu: float  # the workers' CPU seconds for that
    spawn_only: float  # the workers' own ``start_seconds``: the spawn call alone
    shutdown: float  # Harness.close()
    total: float


def validate_all(original: Path, rewritten: Path, files: list[Path], backend: str,
                 count_breaks: bool, timeout: float) -> Run:
    """Validate every file four ways with one Harness, timing everything."""
    from eqrewrite.oracle.harness import Harness, Options
    from eqrewrite.oracle.targets import CompileSettings, find_target

    log: list[Call] = []
    began = time.perf_counter()
    harness = Harness(original, rewritten,
                      Options(CompileSettings(backend=backend), count_breaks=count_breaks,
                              timeout=timeout))
    instrument(harness.workers, log)
    results = []
    try:
        for worker in harness.workers.values():  # start both, as the first target would
            worker.call({"op": "purge"}, timeout)
        start = time.perf_counter() - began
        start_cpu = sum(call.cpu for call in log)
        for file in files:
            target = find_target(original, file)
            if target is None:
                sys.exit(f"{file}: no target found")
            first = len(log)
            started, parent_cpu = time.perf_counter(), time.process_time()
            report = harness.validate(target)
            wall = time.perf_counter() - started
            results.append(TargetResult(target.name, report.verdict, report.detail, wall,
                                        dict(report.seconds), log[first:],
                                        break_counts(report),
                                        time.process_time() - parent_cpu))
            progress(f"  {target.name:<34} {report.verdict:<10} {wall:6.2f} s")
        spawn_only = sum(w.start_seconds for w in harness.workers.values())
    finally:
        closing = time.perf_counter()
        harness.close()
        shutdown = time.perf_counter() - closing
    return Run(results, start, start_cpu, spawn_only, shutdown, time.perf_counter() - began)


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
    parser.add_argument("--targets", type=int, default=30, help="number of targets (30)")
    parser.add_argument("--backend", choices=BACKENDS, default="eager",
                        help="torch.compile backend (eager)")
    parser.add_argument("--no-breaks", action="store_true", help="skip graph-break counting")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per request")
    parser.add_argument("--reuse-inductor-cache", action="store_true",
                        help="use the default on-disk inductor cache instead of a fresh one")
    parser.add_argument("--keep", action="store_true", help="keep the generated trees")
    parser.add_argument("-v", "--verbose", action="store_true", help="per-target table")
    options = parser.parse_args(argv)
    if options.targets < 1:
        parser.error("--targets must be at least 1")
    return options


def main(argv: list[str] | None = None) -> int:
    """Generate, rewrite, validate and report; 0 when all passed and the target is met."""
    options = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="eqrewrite-oracle-bench-"))
    try:
        if not options.reuse_inductor_cache:  # inherited by the spawned workers
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(work / "inductor-cache")
        original, rewritten = work / "tree", work / "tree_rewritten"
        original.mkdir()
        files = write_targets(original, options.targets)
        rewrite_seconds, summary = rewrite_tree(original, rewritten)
        started = time.perf_counter()
        import torch  # noqa: F401  (the parent's own import, timed apart from the oracle)

        parent_import = time.perf_counter() - started
        print(f"cpus: {os.cpu_count()}  load average: {load_average()}  backend: "
              f"{options.backend}  targets: {len(files)}  graph breaks: "
              f"{'off' if options.no_breaks else 'on'}")
        changed = sum(f.read_bytes() != (rewritten / f.name).read_bytes() for f in files)
        print(f"setup (not in throughput): eqrewrite {rewrite_seconds:.2f} s: {summary} "
              f"({changed}/{len(files)} targets differ); parent import torch "
              f"{parent_import:.2f} s", flush=True)
        run = validate_all(original, rewritten, files, options.backend,
                           not options.no_breaks, options.timeout)
        ok = print_results(run, options.verbose)
    finally:
        if options.keep:
            print(f"\nwork folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"load average at the end: {load_average()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
