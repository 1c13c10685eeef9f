"""The inserted helpers are as faithful as the code they replace.

- an explicit ``raise AssertionError(...)`` still raises under ``python -O``, while a
  rewritten ``assert`` statement vanishes under ``-O`` exactly like the original;
- rewritten guards still compile with ``torch.jit.script`` and raise what the scripted
  original raises;
- a deferred logger call keeps the caller's ``%(funcName)s`` and ``%(lineno)d``;
- importing a rewritten module does not import ``torch._dynamo``;
- a deferred call inside a function that Dynamo inlines (a submodule's forward) is still
  emitted when compiled (Dynamo 2.13 drops such calls on its own).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from eqrewrite.rewriter.api import RewriteOptions, load_pack, rewrite_text, select_rules

EVERYWHERE = RewriteOptions(scope=frozenset({"everywhere"}))
RULES = select_rules(load_pack("graphbreaks").rules, EVERYWHERE)

GUARDS = '''
import torch


class Checked(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        if torch.isnan(x).any():
            raise AssertionError("NaN input")
        assert not (x < -100).any(), "too small"
        return x * 2
'''

LOGGING = '''
import logging
import torch

logger = logging.getLogger("fidelity")


def report(x: torch.Tensor):
    logger.warning("total %s", x.sum())
    return x + 1
'''

NESTED = '''
import torch


class Inner(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        print("inner sum", x.sum())
        return x + 1


class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x: torch.Tensor):
        print("outer", x * 2)
        return self.inner(x * 2)
'''


def write(folder: Path, name: str, source: str, rewrite: bool) -> Path:
    text = textwrap.dedent(source)
    if rewrite:
        result = rewrite_text(text, RULES, EVERYWHERE)
        assert result.changed
        text = result.text
    path = folder / f"{name}.py"
    path.write_text(text)
    return path


def run_python(folder: Path, code: str, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *flags, "-c", textwrap.dedent(code)], cwd=folder,
                          capture_output=True, text=True, timeout=300)


PROBE = '''
import torch
from {module} import Checked
m = Checked()
for value in (float("nan"), -1000.0):
    try:
        m(torch.tensor([value]))
        print("no error")
    except Exception as error:
        print(type(error).__name__, str(error).strip().splitlines()[-1])
'''


@pytest.mark.parametrize("flags", [(), ("-O",)], ids=["debug", "optimized"])
def test_raise_kept_and_assert_removed_like_the_original_under_O(tmp_path, flags):
    write(tmp_path, "original", GUARDS, rewrite=False)
    write(tmp_path, "rewritten", GUARDS, rewrite=True)
    outputs = [run_python(tmp_path, PROBE.format(module=m), *flags) for m in
               ("original", "rewritten")]
    assert outputs[0].returncode == 0, outputs[0].stderr
    assert outputs[0].stdout == outputs[1].stdout, outputs[1].stderr
    lines = outputs[0].stdout.splitlines()
    assert lines[0] == "AssertionError NaN input"  # the explicit raise, even under -O
    assert lines[1] == ("no error" if flags else "AssertionError too small")


def test_rewritten_guards_compile_with_torchscript(tmp_path):
    write(tmp_path, "original", GUARDS, rewrite=False)
    write(tmp_path, "rewritten", GUARDS, rewrite=True)
    probe = PROBE.replace("m = Checked()", "m = torch.jit.script(Checked())\n"
                                            "print(m(torch.ones(2)).tolist())")
    outputs = [run_python(tmp_path, probe.format(module=m)) for m in ("original", "rewritten")]
    assert outputs[0].returncode == 0 and outputs[1].returncode == 0, outputs[1].stderr
    assert outputs[0].stdout == outputs[1].stdout
    assert "AssertionError: NaN input" in outputs[0].stdout


def test_deferred_log_names_the_caller(tmp_path):
    write(tmp_path, "original", LOGGING, rewrite=False)
    write(tmp_path, "rewritten", LOGGING, rewrite=True)
    probe = '''
        import logging, sys
        import torch
        logging.basicConfig(stream=sys.stdout,
                            format="%(name)s %(funcName)s %(filename)s:%(lineno)d %(message)s")
        from {module} import report
        report(torch.ones(3))
    '''
    outputs = [run_python(tmp_path, probe.format(module=m)).stdout for m in
               ("original", "rewritten")]
    assert outputs[0].startswith("fidelity report original.py:")
    rewritten_line = next(i for i, line in enumerate(
        (tmp_path / "rewritten.py").read_text().splitlines(), 1) if "_eqrw_log(" in line
        and not line.lstrip().startswith("def"))
    assert outputs[1] == outputs[0].replace("original.py:9", f"rewritten.py:{rewritten_line}")


def test_import_does_not_import_dynamo_and_compiled_calls_are_emitted(tmp_path):
    write(tmp_path, "nested", NESTED, rewrite=True)
    probe = '''
        import sys
        import torch
        import nested
        print("dynamo imported:", "torch._dynamo" in sys.modules)
        model = nested.Outer()
        compiled = torch.compile(model, backend="eager", fullgraph=True)
        print(compiled(torch.ones(2)).tolist())
    '''
    result = run_python(tmp_path, probe)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "dynamo imported: False", "outer tensor([2., 2.])", "inner sum tensor(4.)",
        "[3.0, 3.0]"]
