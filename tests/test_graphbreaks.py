"""The graph-break pack on a corpus of real-world-shaped modules, executed for real.

For every file in ``tests/graphbreak_corpus``: the rewriter's decision matches the file's
``EXPECTED``; graph breaks are counted three ways (explain's graphs, Dynamo's break
events, whether ``fullgraph=True`` compiles) before and after, and every rewritten file
compiles whole; outputs, gradients and everything printed, logged or warned (text and
order) are equal between the original run eagerly and the rewritten run both eagerly
(exactly) and compiled (within tolerance); a few run through Inductor too.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import sys
import warnings
from pathlib import Path

import pytest
import torch
from eqrewrite.oracle.harness.targets import find_target
from eqrewrite.oracle.judging.compare import CompareOptions, compare
from eqrewrite.oracle.judging.graphbreaks import count_graph_breaks
from eqrewrite.oracle.judging.observe import ProgramStream, is_compiler_warning
from eqrewrite.oracle.judging.settings import TargetForm
from eqrewrite.rewriter.matching.rules import load_pack
from eqrewrite.rewriter.rewriting.engine import RewriteOptions, rewrite_source, select_rules

CORPUS = Path(__file__).parent / "graphbreak_corpus"
FILES = sorted(p.name for p in CORPUS.glob("*.py"))
INDUCTOR = {"select_clamp_scale.py", "defer_print_then_inplace.py", "masked_mean_empty.py",
            "moe_expert_hit_loop.py"}
# Functions in the corpus are what a compiled model would call; nothing in their file
# marks them as traced, so rules run everywhere here (their helpers are eager-exact).
EVERYWHERE = RewriteOptions(scope=frozenset({"everywhere"}))
RULES = select_rules(load_pack("graphbreaks").rules, EVERYWHERE)
TOLERANCE = CompareOptions(scale=10.0)


@pytest.fixture(scope="module")
def rewritten_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("rewritten")
    for name in FILES:
        text = (CORPUS / name).read_text()
        (folder / name).write_text(rewrite_source(text, RULES, EVERYWHERE).text)
    return folder


def load_module(path: Path, name: str):
    """Import ``path`` as a fresh module called ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def build(path: Path, tag: str, state: dict | None = None):
    """``(callable, inputs, module object)`` for the file's target, seeded like the oracle."""
    module = load_module(path, f"gb_{tag}_{path.stem}")
    target = find_target(path.parent, path)
    torch.manual_seed(0)
    fn = getattr(module, target.attribute)
    if target.form is TargetForm.MODULE:
        fn = fn(*(module.get_init_inputs() if target.has_init_inputs else []))
        if state is not None:
            fn.load_state_dict(state)
        fn.eval()
    torch.manual_seed(0)
    return fn, list(module.get_inputs()), module


class Captured:
    """Everything a run printed, logged or warned, in order."""

    def __init__(self, logger_name: str):
        self.logger_name = logger_name
        self.events: list[tuple[str, str]] = []

    @contextlib.contextmanager
    def watch(self):
        # torch's own log lines (an Inductor compile may log) are not the program's output.
        out, err = ProgramStream([]), ProgramStream([])
        handler = _Recorder(self)
        root = logging.getLogger()
        root.addHandler(handler)
        old_level = root.level
        root.setLevel(logging.DEBUG)
        if hasattr(logging.Logger, "warning_once"):  # Hugging Face style: once per process
            logging.Logger.warning_once.cache_clear()
        try:
            with warnings.catch_warnings(record=True) as caught, \
                    contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                warnings.simplefilter("always")
                yield
        finally:
            root.removeHandler(handler)
            root.setLevel(old_level)
        self.events += [("warning", f"{w.category.__name__}: {w.message}") for w in caught
                        if not is_compiler_warning(w)]
        self.events += [("stdout", out.getvalue()), ("stderr", err.getvalue())]


class _Recorder(logging.Handler):
    def __init__(self, captured: Captured):
        super().__init__(logging.DEBUG)
        self.captured = captured

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == self.captured.logger_name:
            self.captured.events.append(("log", f"{record.levelname}: {record.getMessage()}"))


