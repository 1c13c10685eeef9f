"""How generated programs are compiled: the per-seed compile settings (``--compile-settings
varied``), the switch back to fixed settings, and that each drawn setting reaches the
compile call, the oracle's runs and the reproducers."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from eqrewrite.oracle.formats import Recipe
from eqrewrite.oracle.generate import GenConfig, generate
from eqrewrite.oracle.generate.compiling import SWITCHES, compile_settings
from eqrewrite.oracle.harness.targets import find_target
from eqrewrite.oracle.judging.protocol import RunRequest, Variant
from eqrewrite.oracle.judging.settings import CompileSettings, TargetError
from eqrewrite.oracle.judging.worker import Session
from eqrewrite.oracle.minimising.standalone import minimal_script
from eqrewrite.rewriter.cli import main

FIXED = GenConfig(compile_settings="fixed")
HEADER = re.compile(r"^# eqrewrite-oracle:.*\n", re.MULTILINE)


def test_varied_settings_are_drawn_per_seed_into_the_header():
    for seed in range(12):
        program = generate(seed)
        assert generate(seed).source == program.source
        drawn = compile_settings(seed)
        assert drawn.items() <= program.settings.items()
        header = HEADER.search(program.source)
        assert (header is not None) == bool(program.settings)
        for key in drawn:
            assert header is not None and f" {key}=" in header.group(0)


def test_fixed_settings_give_the_same_code_without_compile_settings():
    # The code of a seed is drawn from the program's own Random: only the header differs,
    # and the fixed header holds only what the program's ops need (as before the variation).
    varied_somewhere = False
    for seed in range(12):
        fixed, varied = generate(seed, FIXED), generate(seed)
        assert HEADER.sub("", fixed.source) == HEADER.sub("", varied.source)
        assert set(fixed.settings) <= {"inductor.fallback_random", "dynamo.capture_scalar_outputs"}
        assert fixed.settings.items() <= varied.settings.items()
        varied_somewhere |= fixed.source != varied.source
    assert varied_somewhere
    assert compile_settings(5, "fixed") == {}


def test_every_drawn_setting_occurs_and_parses_into_compile_settings():
    draws = [compile_settings(seed) for seed in range(300)]
    seen = {(key, value) for draw in draws for key, value in draw.items()}
    for key, value, _ in SWITCHES:
        assert (key, value) in seen, key
    assert {("dynamic", True), ("dynamic", False), ("inference", True),
            ("inductor.freezing", True)} <= seen
    assert not any(d.get("inductor.freezing") and not d.get("inference") for d in draws)
    assert any(not d for d in draws)  # some seeds keep the defaults
    for draw in draws[:40]:
        settings = CompileSettings().merged(draw)
        assert settings.inference == bool(draw.get("inference"))


def test_every_drawn_switch_is_a_real_torch_config_switch():
    from eqrewrite.oracle.api import check_switches

    for key, value, _ in SWITCHES:
        check_switches(CompileSettings().merged({key: value}), Path.cwd())  # raises if unknown


def test_unknown_compile_settings_mode_is_an_error():
    with pytest.raises(ValueError, match="compile_settings must be one of"):
        GenConfig(compile_settings="sometimes")
    with pytest.raises(TargetError, match="inference must be true or false"):
        CompileSettings().merged({"inference": "maybe"})
    result = CliRunner().invoke(main, ["gen", "--compile-settings", "sometimes", "--stats"])
    assert result.exit_code == 2 and "sometimes" in result.output


def test_gen_command_fixed_flag_writes_the_fixed_programs(tmp_path):
    result = CliRunner().invoke(main, ["gen", "--seed", "3", "--count", "2", "-o",
                                       str(tmp_path), "--compile-settings", "fixed"])
    assert result.exit_code == 0, result.output
    for seed in (3, 4):
        text = (tmp_path / f"gen_{seed:06d}.py").read_text()
        assert text == generate(seed, FIXED).source
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["config"]["compile_settings"] == "fixed"


def test_campaign_job_config_defaults_to_fixed_without_the_key():
    # campaign.json of campaigns before the variation has no key: they resume unchanged.
    from eqrewrite.oracle.campaign.job import _gen_config, gen_record

    assert _gen_config({})["compile_settings"] == "fixed"
    assert _gen_config(gen_record((5, 12), None, ()))["compile_settings"] == "varied"
    assert "compile_settings" not in gen_record((5, 12), None, (), "fixed")


# -- the settings reach the compile call and the runs -------------------------------------------

PROBE = '''
"""A backend that records how Dynamo handed it the graph."""
import json

import torch


def record(gm, example_inputs):
    import torch._inductor.config as inductor_config

    symbolic = False
    for node in gm.graph.nodes:
        value = node.meta.get("example_value")
        if node.op == "placeholder" and (isinstance(value, torch.SymInt) or (
                isinstance(value, torch.Tensor)
                and any(isinstance(d, torch.SymInt) for d in value.shape))):
            symbolic = True
    with open("seen.json", "w") as seen:
        json.dump({"symbolic": symbolic, "grad": torch.is_grad_enabled(),
                   "simdlen": inductor_config.cpp.simdlen}, seen)
    return gm.forward
'''

PROGRAM = '''
# eqrewrite-oracle: {header}
import torch


def program(x0: torch.Tensor):
    return (x0.sin() * 2).sum(0)


def get_inputs():
    return [torch.randn(4, 3)]
'''


@pytest.fixture
def session_root(tmp_path, monkeypatch):
    """A tree with the probe backend; the session's chdir and sys.path undone afterwards."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "probe_backend.py").write_text(PROBE)
    return tmp_path


