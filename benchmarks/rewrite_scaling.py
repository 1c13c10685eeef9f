"""How rewriting time grows with the size of one file: it should grow linearly.

Generated files of small functions, at 1x, 2x, 4x and 8x a base number of functions,
in two flavours:

* dense: every function is typed, ``z = x + y * i; return -z / 2 + x @ y`` (six edits);
* sparse: one typed function in sixteen, the others the same code on untyped operands,
  which every rule considers and no guard accepts (the usual case in real code).

Each file is rewritten by ``eqrewrite.rewriter.api.rewrite_text`` with the default pack in
a fresh process (so garbage and caches of one run never slow the next); sizes and
flavours are interleaved, repeated ``--repeat`` times, and the medians of CPU and wall
seconds are printed with the ratio from each size to the next. Linear cost doubles per
doubling: the printed "beyond linear" factor is that ratio divided by 2 (target: at most
1.15). Every output is checked: each typed function rewritten exactly as expected, each
untyped one untouched.

``--big MB`` also rewrites one dense file of that many megabytes through the ``eqrewrite``
command (target for 5 MB: under 60 s) and prints its time and peak memory, next to what
bounds any libcst-based application of its edits: libcst parsing the statements that hold
them and generating the code of their rewritten forms, and nothing else (``ast.parse`` of
the whole file is printed too).

Usage: ``python benchmarks/rewrite_scaling.py [--base N] [--repeat N] [--big MB]``.
Exit status 1 if an output is wrong; missed targets are reported but do not fail.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCALES = (1, 2, 4, 8)
SPARSE_EVERY = 16  # one typed function in this many
BEYOND_LINEAR_TARGET = 1.15
BIG_SECONDS_TARGET = 60.0
TYPED = ("def f_{i}(x: torch.Tensor, y: torch.Tensor, i: int):\n"
         "    z = x + y * i\n    return -z / 2 + x @ y\n\n\n")
REWRITTEN = ("def f_{i}(x: torch.Tensor, y: torch.Tensor, i: int):\n"
             "    z = torch.add(x, torch.mul(y, i))\n"
             "    return torch.add(torch.div(torch.neg(z), 2), torch.matmul(x, y))\n\n\n")
UNTYPED = "def g_{i}(x, y, i):\n    z = x + y * i\n    return -z / 2 + x @ y\n\n\n"
HEADER = "import torch\n\n\n"

# Runs in a fresh interpreter: rewrite one file, report times, peak memory and the text.
_CHILD = r"""
import json, resource, sys, time
from eqrewrite.rewriter.api import RewriteOptions, load_pack, rewrite_text, select_rules
rules = select_rules(load_pack("default").rules, RewriteOptions())
text = open(sys.argv[1], encoding="utf-8").read()
cpu, wall = time.process_time(), time.perf_counter()
result = rewrite_text(text, rules)
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
open(sys.argv[2], "w", encoding="utf-8").write(result.text)
print(json.dumps({"cpu": cpu, "wall": wall, "edits": len(result.edits),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def generate(functions: int, dense: bool) -> tuple[str, str]:
    """A file of ``functions`` functions and the text it must be rewritten into."""
    source, expected = [HEADER], [HEADER]
    for i in range(functions):
        typed = dense or i % SPARSE_EVERY == 0
        source.append((TYPED if typed else UNTYPED).format(i=i))
        expected.append((REWRITTEN if typed else UNTYPED).format(i=i))
    return "".join(source), "".join(expected)


def rewrite_once(source: Path, output: Path) -> dict:
    """Rewrite ``source`` in a fresh process; its measurements."""
    completed = subprocess.run([sys.executable, "-c", _CHILD, str(source), str(output)],
                               capture_output=True, text=True, check=True)
    return json.loads(completed.stdout)


def measure(folder: Path, base: int, repeat: int) -> tuple[dict, bool]:
    """Median measurements per (flavour, scale), and whether every output was right."""
    runs: dict[tuple[str, int], list[dict]] = {}
    ok = True
    files = {}
    for flavour in ("dense", "sparse"):
        for scale in SCALES:
            source, expected = generate(base * scale, flavour == "dense")
            path = folder / f"{flavour}_{scale}x.py"
            path.write_text(source, encoding="utf-8")
            files[flavour, scale] = (path, expected, len(source))
    for round_number in range(repeat):
        for scale in SCALES:  # interleaved, so that load on the machine hits all sizes
            for flavour in ("dense", "sparse"):
                path, expected, _ = files[flavour, scale]
                output = folder / f"out_{flavour}_{scale}x.py"
                runs.setdefault((flavour, scale), []).append(rewrite_once(path, output))
                if output.read_text(encoding="utf-8") != expected:
                    ok = False
                    print(f"WRONG OUTPUT: {flavour} {scale}x", file=sys.stderr)
        print(f"  round {round_number + 1}/{repeat} done", file=sys.stderr, flush=True)
    table = {key: {"cpu": statistics.median(r["cpu"] for r in rows),
                   "wall": statistics.median(r["wall"] for r in rows),
                   "edits": rows[0]["edits"], "rss_mb": max(r["rss_mb"] for r in rows),
                   "size": files[key][2]}
             for key, rows in runs.items()}
    return table, ok


def print_table(table: dict, base: int) -> bool:
    """The scaling table; returns whether every doubling stayed within the target."""
    met = True
    print(f"\n{'flavour':<7} {'scale':>5} {'functions':>9} {'KB':>7} {'edits':>7} "
          f"{'CPU s':>7} {'wall s':>7} {'peak MB':>8} {'CPU x':>6} {'beyond linear':>13}")
    for flavour in ("dense", "sparse"):
        previous = None
        for scale in SCALES:
            row = table[flavour, scale]
            growth = beyond = ""
            if previous is not None:
                ratio = row["cpu"] / previous["cpu"]
                growth, beyond = f"{ratio:.2f}", f"{ratio / 2:.2f}"
                met = met and ratio / 2 <= BEYOND_LINEAR_TARGET
            print(f"{flavour:<7} {scale:>4}x {base * scale:>9} {row['size'] / 1000:>7.0f} "
                  f"{row['edits']:>7} {row['cpu']:>7.2f} {row['wall']:>7.2f} "
                  f"{row['rss_mb']:>8.0f} {growth:>6} {beyond:>13}")
            previous = row
    for flavour in ("dense", "sparse"):
        first, last = table[flavour, SCALES[0]], table[flavour, SCALES[-1]]
        overall = (last["cpu"] / first["cpu"]) ** (1 / (len(SCALES) - 1)) / 2
        print(f"{flavour}: {SCALES[-1]}x the input took {last['cpu'] / first['cpu']:.2f}x the "
              f"CPU time; per doubling {overall:.2f}x beyond linear")
    print(f"target: at most {BEYOND_LINEAR_TARGET}x beyond linear per doubling: "
          f"{'MET' if met else 'NOT MET'}")
    return met


def eqrewrite_command() -> list[str]:
    """How to start eqrewrite from this interpreter."""
    return [sys.executable, "-m", "eqrewrite.rewriter"]


# Runs in a fresh interpreter: the floor of applying the edits with libcst (parse each
# edited statement, generate the code of each rewritten one), and ast.parse of the file.
_FLOOR = r"""
import ast, json, sys, time
import libcst
source, expected = (open(p, encoding="utf-8").read() for p in sys.argv[1:3])
def edited(text):
    return [line.strip() + "\n" for line in text.splitlines() if line.startswith("    ")]
cpu = time.process_time()
ast.parse(source)
parse_bound = time.process_time() - cpu
rewritten = [libcst.parse_module(s) for s in edited(expected)]
cpu = time.process_time()
for statement in edited(source):
    libcst.parse_module(statement)
parse = time.process_time() - cpu
cpu = time.process_time()
for module in rewritten:
    module.code
print(json.dumps({"ast": parse_bound, "parse": parse, "codegen": time.process_time() - cpu}))
"""


def libcst_floor(source: Path, expected: Path) -> dict:
    """CPU seconds of libcst alone on the edited statements, and of ast.parse."""
    completed = subprocess.run([sys.executable, "-c", _FLOOR, str(source), str(expected)],
                               capture_output=True, text=True, check=True)
    return json.loads(completed.stdout)


def big_file(folder: Path, megabytes: float) -> bool:
    """Rewrite one dense file of ``megabytes`` MB with the command; whether it was right."""
    functions = int(megabytes * 1_000_000 / len(TYPED.format(i=10_000)))
    source, expected = generate(functions, dense=True)
    path, wanted = folder / "big.py", folder / "big_expected.py"
    path.write_text(source, encoding="utf-8")
    wanted.write_text(expected, encoding="utf-8")
    floor = libcst_floor(path, wanted)
    print(f"\nrewriting a {len(source) / 1e6:.1f} MB file ({functions} functions, "
          f"{6 * functions} edits) with eqrewrite ...", file=sys.stderr, flush=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    completed = subprocess.run([*eqrewrite_command(), str(path), "--no-cache", "-q"],
                               capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    right = completed.returncode == 0 and path.read_text(encoding="utf-8") == expected
    print(f"{len(source) / 1e6:.1f} MB file: {wall:.1f} s wall, {cpu:.1f} s CPU, peak "
          f"{after.ru_maxrss / 1024:.0f} MB; output {'right' if right else 'WRONG'}; "
          f"target under {BIG_SECONDS_TARGET:.0f} s: "
          f"{'MET' if wall < BIG_SECONDS_TARGET else 'NOT MET'}")
    libcst_seconds = floor["parse"] + floor["codegen"]
    print(f"libcst alone on the {2 * functions} edited statements: parse {floor['parse']:.1f} "
          f"s + code of the rewritten ones {floor['codegen']:.1f} s = {libcst_seconds:.1f} CPU "
          f"s ({libcst_seconds / cpu:.0%} of the run); ast.parse of the file "
          f"{floor['ast']:.1f} s")
    if completed.returncode != 0:
        print(completed.stderr[-2000:])
    return right


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit 1 if an output was wrong."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=int, default=1000,
                        help="functions in the 1x file (default: 1000, about 100 KB)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per file (default: 3)")
    parser.add_argument("--big", type=float, metavar="MB",
                        help="also rewrite one dense file of this size with the command")
    options = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="eqrewrite-scaling-"))
    try:
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs",
              file=sys.stderr)
        table, ok = measure(folder, options.base, options.repeat)
        print_table(table, options.base)
        print("outputs: " + ("every function rewritten exactly as expected" if ok
                             else "WRONG (see above)"))
        if options.big:
            ok = big_file(folder, options.big) and ok
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