def run(fn, inputs, logger_name: str, grads: bool = True):
    """Call once; return (output, parameter gradients, captured side effects)."""
    captured = Captured(logger_name)
    with captured.watch():
        output = fn(*inputs)
    gradients = {}
    tensors = [t for t in _tensors(output) if t.is_floating_point() and t.requires_grad]
    if grads and tensors and isinstance(fn, torch.nn.Module | torch._dynamo.OptimizedModule):
        generator = torch.Generator().manual_seed(1)
        sum((t * torch.randn(t.shape, generator=generator)).sum() for t in tensors).backward()
        gradients = {n: p.grad.clone() for n, p in fn.named_parameters() if p.grad is not None}
    return output, gradients, captured.events


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _tensors(item)


def expected_decision(path: Path) -> str:
    return _declared(path)["EXPECTED"]


def gradients_on(path: Path) -> bool:
    """Whether the file runs with gradients (``GRADIENTS = False``: an inference-only
    rewrite, run and counted under ``torch.no_grad()``)."""
    return _declared(path).get("GRADIENTS", True)


def _declared(path: Path) -> dict:
    namespace: dict = {}
    exec(compile("\n".join(line for line in path.read_text().splitlines()
                           if line.startswith(("EXPECTED", "GRADIENTS", "BREAKS_AFTER"))),
                 str(path), "exec"),
         namespace)
    return namespace


def test_corpus_is_large_enough():
    decisions = [expected_decision(CORPUS / name) for name in FILES]
    assert decisions.count("rewrite") >= 25 and decisions.count("unchanged") >= 8


@pytest.mark.parametrize("name", FILES)
def test_rewrite_decision(name, rewritten_dir):
    changed = (rewritten_dir / name).read_text() != (CORPUS / name).read_text()
    assert changed == (expected_decision(CORPUS / name) == "rewrite")


@pytest.mark.parametrize("name", FILES)
def test_breaks_removed_and_behaviour_kept(name, rewritten_dir):
    with torch.set_grad_enabled(gradients_on(CORPUS / name)):
        _check_breaks_and_behaviour(name, rewritten_dir)


def _check_breaks_and_behaviour(name: str, rewritten_dir: Path) -> None:
    original_path, rewritten_path = CORPUS / name, rewritten_dir / name
    fn, inputs, module = build(original_path, "original")
    state = ({k: v.clone() for k, v in fn.state_dict().items()}
             if isinstance(fn, torch.nn.Module) else None)
    expected, expected_grads, expected_events = run(fn, inputs, module.__name__)

    new_fn, new_inputs, new_module = build(rewritten_path, "rewritten", state)
    got, got_grads, got_events = run(new_fn, new_inputs, new_module.__name__)
    # Eagerly, the rewrite is exact: same values, same text in the same order.
    assert compare(expected, got) == [] and compare(expected_grads, got_grads) == []
    assert got_events == expected_events

    before = count_graph_breaks(*build(original_path, "original_b", state)[:2], backend="eager")
    after = count_graph_breaks(*build(rewritten_path, "rewritten_b", state)[:2],
                               backend="eager")
    if expected_decision(original_path) == "unchanged":
        assert after.breaks == before.breaks
        return
    assert before.breaks >= 1 or before.graph_count >= 2
    # A rewrite that folds several reads of the data into one keeps that one break.
    left = _declared(original_path).get("BREAKS_AFTER", 0)
    assert (after.breaks, after.fullgraph_ok) == (left, left == 0), after.reasons
    assert after.graph_count <= left + 1
    assert after.breaks < before.breaks or not left

    backends = ["aot_eager"] + (["inductor"] if name in INDUCTOR else [])
    for backend in backends:
        torch._dynamo.reset()
        compiled_fn, compiled_inputs, compiled_module = build(rewritten_path, "compiled", state)
        compiled = torch.compile(compiled_fn, backend=backend, fullgraph=left == 0)
        got, got_grads, got_events = run(compiled, compiled_inputs, compiled_module.__name__)
        assert compare(expected, got, TOLERANCE) == [], backend
        assert compare(expected_grads, _unwrap(got_grads), TOLERANCE) == [], backend
        assert got_events == expected_events, backend


def _unwrap(gradients: dict) -> dict:
    # Compiled modules name their parameters "_orig_mod.<name>".
    return {key.removeprefix("_orig_mod."): value for key, value in gradients.items()}
