"""The import hook on an installed transformers: graph breaks, output equality, wall times.

Runs one small script (a tiny-config Mixtral with random weights, no downloads; it prints
``torch._dynamo.explain(model)(input_ids).graph_break_count`` and a SHA-256 of the logits
under ``torch.no_grad()``) three times, each in a fresh process:

* plain: ``python model.py``;
* hooked, cold: ``eqrewrite run --package transformers model.py`` with an empty cache
  folder (``XDG_CACHE_HOME``): the call graph over the whole package, then each imported
  module rewritten and compiled;
* hooked, cached: the same command again: every module from the cache.

and prints the break counts, whether the logits are bitwise equal, the wall times and the
hook's report summaries. A fourth hooked run checks the lines: in every rewritten module,
each function's code object starts at the line the original file's compiled code does
(``co_firstlineno`` of every code object, nested ones included). ``transformers`` comes
from ``--transformers`` (a folder put on ``PYTHONPATH``) or the environment.

    python benchmarks/import_hook.py --transformers /work/tf/v4.57.6 --json /tmp/hook.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODEL = '''\
import hashlib
import json

import torch
import transformers
from transformers import MixtralConfig, MixtralForCausalLM

torch.manual_seed(0)
config = MixtralConfig(hidden_size=64, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
                       num_experts_per_tok=2, vocab_size=128)
model = MixtralForCausalLM(config).eval()
input_ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))
with torch.no_grad():
    logits = model(input_ids).logits
    breaks = torch._dynamo.explain(model)(input_ids).graph_break_count
print("RESULT " + json.dumps({
    "transformers": transformers.__file__, "breaks": breaks,
    "logits": hashlib.sha256(logits.contiguous().numpy().tobytes()).hexdigest()}))
'''


LINES = '''\
import importlib
import json
import sys
import types


def firsts(code):
    found, stack = set(), [code]
    while stack:
        code = stack.pop()
        found.add((code.co_qualname, code.co_firstlineno))
        stack += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return found


report = json.load(open(sys.argv[1]))
modules = functions = moved = 0
for record in report["modules"]:
    if record["status"] != "rewritten":
        continue
    module = importlib.import_module(record["module"])
    hooked = firsts(module.__spec__.loader.get_code(record["module"]))
    with open(record["file"], "rb") as handle:
        original = firsts(compile(handle.read(), record["file"], "exec", dont_inherit=True))
    modules, functions = modules + 1, functions + len(original)
    moved += len(original - hooked)
print("RESULT " + json.dumps({"modules": modules, "functions": functions, "moved": moved}))
'''


def _run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[dict, float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=3600)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    line = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line.removeprefix("RESULT ")), wall, done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transformers", help="folder holding the transformers package")
    parser.add_argument("--rules", default="graphbreaks")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="eqrewrite-hook-"))
    script = work / "model.py"
    script.write_text(MODEL)
    env = dict(os.environ, XDG_CACHE_HOME=str(work / "cache"),
               TORCHINDUCTOR_CACHE_DIR=str(work / "inductor"))
    if args.transformers:
        env["PYTHONPATH"] = os.pathsep.join(
            [args.transformers, *filter(None, [os.environ.get("PYTHONPATH")])])
    hooked = [sys.executable, "-m", "eqrewrite.rewriter", "run", "--package", "transformers",
              "--rules", args.rules]
    plain, plain_s, _ = _run([sys.executable, str(script)], env, work)
    rows = {"plain": (plain, plain_s, None)}
    for name in ("hooked cold", "hooked cached"):
        report = work / f"{name.replace(' ', '-')}.json"
        result, wall, _ = _run([*hooked, "--report", str(report), str(script)], env, work)
        rows[name] = (result, wall, json.loads(report.read_text())["summary"])
    print(f"transformers: {plain['transformers']}")
    print(f"{'run':15} {'breaks':>6} {'logits equal':>13} {'wall s':>7}  hook summary")
    figures = {}
    for name, (result, wall, summary) in rows.items():
        equal = result["logits"] == plain["logits"]
        print(f"{name:15} {result['breaks']:6} {str(equal):>13} {wall:7.2f}  {summary or ''}")
        figures[name] = {**result, "wall_s": wall, "logits_equal": equal, "summary": summary}
    lines = work / "lines.py"
    lines.write_text(LINES)
    checked, _, _ = _run([*hooked, str(lines), str(work / "hooked-cold.json")], env, work)
    print(f"lines: {checked['functions']} code objects of {checked['modules']} rewritten "
          f"modules, {checked['moved']} with a first line other than the original's")
    figures["lines"] = checked
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