def _compiled_run(root: Path, header: str):
    path = root / "prog.py"
    path.write_text(PROGRAM.format(header=f"backend=probe_backend:record {header}"))
    target = find_target(root, path)
    assert target is not None
    settings = CompileSettings().merged(target.settings)
    result = Session({"original": str(root)}).run(
        RunRequest(target, settings, Variant.COMPILED, tree="original"))
    assert result.exception is None and result.failure is None, result
    return result, json.loads((root / "seen.json").read_text())


@pytest.mark.parametrize("dynamic", [True, False])
def test_dynamic_reaches_the_compile_call(session_root, dynamic):
    _, seen = _compiled_run(session_root, f"dynamic={str(dynamic).lower()}")
    assert seen["symbolic"] is dynamic


def test_inference_compiles_and_runs_under_no_grad_without_gradients(session_root):
    result, seen = _compiled_run(session_root, "inference=true inductor.cpp.simdlen=1")
    assert seen == {"symbolic": False, "grad": False, "simdlen": 1}
    assert result.grad_inputs is False and result.observed["grads"] is None
    trained, seen = _compiled_run(session_root, "")
    assert seen["grad"] is True and seen["simdlen"] is None
    assert trained.grad_inputs is True and trained.observed["grads"]["input0"] is not None


def test_the_reproducer_compiles_with_the_recorded_settings(tmp_path):
    settings = CompileSettings(backend="eager", dynamic=True, inference=True,
                               inductor_config=(("cpp.simdlen", 1),))
    script = minimal_script(PROGRAM.format(header="inference=true"),
                            _recipe(settings, grads=False))
    assert "torch.compile(fn, backend='eager', dynamic=True)" in script
    assert "torch.set_grad_enabled(False)" in script
    assert "torch._inductor.config.cpp.simdlen = 1" in script
    assert "under torch.no_grad()" in script.split('"""')[1]
    _assert_runs(script, tmp_path)


def _recipe(settings: CompileSettings, grads: bool) -> Recipe:
    """A standalone reproducer's recipe for PROGRAM's function target."""
    return Recipe(target={"form": "function", "attribute": "program",
                          "inputs": "get_inputs", "has_init_inputs": False},
                  settings=dataclasses.asdict(settings), seed=0, grad_inputs=grads,
                  grads=grads, strict=False, scale=1.0, extra_paths=(), state=None,
                  headline="a test", torch_version=torch.__version__)


