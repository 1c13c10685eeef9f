"""What ``eqrewrite oracle`` prints for people and machines: an error's detail names the
exception and the user's frame (never a traceback header or ``at None``), the target's own
output and Dynamo's warnings stay out of the report unless asked for, the legend appears only
for symbols in the table, and configuration mistakes are usage errors (exit 2), not
tracebacks or per-target errors (rewriter-and-CLI issue, items 11 and 13).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

RAISES = '''
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return self.check(x)

    def check(self, x):
        raise ValueError("width must be even, got 3")


def get_inputs():
    return [torch.ones(3)]
'''

PRINTS = '''
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        print("hello from the target")
        return x * 2


def get_inputs():
    return [torch.ones(3)]
'''

CLEAN = '''
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) + 1


def get_inputs():
    return [torch.ones(3)]
'''


def _oracle(*args: str, cwd: Path, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "eqrewrite.rewriter", "oracle",
                           "--backend", "eager", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=600,
                          env=None if env is None else {**os.environ, **env})


def _write(folder: Path, **files: str) -> None:
    for name, text in files.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(text))


def test_an_error_names_the_exception_and_the_user_frame(tmp_path):
    _write(tmp_path, raises=RAISES)
    result = _oracle("raises.py", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith("raises.py"))
    assert "error" in row
    assert "ValueError: width must be even, got 3" in row
    assert "raises.py:10 in check" in row  # the innermost frame of the user's code
    assert "Traceback" not in result.stdout and "at None" not in result.stdout


def test_the_targets_output_stays_out_of_the_report_unless_asked_for(tmp_path):
    _write(tmp_path, prints=PRINTS)
    quiet = _oracle("prints.py", cwd=tmp_path)
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert "hello from the target" not in quiet.stdout + quiet.stderr
    shown = _oracle("prints.py", "--show-output", cwd=tmp_path)
    assert "prints.py::Model printed on stdout:" in shown.stdout
    assert "hello from the target" in shown.stdout
    machine = _oracle("prints.py", "--format", "json", cwd=tmp_path)
    target = json.loads(machine.stdout)["targets"][0]
    assert "hello from the target" in json.dumps(target)  # kept for machines


def test_the_legend_appears_only_for_symbols_in_the_table(tmp_path):
    _write(tmp_path, clean=CLEAN, prints=PRINTS)
    clean = _oracle("clean.py", cwd=tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "(* :" not in clean.stdout
    broken = _oracle("prints.py", cwd=tmp_path)  # print() breaks the graph
    assert "*" in next(line for line in broken.stdout.splitlines()
                       if line.startswith("prints.py"))
    assert "(* : Dynamo's frames did not compile as one graph)" in broken.stdout


def test_invalid_configuration_is_a_usage_error_naming_the_file(tmp_path):
    _write(tmp_path, clean=CLEAN)
    (tmp_path / "pyproject.toml").write_text("[tool.eqrewrite.oracle\nbackend = 'eager'\n")
    result = _oracle("clean.py", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "pyproject.toml" in result.stderr and "Traceback" not in result.stderr
    (tmp_path / "pyproject.toml").write_text("[tool.eqrewrite.oracle]\ntimeout = 'soon'\n")
    result = _oracle("clean.py", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "timeout" in result.stderr and "Traceback" not in result.stderr


def test_files_without_a_target_are_listed_with_the_reason(tmp_path):
    _write(tmp_path, clean=CLEAN, helper="import torch\n\n\ndef scale(x):\n    return x * 2\n")
    result = _oracle(".", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    assert "no target: helper.py" in result.stdout + result.stderr


MARKED_CONSTANT = '''
import torch


def ready():
    return True


ready._dynamo_marked_constant = True  # Dynamo runs it at trace time, keeps the result


class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2 if ready() else x
'''


def test_globals_the_compiler_installs_are_not_program_state(tmp_path):
    # Dynamo stores the constant result in the module's globals (as ``sub...`` names): the
    # compiled run must not look as if the program had rebound a global.
    (tmp_path / "marked.py").write_text(textwrap.dedent(MARKED_CONSTANT)
                                        + "\n\ndef get_inputs():\n    return [torch.ones(3)]\n")
    result = _oracle("marked.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_a_run_without_reproducers_leaves_no_temporary_folder(tmp_path):
    """Without --reproducers the oracle writes them to a new temporary folder; when no
    target needed one, that folder is removed (runs used to leave one empty folder each)."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    _write(tmp_path, clean=CLEAN)
    result = _oracle("clean.py", cwd=tmp_path, env={"TMPDIR": str(temporary)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "pass" in result.stdout
    assert not list(temporary.glob("eqrewrite-repro-*"))
