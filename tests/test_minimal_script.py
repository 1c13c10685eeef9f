"""``minimal.py`` exits 1 for the finding only: the comparison showing it, or a compiler error
raised in the compiled call; any other exception (a broken script) exits 2 and says so.

Whatever the program calls its target (``fn``, ``run``, ``torch``, a class ``Model``...) the
harness's own names never clash with it. Findings come from planted backends (Dynamo only,
no Inductor), so each script runs in a few seconds; the last test goes through ``eqrewrite
oracle`` and ``eqrewrite reduce`` with Inductor on a real miscompilation, as a new user would.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from eqrewrite.oracle.formats import Recipe  # noqa: E402
from eqrewrite.oracle.minimising.cli import _render  # noqa: E402
from eqrewrite.oracle.minimising.standalone import (  # noqa: E402
    BROKEN,
    DIFFERS,
    RAISED,
    minimal_script,
    program_of,
)
from test_reduce import BACKENDS  # noqa: E402

# argmin over a transposed input: the planted backend adds one to the integer result.
FUNCTION = '''
import torch{alias}


def {name}(x):
    return (x.t() + 0.5).argmin(){typo}


def get_inputs():
    {torch}.manual_seed(0)
    return [{torch}.randn(2, 2)]
'''

MODULE = '''
import torch


class {name}(torch.nn.Module):
    def forward(self, x):
        return (x.t() + 0.5).argmin(){typo}


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 2)]
'''

NAMES = ["fn", "run", "main", "torch", "f", "compiled", "eager", "broken", "expected",
         "Model", "Repro"]


def program(name: str, typo: bool = False) -> str:
    """The argmin program with its target called ``name`` (a class when capitalised);
    ``typo``: its eager code reads a name nothing defines."""
    fields = {"name": name, "typo": " + offset" if typo else "",
              "alias": " as th" if name == "torch" else "",
              "torch": "th" if name == "torch" else "torch"}
    return (MODULE if name[0].isupper() else FUNCTION).format(**fields)


def recipe(name: str, backend: str, folder: Path, **changes) -> Recipe:
    fields = dict(
        target={"form": "module" if name[0].isupper() else "function", "attribute": name,
                "inputs": "get_inputs", "has_init_inputs": False},
        settings={"backend": backend}, seed=0, grad_inputs=True, grads=False,
        strict=False, scale=1.0, extra_paths=(str(folder),), state=None,
        headline="argmin off by one", torch_version=torch.__version__,
        differences=(("result['output']", "exact"),))
    return Recipe(**{**fields, **changes})


@pytest.fixture
def planted(tmp_path) -> Path:
    """A folder holding the fault-injecting backends (``planted:<name>``)."""
    (tmp_path / "planted.py").write_text(BACKENDS)
    return tmp_path


def run_all(scripts: dict[str, str], folder: Path) -> dict[str, subprocess.CompletedProcess]:
    """Run each script in a folder of its own, all at once (each loads torch)."""
    started = {}
    for label, text in scripts.items():
        (folder / label).mkdir()
        path = folder / label / "minimal.py"
        path.write_text(text)
        started[label] = subprocess.Popen([sys.executable, str(path)], cwd=path.parent,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True)
    done = {}
    for label, process in started.items():
        stdout, stderr = process.communicate(timeout=300)
        done[label] = subprocess.CompletedProcess(process.args, process.returncode, stdout,
                                                  stderr)
    return done


@pytest.mark.parametrize("name", NAMES)
def test_any_target_name_gives_a_script_that_runs(planted, name):
    runs = run_all({
        "finding": minimal_script(program(name), recipe(name, "planted:exact_off_by_one",
                                                        planted)),
        "agrees": minimal_script(program(name), recipe(name, "eager", planted)),
        "typo": minimal_script(program(name, typo=True), recipe(name, "eager", planted)),
    }, planted)
    finding, agrees, typo = runs["finding"], runs["agrees"], runs["typo"]
    assert finding.returncode == 1, finding.stdout + finding.stderr
    assert f"{DIFFERS}: Scalars are not equal!" in finding.stderr, finding.stderr
    assert "Traceback" not in finding.stderr
    assert "expected (eager): tensor(1)" in finding.stdout
    assert "actual (compiled): tensor(2)" in finding.stdout
    assert agrees.returncode == 0, agrees.stdout + agrees.stderr
    assert "eager and compiled agree" in agrees.stdout
    assert typo.returncode == 2, typo.stdout + typo.stderr
    assert f"{BROKEN} (exit 2): NameError: name 'offset' is not defined" in typo.stderr
    assert DIFFERS not in typo.stderr and RAISED not in typo.stderr


def test_harness_names_the_program_binds_are_renamed():
    # Before: ``fn = fn`` inside run() (UnboundLocalError, exit 1) for a target called fn.
    text = minimal_script(program("fn"), recipe("fn", "inductor", Path(".")))
    assert "    fn_ = fn\n" in text and "fn_ = torch.compile(fn_, backend='inductor')" in text
    assert "def fn(x):" in text  # the program is untouched
    ast.parse(text)
    # A program binding the harness's module-level names: they are renamed, torch's own
    # keywords (backend=) are not.
    busy = program("fn").replace("\n\ndef fn", "\nSEED = 3\nbackend = 'mine'\n"
                                 "run = None\nsys = None\n\n\ndef fn")
    text = minimal_script(busy, recipe("fn", "planted:exact_off_by_one", Path(".")))
    for line in ("from planted import exact_off_by_one as backend_", "SEED_ = 0",
                 "torch.compile(fn_, backend=backend_)", "def run_(compiled=False):",
                 "import sys as sys_", "sys_.excepthook = broken", "actual = run_(compiled=True)",
                 "torch.manual_seed(SEED_)"):
        assert line in text, line
    assert "backend_=" not in text and "SEED = 3" in text
    # torch bound to a function: the harness imports torch under a name of its own.
    text = minimal_script(program("torch"), recipe("torch", "inductor", Path(".")))
    assert "import torch as torch_" in text and "torch_.compile(fn, backend='inductor')" in text
    assert "import torch\n" not in text


def test_program_of_gives_back_the_program_alone():
    text = minimal_script(program("Model"), recipe("Model", "inductor", Path(".")))
    back = program_of(text)
    assert back is not None and back.strip() == program("Model").strip()
    assert "excepthook" not in back and "import sys" not in back


def test_a_compile_crash_in_the_compiled_call_is_the_finding_and_any_other_error_is_not(
        planted):
    missing = program("fn").replace("import torch\n", "import torch\nimport not_a_module\n")
    runs = run_all({
        "crash": minimal_script(program("fn"), recipe("fn", "planted:crash_on_argmin",
                                                      planted)),
        "import": minimal_script(missing, recipe("fn", "eager", planted)),
        "backend": minimal_script(program("fn"), recipe("fn", "planted:exact_off_by_one",
                                                        planted, extra_paths=())),
    }, planted)
    crash = runs["crash"]
    assert crash.returncode == 1, crash.stdout + crash.stderr
    assert "planted crash: argmin" in crash.stderr and "Traceback" in crash.stderr
    last = crash.stderr.strip().splitlines()[-1]
    assert last == f"{RAISED} (a compiler error, traceback above): BackendCompilerFailed"
    assert "expected (eager): tensor(1)" in crash.stdout and "actual" not in crash.stdout
    for label, error in (("import", "ModuleNotFoundError: No module named 'not_a_module'"),
                         ("backend", "ModuleNotFoundError: No module named 'planted'")):
        done = runs[label]
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"{BROKEN} (exit 2): {error}" in done.stderr


def test_an_inputs_list_target_with_input_gradients_runs(planted):
    # A module-level ``inputs`` list: run() once made ``inputs`` a local of its own and read
    # it before assigning it (UnboundLocalError).
    source = program("fn").replace("def get_inputs():\n    torch.manual_seed(0)\n"
                                   "    return [torch.randn(2, 2)]",
                                   "torch.manual_seed(0)\ninputs = [torch.randn(2, 2)]")
    made = recipe("fn", "planted:exact_off_by_one", planted,
                  target={"form": "function", "attribute": "fn", "inputs": "inputs",
                          "has_init_inputs": False})
    done = run_all({"inputs": minimal_script(source, made)}, planted)["inputs"]
    assert done.returncode == 1, done.stdout + done.stderr
    assert DIFFERS in done.stderr


# -- through eqrewrite reduce -------------------------------------------------------------------

HELPER_USER = '''
import torch
from helper import shift


def fn(x):
    return (x.t() + shift()).argmin()


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 2)]
'''


def test_reduce_reports_a_broken_minimal_script_as_broken(tmp_path, monkeypatch):
    # The target imports a module of its tree: the oracle's reproducer has it, the standalone
    # script does not, so it stops at the import (exit 2), which is not the finding.
    from eqrewrite.oracle.judging.settings import TargetForm
    from eqrewrite.oracle.minimising.reduce import Budget, reduce_folder
    from test_reduce import reproducer

    folder = reproducer(tmp_path, monkeypatch, HELPER_USER, "prog.py", "fn",
                        TargetForm.FUNCTION, "exact_off_by_one")
    (tmp_path / "tree" / "helper.py").write_text("def shift():\n    return 0.5\n")
    result = reduce_folder(folder, tmp_path / "out", Budget(max_tests=3))
    assert result.verified == {"reduced/repro.py": 1, "minimal.py": 2}
    assert result.errors["minimal.py"] == "ModuleNotFoundError: No module named 'helper'"
    assert "  minimal.py: broken (exit 2): ModuleNotFoundError: No module named 'helper'" in (
        _render(result).splitlines())


def eqrewrite(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "eqrewrite.rewriter", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=900)


def test_a_new_users_inductor_finding_in_fn_reduces_to_a_script_that_fails(tmp_path):
    # tests/miscompilations/bug_argmin_transposed_add.py as a plain function called fn: the
    # reported bug (minimal.py died in ``fn = fn`` and reduce said "fails (exit 1)").
    (tmp_path / "f.py").write_text(textwrap.dedent(program("fn")))
    oracle = eqrewrite("oracle", "f.py", "--reproducers", "R", cwd=tmp_path)
    assert oracle.returncode == 1 and "compiler-bug" in oracle.stdout, oracle.stderr
    reduced = eqrewrite("reduce", "R/repro_f_py_fn", "--max-tests", "40", cwd=tmp_path)
    assert reduced.returncode == 0, reduced.stdout + reduced.stderr
    assert "  minimal.py: fails (exit 1)" in reduced.stdout.splitlines()
    script = tmp_path / "R" / "repro_f_py_fn" / "minimal.py"
    done = subprocess.run([sys.executable, str(script)], cwd=script.parent,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{DIFFERS}: Scalars are not equal!" in done.stderr
    assert "Traceback" not in done.stderr