def _assert_runs(script: str, folder: Path) -> None:
    path = folder / "minimal.py"
    path.write_text(script)
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


# -- Compiled Autograd ---------------------------------------------------------------------------

COUNTING = '''
"""A backend that counts the graphs it is handed (forward, and a traced backward)."""


def count(gm, example_inputs):
    with open("graphs.txt", "a") as graphs:
        graphs.write(f"{len(gm.graph.nodes)}\\n")
    return gm.forward
'''


def _graphs_and_grads(root: Path, header: str, variant: Variant):
    (root / "counting_backend.py").write_text(COUNTING)
    (root / "graphs.txt").write_text("")
    path = root / "prog.py"
    path.write_text(PROGRAM.format(header=f"backend=counting_backend:count {header}"))
    target = find_target(root, path)
    assert target is not None
    result = Session({"original": str(root)}).run(RunRequest(
        target, CompileSettings().merged(target.settings), variant, tree="original"))
    assert result.exception is None and result.failure is None, result
    return (root / "graphs.txt").read_text().split(), result


def test_compiled_autograd_compiles_the_backward_with_the_runs_backend(session_root):
    # Without the switch the backend sees the forward graph only (backward runs eagerly
    # through its ops); with it, the autograd engine's backward graph too, same gradients.
    plain, eager = _graphs_and_grads(session_root, "", Variant.EAGER)
    assert plain == []
    plain, compiled_run = _graphs_and_grads(session_root, "", Variant.COMPILED)
    assert len(plain) == 1
    traced, with_switch = _graphs_and_grads(session_root, "dynamo.compiled_autograd=true",
                                            Variant.COMPILED)
    assert len(traced) >= 2 and traced[0] == plain[0]
    assert with_switch.breaks is not None and with_switch.breaks.graph_count == 1
    expected = eager.observed["grads"]["input0"]
    for run in (compiled_run, with_switch):
        assert torch.allclose(run.observed["grads"]["input0"], expected)


def test_compiled_autograd_is_drawn_for_programs_with_a_backward_only():
    draws = [compile_settings(seed) for seed in range(300)]
    with_switch = [d for d in draws if d.get("dynamo.compiled_autograd")]
    assert 30 < len(with_switch) < 100
    assert not any(d.get("inference") for d in with_switch)


def test_the_reproducer_calls_backward_compiled_with_compiled_autograd(tmp_path):
    settings = CompileSettings(backend="aot_eager", dynamo_config=(("compiled_autograd", True),))
    script = minimal_script(PROGRAM.format(header="dynamo.compiled_autograd=true"),
                            _recipe(settings, grads=True))
    assert "torch.compile(lambda l: l.backward(), backend='aot_eager')(loss)" in script
    _assert_runs(script, tmp_path)


NESTED = '''
# eqrewrite-oracle: backend=counting_backend:count {header}
import torch

__eqrewrite_target__ = "program"


def helper(x0):
    y = x0.sin()
    print("a graph break in a called function")
    return y.cos()


def program(x0: torch.Tensor):
    return helper(x0 * 2) + 1


def get_inputs():
    return [torch.randn(4, 3)]
'''


@pytest.mark.parametrize(("header", "graphs"), [("", 4), ("dynamo.nested_graph_breaks=true", 2)])
def test_nested_graph_breaks_resume_tracing_in_the_called_function(session_root, header, graphs):
    # Without the switch the break ends the caller's graph too (mul | sin | cos | add); with
    # it Dynamo resumes inside helper: mul+sin, then cos+add.
    (session_root / "counting_backend.py").write_text(COUNTING)
    path = session_root / "nested.py"  # not prog: another test's prog module may be loaded
    path.write_text(NESTED.format(header=header))
    target = find_target(session_root, path)
    assert target is not None
    result = Session({"original": str(session_root)}).run(RunRequest(
        target, CompileSettings().merged(target.settings), Variant.COMPILED, tree="original"))
    assert result.exception is None and result.failure is None, result
    assert len((session_root / "graphs.txt").read_text().split()) == graphs
