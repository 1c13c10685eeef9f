"""eqrewrite's reducer beside PyTorch's own minifier, on the same findings.

For each finding folder of ``findings/`` named on the command line (its ``program.py``, a
generated program), both tools start from the original program:

* **eqrewrite**: ``eqrewrite oracle program.py --reproducers DIR`` writes the reproducer
  folder, then ``eqrewrite reduce DIR -j 1 --time-budget B`` shrinks it to ``minimal.py``;
* **PyTorch's minifier**: a driver script builds the program as the oracle does (seed 0,
  ``get_init_inputs()``, ``get_inputs()``, floating inputs requiring gradients, Inductor with
  ``fallback_random``) and calls it compiled, then backward, with
  ``TORCHDYNAMO_REPRO_AFTER=dynamo`` and the level its troubleshooting guide gives for the
  finding's verdict (``finding.json``): ``TORCHDYNAMO_REPRO_LEVEL=4`` for a
  ``compiler-bug`` (accuracy: compiled results against eager; that level checks nothing
  else), 2 for a ``compile-error`` (the graph compiled and run forward and backward). When
  the minifier notices the failure it writes ``minifier_launcher.py``, which is run to
  write ``repro.py``.

One row per finding and tool: the wall time (the whole tool: the oracle's run and the
reduction; the failing run and the launcher), the lines of the final script (all, and
those that are neither blank nor comments), and whether that script, run alone with
``python``, still fails (exit status not 0). "not caught" means the tool wrote no
script: PyTorch's minifier compares values within tolerance, so a finding that differs
only in strides, or only in gradients, never reaches it.

Usage: ``python benchmarks/minifier_side_by_side.py FINDING [FINDING ...] [--budget S]``.
Times depend on the machine's load (every candidate is compiled).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# This interpreter's eqrewrite, whether or not its scripts folder is on PATH.
EQREWRITE = [sys.executable, "-m", "eqrewrite.rewriter"]
DRIVER = '''
import importlib.util
import sys

import torch
import torch._inductor.config

torch._inductor.config.fallback_random = True
spec = importlib.util.spec_from_file_location("program", sys.argv[1])
program = importlib.util.module_from_spec(spec)
spec.loader.exec_module(program)
torch.manual_seed(0)
if hasattr(program, "Program"):
    init = program.get_init_inputs() if hasattr(program, "get_init_inputs") else []
    fn = program.Program(*init)
    fn.eval()
else:
    fn = program.program
torch.manual_seed(0)
args = program.get_inputs()
inputs = [t for t in torch.utils._pytree.tree_leaves(args)
          if isinstance(t, torch.Tensor) and t.is_floating_point()]
for t in inputs:
    t.requires_grad_(True)
torch.manual_seed(0)
output = torch.compile(fn, backend="inductor")(*args)
leaves = [t for t in torch.utils._pytree.tree_leaves(output)
          if isinstance(t, torch.Tensor) and t.requires_grad]
if leaves:
    sum(t.float().sum() for t in leaves).backward()
'''


@dataclass
class Row:
    finding: str
    tool: str
    seconds: float
    lines: int | None = None
    code_lines: int | None = None
    still_fails: bool | None = None
    note: str = ""


def _lines(script: Path) -> tuple[int, int]:
    text = script.read_text().splitlines()
    code = [line for line in text if line.strip() and not line.strip().startswith("#")]
    return len(text), len(code)


def _fails_alone(script: Path) -> bool:
    alone = subprocess.run([sys.executable, script.name], cwd=script.parent,
                           capture_output=True, text=True, timeout=900)
    return alone.returncode != 0


def eqrewrite_row(finding: Path, work: Path, budget: int) -> Row:
    started = time.monotonic()
    folder = work / "eqrewrite"
    subprocess.run([*EQREWRITE, "oracle", str(finding / "program.py"), "--reproducers",
                    str(folder)], capture_output=True, text=True, timeout=1800)
    reproducers = sorted(folder.glob("repro_*"))
    if not reproducers:
        return Row(finding.name, "eqrewrite", time.monotonic() - started,
                   note="the oracle wrote no reproducer")
    subprocess.run([*EQREWRITE, "reduce", str(reproducers[0]), "-j", "1", "--time-budget",
                    str(budget), "--no-verify"], capture_output=True, text=True,
                   timeout=budget + 600)
    seconds = time.monotonic() - started
    script = reproducers[0] / "minimal.py"
    if not script.is_file():
        return Row(finding.name, "eqrewrite", seconds, note="no minimal.py written")
    return Row(finding.name, "eqrewrite", seconds, *_lines(script), _fails_alone(script))


def minifier_row(finding: Path, work: Path, budget: int) -> Row:
    folder = work / "minifier"
    folder.mkdir()
    (folder / "driver.py").write_text(DRIVER)
    verdict = json.loads((finding / "finding.json").read_text())["verdict"]
    environment = {**os.environ, "TORCHDYNAMO_REPRO_AFTER": "dynamo",
                   "TORCHDYNAMO_REPRO_LEVEL": "2" if verdict == "compile-error" else "4"}
    started = time.monotonic()
    subprocess.run([sys.executable, "driver.py", str(finding / "program.py")], cwd=folder,
                   env=environment, capture_output=True, text=True, timeout=budget)
    launchers = sorted(folder.glob("torch_compile_debug/*/minifier/minifier_launcher.py"))
    if not launchers:
        return Row(finding.name, "pytorch minifier", time.monotonic() - started,
                   note="not caught: no minifier_launcher.py written")
    try:
        subprocess.run([sys.executable, launchers[0].name], cwd=launchers[0].parent,
                       capture_output=True, text=True, timeout=budget)
    except subprocess.TimeoutExpired:
        return Row(finding.name, "pytorch minifier", time.monotonic() - started,
                   note=f"launcher still running after {budget} s")
    seconds = time.monotonic() - started
    script = launchers[0].parent / "repro.py"
    if not script.is_file():
        return Row(finding.name, "pytorch minifier", seconds,
                   note="the launcher wrote no repro.py")
    return Row(finding.name, "pytorch minifier", seconds, *_lines(script),
               _fails_alone(script))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("findings", nargs="+", type=Path)
    parser.add_argument("--budget", type=int, default=420,
                        help="seconds for each tool's reduction (default: 420)")
    args = parser.parse_args(argv)
    if shutil.which("eqrewrite") is None:
        parser.error("eqrewrite is not on PATH (pip install -e .)")
    rows: list[Row] = []
    for finding in args.findings:
        with tempfile.TemporaryDirectory(prefix="minifiers-") as work:
            for make in (eqrewrite_row, minifier_row):
                rows.append(make(finding.resolve(), Path(work), args.budget))
                print(f"{rows[-1]}", file=sys.stderr, flush=True)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'finding':48} {'tool':17} {'seconds':>8} {'lines':>6} {'code':>5} "
          f"{'fails alone':>11}  note")
    for row in rows:
        fails = "-" if row.still_fails is None else ("yes" if row.still_fails else "no")
        lines = "-" if row.lines is None else str(row.lines)
        code = "-" if row.code_lines is None else str(row.code_lines)
        print(f"{row.finding:48} {row.tool:17} {row.seconds:8.1f} {lines:>6} {code:>5} "
              f"{fails:>11}  {row.note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
