"""The import hook (``eqrewrite run``, ``install_import_hook``): each case in a fresh
interpreter, over a small package written to a temporary folder."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

MODEL = '''\
"""A model whose forward breaks torch.compile graphs twice."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(8, 8)
        self.ratio = 0.5
        self.alpha = 0.1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        delta = self.fc(x)
        print("delta norm:", delta.detach().norm())
        if delta.abs().mean() > self.ratio * x.abs().mean():
            return x
        else:
            return x + self.alpha * delta

    def explode(self):
        value = 1
        raise ValueError(f"boom {value}")
'''

MAIN = '''\
import sys

import torch
import torch.nn as nn


class Echo(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        print("echo", x.sum())
        return x * 2


if __name__ == "__main__":
    Echo()(torch.ones(2))
    print("helpers", "_eqrw_print" in globals(), "args", sys.argv[1:])
    sys.exit(3)
'''

# Prints one line "RESULT {json}": the graph breaks, eager and compiled outputs, helpers.
SCRIPT = '''\
import json
import sys

import torch

if sys.argv[1:] == ["api"]:
    from eqrewrite.rewriter.api import install_import_hook

    install_import_hook(["fakepkg"], rules=["graphbreaks"])
import fakepkg.model as model

m = model.Model()
x = torch.randn(2, 8, generator=torch.Generator().manual_seed(1))
with torch.no_grad():
    eager = m(x)
    compiled = torch.compile(m, backend="eager")(x)
    breaks = torch._dynamo.explain(m)(x).graph_break_count
print("RESULT " + json.dumps({
    "breaks": breaks, "eager": eager.tolist(), "compiled": compiled.tolist(),
    "helpers": sorted(k for k in vars(model) if k.startswith("_eqrw_"))}))
'''


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """``fakepkg`` under ``tmp_path/site`` (returned): a model module and a runnable one."""
    root = tmp_path / "site" / "fakepkg"
    root.mkdir(parents=True)
    (root / "__init__.py").write_text('"""A fake package."""\n')
    (root / "model.py").write_text(MODEL)
    (root / "main.py").write_text(MAIN)
    return root.parent


def _env(tmp_path: Path, site: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(site), XDG_CACHE_HOME=str(tmp_path / "cache"),
               TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))
    return env


def _python(tmp_path: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=_env(tmp_path, site),
                          capture_output=True, text=True, timeout=300)


def _eqrewrite_run(tmp_path: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _python(tmp_path, site, "-m", "eqrewrite.rewriter", "run", "--package", "fakepkg",
                   *args)


def _result(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    return json.loads(lines[-1].removeprefix("RESULT "))


def _script(tmp_path: Path, text: str, name: str = "script.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_the_hook_rewrites_the_package_and_its_breaks_go(tmp_path, package):
    script = _script(tmp_path, SCRIPT)
    plain = _result(_python(tmp_path, package, str(script)))
    hooked = _result(_python(tmp_path, package, str(script), "api"))
    assert plain["breaks"] > 0 and plain["helpers"] == []
    assert hooked["breaks"] == 0
    assert "_eqrw_print" in hooked["helpers"] and "_eqrw_where" in hooked["helpers"]
    assert hooked["eager"] == plain["eager"] and hooked["compiled"] == plain["eager"]


def test_the_hook_makes_the_edits_the_command_line_makes(tmp_path, package):
    # The same scopes, the same rules: what `eqrewrite PACKAGE_DIR` would rewrite.
    report = tmp_path / "report.json"
    script = _script(tmp_path, "import fakepkg.model\n")
    assert _eqrewrite_run(tmp_path, package, "--report", str(report), str(script)
                          ).returncode == 0
    done = _python(tmp_path, package, "-m", "eqrewrite.rewriter", str(package / "fakepkg"),
                   "--rules", "graphbreaks", "--check", "--format", "json", "--no-cache")
    expected = sorted((Path(e["file"]).name, e["rule"], e["start"]["line"])
                      for e in json.loads(done.stdout)["edits"]
                      if Path(e["file"]).name == "model.py")  # the module imported
    found = sorted((Path(e["file"]).name, e["rule"], e["line"])
                   for e in json.loads(report.read_text())["edits"])
    assert found == expected and len(found) == 2


def test_a_second_run_takes_every_module_from_the_cache(tmp_path, package):
    script = _script(tmp_path, SCRIPT)
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    one = _result(_eqrewrite_run(tmp_path, package, "--report", str(first), str(script)))
    two = _result(_eqrewrite_run(tmp_path, package, "--report", str(second), str(script)))
    cold, warm = json.loads(first.read_text()), json.loads(second.read_text())
    assert cold["summary"]["cache_misses"] == 2 and cold["summary"]["cache_hits"] == 0
    assert warm["summary"]["cache_misses"] == 0 and warm["summary"]["cache_hits"] == 2
    assert all(m["cached"] for m in warm["modules"])
    assert warm["edits"] == cold["edits"] and warm["summary"]["rewritten"] == 1
    assert one == two and two["breaks"] == 0


def test_tracebacks_and_getsource_show_the_original_lines(tmp_path, package):
    report = tmp_path / "report.json"
    script = _script(tmp_path, '''
        import inspect, json, traceback
        import fakepkg.model as model

        try:
            model.Model().explode()
        except ValueError as error:
            frame = traceback.extract_tb(error.__traceback__)[-1]
        print("RESULT " + json.dumps({
            "file": frame.filename, "line": frame.lineno, "text": frame.line,
            "source": inspect.getsource(model.Model.explode),
            "first": model.Model.explode.__code__.co_firstlineno,
            "helpers": "_eqrw_where" in vars(model)}))
    ''')
    found = _result(_eqrewrite_run(tmp_path, package, "--report", str(report), str(script)))
    lines = MODEL.splitlines()
    assert found["helpers"]  # the module was rewritten
    assert found["file"] == str(package / "fakepkg" / "model.py")
    assert found["line"] == lines.index('        raise ValueError(f"boom {value}")') + 1
    assert found["text"] == 'raise ValueError(f"boom {value}")'
    first = lines.index("    def explode(self):")
    assert found["first"] == first + 1
    assert found["source"] == "\n".join(lines[first:first + 3]) + "\n"
    # The if/else became one line: its place is reported as approximate.
    [module] = [m for m in json.loads(report.read_text())["modules"]
                if m["module"] == "fakepkg.model"]
    start = lines.index("        if delta.abs().mean() > self.ratio * x.abs().mean():") + 1
    assert module["lines"] == "approximate"
    assert any(a <= start <= b for a, b in module["approximate_lines"])


def test_a_package_imported_before_the_hook_is_reported_missed(tmp_path, package):
    report = tmp_path / "report.json"
    script = _script(tmp_path, f'''
        import fakepkg.model as model
        from eqrewrite.rewriter.api import install_import_hook

        install_import_hook(["fakepkg"], report={str(report)!r})
        import fakepkg.model
        print("RESULT " + str("_eqrw_where" in vars(model)).lower())
    ''')
    done = _python(tmp_path, package, str(script))
    assert _result(done) is False
    assert "imported before the hook was installed" in done.stderr
    assert "fakepkg.model" in done.stderr
    written = json.loads(report.read_text())
    assert {m["module"] for m in written["missed"]} == {"fakepkg", "fakepkg.model"}
    assert written["summary"]["missed"] == 2 and written["summary"]["rewritten"] == 0


def test_a_module_that_does_not_parse_raises_its_syntax_error(tmp_path, package):
    broken = package / "fakepkg" / "broken.py"
    broken.write_text("import torch\n\ndef f(:\n    pass\n")
    report = tmp_path / "report.json"
    script = _script(tmp_path, '''
        import json
        try:
            import fakepkg.broken
        except SyntaxError as error:
            print("RESULT " + json.dumps([error.filename, error.lineno]))
    ''')
    found = _result(_eqrewrite_run(tmp_path, package, "--report", str(report), str(script)))
    assert found == [str(broken), 3]
    [module] = json.loads(report.read_text())["modules"][1:]
    assert (module["module"], module["status"], module["line"]) == ("fakepkg.broken", "error", 3)


def test_a_module_the_rewrite_fails_on_is_loaded_unmodified(tmp_path, package):
    script = _script(tmp_path, '''
        import torch
        from eqrewrite.rewriter import hook
        from eqrewrite.rewriter.rewriting.engine import RewriteError

        def failing(context, source, path):
            raise RewriteError("cannot rewrite this", 17)

        hook.rewrite_file = failing
        hook.install_import_hook(["fakepkg"])
        import fakepkg.model as model
        out = model.Model()(torch.ones(2, 8))
        print("RESULT " + str("_eqrw_where" in vars(model)).lower())
    ''')
    done = _python(tmp_path, package, str(script))
    assert _result(done) is False  # the original code ran
    assert f"{package / 'fakepkg' / 'model.py'}:17: cannot rewrite" in done.stderr
    assert "loaded unmodified" in done.stderr


def test_the_package_folder_stays_byte_identical(tmp_path, package):
    def tree() -> dict[str, str]:
        return {str(p.relative_to(package)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(package.rglob("*")) if p.is_file()}

    before = tree()
    script = _script(tmp_path, SCRIPT)
    assert _result(_eqrewrite_run(tmp_path, package, str(script)))["breaks"] == 0
    assert _eqrewrite_run(tmp_path, package, str(script)).returncode == 0  # from the cache
    assert tree() == before  # no __pycache__ either, though bytecode writing is on


def test_run_m_runs_a_module_with_its_arguments_and_exit_status(tmp_path, package):
    done = _eqrewrite_run(tmp_path, package, "-m", "fakepkg.main", "--flag", "value")
    assert done.returncode == 3, done.stderr
    assert "helpers True args ['--flag', 'value']" in done.stdout
    assert "echo tensor(2.)" in done.stdout


def test_run_refuses_a_package_that_is_not_installed(tmp_path, package):
    script = _script(tmp_path, "print('ran')\n")
    done = _python(tmp_path, package, "-m", "eqrewrite.rewriter", "run", "--package",
                   "nosuchpkg", str(script))
    assert done.returncode == 2 and "ran" not in done.stdout
    assert "no installed package or module 'nosuchpkg'" in done.stderr


HOOK_PARTS = ("modules", "helpers")  # the hook's cache folders of per-module files


def test_cache_entries_unused_for_a_month_are_pruned_at_most_once_a_day(tmp_path):
    from eqrewrite.rewriter.running.cache import DAY, UNUSED_DAYS, prune

    folder = tmp_path / "hook"
    (folder / "modules").mkdir(parents=True)
    (folder / "helpers").mkdir()
    now = time.time()
    old, fresh = (folder / "modules" / f"module-{age}.marshal" for age in ("old", "new"))
    helper = folder / "helpers" / "helpers-old.py"
    graph = folder / "callgraph-0123456789abcdef0123.json"  # each build keeps its own
    other = folder / "not-a-cache-entry.txt"
    for path, age in ((old, UNUSED_DAYS + 1), (fresh, UNUSED_DAYS - 1), (helper, UNUSED_DAYS + 5),
                      (graph, UNUSED_DAYS + 1), (other, UNUSED_DAYS + 1)):
        path.write_bytes(b"x")
        os.utime(path, (now - age * DAY, now - age * DAY))
    assert prune(folder, HOOK_PARTS, now) == 3
    assert not old.exists() and not helper.exists() and not graph.exists()
    assert fresh.exists() and other.exists()
    os.utime(fresh, (now - 2 * UNUSED_DAYS * DAY, now - 2 * UNUSED_DAYS * DAY))
    # Pruned less than a day ago: not again.
    assert prune(folder, HOOK_PARTS, now + DAY / 2) == 0 and fresh.exists()
    assert prune(folder, HOOK_PARTS, now + DAY + 1) == 1 and not fresh.exists()


def test_a_module_loaded_from_the_cache_is_marked_used(tmp_path, package):
    from eqrewrite.rewriter.running.cache import DAY, UNUSED_DAYS, prune

    script = _script(tmp_path, SCRIPT)
    _result(_eqrewrite_run(tmp_path, package, str(script)))
    entries = list((tmp_path / "cache").rglob("module-*.marshal"))
    assert len(entries) == 2
    entries += list((tmp_path / "cache").rglob("callgraph-*"))  # the call graph's files too
    assert len(entries) == 4
    long_ago = time.time() - 2 * UNUSED_DAYS * DAY
    for entry in entries:
        os.utime(entry, (long_ago, long_ago))
    _result(_eqrewrite_run(tmp_path, package, str(script)))  # both from the cache
    assert prune(entries[0].parent.parent, HOOK_PARTS, time.time() + 2 * DAY) == 0  # all were used
    assert all(entry.exists() for entry in entries)


def test_unsafe_rules_run_only_when_asked(tmp_path, package):
    # moe-grouped-split is opt-in: `eqrewrite run` applies it with --unsafe, as the rewrite
    # command does, and says so in its report.
    import yaml
    from eqrewrite.rewriter.api import packaged_packs

    pack = yaml.safe_load(packaged_packs()["graphbreaks.yaml"].read_text())
    rule = next(r for r in pack["rules"] if r["id"] == "moe-grouped-split")
    assert rule["safety"] == "unsafe"
    (package / "fakepkg" / "experts.py").write_text(rule["examples"][0]["before"])
    script = _script(tmp_path, "import fakepkg.experts\n")
    rules = {}
    for flags in ((), ("--unsafe",)):
        report = tmp_path / f"report{len(flags)}.json"
        done = _eqrewrite_run(tmp_path, package, *flags, "--report", str(report), str(script))
        assert done.returncode == 0, done.stderr
        recorded = json.loads(report.read_text())
        assert recorded["unsafe"] is bool(flags)
        rules[bool(flags)] = {e["rule"] for e in recorded["edits"]}
    assert "moe-grouped-split" not in rules[False]
    assert "moe-grouped-split" in rules[True]
