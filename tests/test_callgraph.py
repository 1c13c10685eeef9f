"""The ``traced`` scope: a static call graph across files, and ``--scope traced:FILE``.

A small package shaped like Hugging Face's: an attention layer that reaches a plain function
in another module through a registry object, a forward wrapped by a decorator from a
utilities module, a loss taken from a module-level dict through a property, a cache object
annotated by its base class, a function registered by a decorator, ``functools.partial``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from click.testing import CliRunner
from eqrewrite.rewriter.api import function_scopes, traced_functions
from eqrewrite.rewriter.cli import main

FILES = {
    "pkg/__init__.py": "",
    "pkg/utils/__init__.py": '''
        import importlib


        def __getattr__(name):  # a lazy package: names live in submodules
            return getattr(importlib.import_module(__name__ + ".generic"), name)
    ''',
    "pkg/utils/generic.py": '''
        import functools
        import logging
        logger = logging.getLogger(__name__)

        def check_inputs(func):
            @functools.wraps(func)
            def wrapper(self, *args, **kwargs):
                logger.warning_once("wrapper runs traced")
                return func(self, *args, **kwargs)
            return wrapper

        def never_called():
            logger.warning("not traced")
    ''',
    "pkg/integrations/__init__.py": "",
    "pkg/integrations/sdpa.py": '''
        import logging
        logger = logging.getLogger(__name__)

        def sdpa_forward(module, q):
            logger.warning_once("sdpa")
            return q
    ''',
    "pkg/modeling_utils.py": '''
        from .integrations.sdpa import sdpa_forward
        from .loss import LOSSES

        class Interface:
            _mapping = {"sdpa": sdpa_forward}
            def __getitem__(self, key):
                return self._mapping[key]

        ALL_ATTENTION = Interface()

        class PreTrained:
            @property
            def loss_function(self):
                return LOSSES["lm"]
    ''',
    "pkg/loss.py": '''
        import functools

        def lm_loss(logits, labels):
            return logits

        def _scaled(logits, labels, scale):
            return logits * scale

        LOSSES = {"lm": lm_loss, "scaled": functools.partial(_scaled, scale=2.0)}
        ACTIVATIONS = {}

        def register(name):
            def store(fn):
                ACTIVATIONS[name] = fn
                return fn
            return store

        @register("gelu")
        def gelu(x):
            return x

        @register("unused")
        def other(x):
            return x
    ''',
    "pkg/cache.py": '''
        class Cache:
            def update(self, k):
                return k

        class DynamicCache(Cache):
            def update(self, k):
                return k
            def unrelated(self):
                return None
    ''',
    "pkg/model.py": '''
        import torch
        from .cache import Cache
        from .loss import ACTIVATIONS
        from .modeling_utils import ALL_ATTENTION, PreTrained
        from .utils import check_inputs

        class Attention(torch.nn.Module):
            def forward(self, q, cache: Cache):
                cache.update(q)
                act = ACTIVATIONS["gelu"]
                return ALL_ATTENTION["sdpa"](self, act(q))

        class Model(PreTrained, torch.nn.Module):
            @check_inputs
            def forward(self, q, labels):
                return self.loss_function(q, labels)

        def helper_not_called():
            return 1
    ''',
}


def write_package(root: Path, files: dict[str, str] = FILES) -> list[str]:
    paths = []
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        paths.append(str(path))
    return paths


def test_traced_follows_calls_across_files(tmp_path):
    traced = traced_functions(write_package(tmp_path), jobs=1)
    names = {(Path(p).relative_to(tmp_path).as_posix(), n) for p, ns in traced.items()
             for n in ns}
    expected = {
        ("pkg/model.py", "Attention.forward"),
        ("pkg/model.py", "Model.forward"),
        ("pkg/integrations/sdpa.py", "sdpa_forward"),  # registry object
        ("pkg/modeling_utils.py", "Interface.__getitem__"),
        ("pkg/modeling_utils.py", "PreTrained.loss_function"),  # property on self
        ("pkg/loss.py", "lm_loss"),  # dict literal
        ("pkg/loss.py", "_scaled"),  # functools.partial in the dict
        ("pkg/loss.py", "gelu"),  # filled by a decorator
        ("pkg/utils/generic.py", "check_inputs.<locals>.wrapper"),  # decorator's wrapper
        ("pkg/cache.py", "Cache.update"),  # annotated object ...
        ("pkg/cache.py", "DynamicCache.update"),  # ... of any subclass
    }
    assert expected <= names
    assert not names & {("pkg/utils/generic.py", "never_called"),
                        ("pkg/model.py", "helper_not_called"),
                        ("pkg/cache.py", "DynamicCache.unrelated")}


def test_default_command_rewrites_the_traced_helpers(tmp_path):
    write_package(tmp_path)
    result = CliRunner().invoke(
        main, [str(tmp_path / "pkg"), "--rules", "graphbreaks", "--no-cache", "-j", "1"])
    assert result.exit_code == 0, result.output
    assert "_eqrw_log(__name__, 'warning_once', 'sdpa'" in (
        tmp_path / "pkg/integrations/sdpa.py").read_text()
    generic = (tmp_path / "pkg/utils/generic.py").read_text()
    assert "_eqrw_log(__name__, 'warning_once', 'wrapper runs traced'" in generic
    assert 'logger.warning("not traced")' in generic


def test_profile_scope_restricts_to_the_listed_functions(tmp_path):
    paths = write_package(tmp_path)
    profile = tmp_path / "traced.txt"
    profile.write_text("# recorded\npkg/utils/generic.py:never_called\n")
    scopes = function_scopes(paths, {"profiled"}, [str(profile)])
    assert list(scopes["profiled"].values()) == [frozenset({"never_called"})]
    result = CliRunner().invoke(
        main, [str(tmp_path / "pkg"), "--rules", "graphbreaks", "--no-cache", "-j", "1",
               "--scope", f"traced:{profile}"])
    assert result.exit_code == 0, result.output
    generic = (tmp_path / "pkg/utils/generic.py").read_text()
    assert "_eqrw_log(__name__, 'warning', 'not traced'" in generic
    assert 'logger.warning_once("wrapper runs traced")' in generic  # not listed: untouched
    assert 'logger.warning_once("sdpa")' in (tmp_path / "pkg/integrations/sdpa.py").read_text()


RECORD = '''
import logging
import sys
import torch
logging.Logger.warning_once = logging.Logger.warning  # as Hugging Face patches it in
sys.path.insert(0, {root!r})
from eqrewrite.oracle.traced import record_traced
from pkg.model import Attention
from pkg.cache import DynamicCache
with record_traced() as traced:
    torch.compile(Attention(), backend="eager")(torch.ones(2), DynamicCache())
traced.write({profile!r})
'''


def test_recorded_profile_drives_the_rewrite(tmp_path):
    import subprocess
    import sys

    write_package(tmp_path)
    profile = tmp_path / "profile.txt"
    subprocess.run([sys.executable, "-c", RECORD.format(root=str(tmp_path),
                                                        profile=str(profile))],
                   check=True, capture_output=True, text=True, timeout=300)
    entries = set(profile.read_text().splitlines()[1:])
    assert {"pkg/model.py:Attention.forward", "pkg/integrations/sdpa.py:sdpa_forward",
            "pkg/loss.py:gelu", "pkg/cache.py:DynamicCache.update"} <= entries
    assert not any("check_inputs" in e or "lm_loss" in e for e in entries)  # not run
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in (tmp_path / "pkg").rglob("*.py"):
        target = copy / path.relative_to(tmp_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text())
    result = CliRunner().invoke(main, [str(copy / "pkg"), "--rules", "graphbreaks",
                                       "--no-cache", "-j", "1", "--scope",
                                       f"traced:{profile}"])
    assert result.exit_code == 0, result.output
    assert "_eqrw_log(" in (copy / "pkg/integrations/sdpa.py").read_text()
    assert "_eqrw_log(" not in (copy / "pkg/utils/generic.py").read_text()


def test_traced_functions_called_untraced_behave_as_before(tmp_path, caplog, monkeypatch):
    """A function in the traced scope may also run outside torch.compile: its helpers take
    the original path there, so the rewrite changes nothing for such callers."""
    import importlib
    import logging
    import sys

    monkeypatch.setattr(logging.Logger, "warning_once", logging.Logger.warning, raising=False)
    write_package(tmp_path)
    result = CliRunner().invoke(main, [str(tmp_path / "pkg"), "--rules", "graphbreaks",
                                       "--no-cache", "-j", "1"])
    assert result.exit_code == 0, result.output
    sys.path.insert(0, str(tmp_path))
    try:
        sdpa = importlib.import_module("pkg.integrations.sdpa")
        with caplog.at_level(logging.WARNING):
            assert sdpa.sdpa_forward(None, 3) == 3
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
            del sys.modules[name]
    assert "_eqrw_log(" in (tmp_path / "pkg/integrations/sdpa.py").read_text()
    assert [(r.name, r.levelname, r.getMessage(), r.funcName) for r in caplog.records] == [
        ("pkg.integrations.sdpa", "WARNING", "sdpa", "sdpa_forward")]


def test_a_summary_keeps_only_the_names_its_module_can_resolve():
    from eqrewrite.rewriter.analysis.modulesummary import summarize

    text = textwrap.dedent('''
        import torch
        from .layers import Norm
        TABLE = {}

        def f(hidden: torch.Tensor, scale: float):
            out = Norm()(hidden) * scale
            TABLE[out] = len(hidden)
            local = out.sum()
            return local, math.pi
    ''')
    [function] = summarize("pkg/model.py", text, "pkg.model").functions.values()
    assert function.references == {"Norm", "TABLE", "torch", "torch.Tensor"}
    assert function.built == {"Norm"} and function.annotations == {"torch", "torch.Tensor"}
    assert function.stores == {"TABLE"}
    # A package resolves more: a name it does not bind may be one of its submodules.
    [package] = summarize("pkg/__init__.py", text, "pkg").functions.values()
    assert {"out", "local", "math.pi", "len"} <= package.references


def test_a_package_function_reaches_a_submodule_it_does_not_import(tmp_path):
    files = {"pkg/__init__.py": '''
                 import torch

                 class Model(torch.nn.Module):
                     def forward(self, x):
                         return helpers.scale(x)
             ''',
             "pkg/helpers.py": '''
                 def scale(x):
                     return x * 2
             '''}
    traced = traced_functions(write_package(tmp_path, files), jobs=1)
    assert traced[str(tmp_path / "pkg/helpers.py")] == frozenset({"scale"})
