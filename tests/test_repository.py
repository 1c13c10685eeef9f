"""Repository invariants: lint, a torch-free rewriter, packaged packs pass their examples."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from eqrewrite.rewriter.matching.rules import load_pack, packaged_packs
from eqrewrite.rewriter.rulebook.examples import check_pack, count_examples

ROOT = Path(__file__).resolve().parents[1]


PACKAGES = {"rewriter": "eqrewrite.rewriter", "oracle": "eqrewrite.oracle"}
# What the oracle (and the benchmarks) may use of the rewriter: its public API and the
# plugin interface the command line offers.
PUBLIC = {"eqrewrite.rewriter.api", "eqrewrite.rewriter.plugins"}
# The helpers' code: modules that import torch, which the rewriter reads as text only.
HELPER_CODE = "eqrewrite.rules.helpers"


def _module_name(path: Path) -> str:
    relative = path.relative_to(ROOT).with_suffix("")
    parts = [PACKAGES[relative.parts[0]], *relative.parts[1:]]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, module: str) -> set[str]:
    """Every module ``path`` imports, anywhere in the file, relative imports resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def _import_graph() -> dict[str, set[str]]:
    return {_module_name(path): _imports(path, _module_name(path))
            for folder in PACKAGES for path in (ROOT / folder).rglob("*.py")}


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for name in graph.get(todo.pop(), ()):
            if name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


def test_rewriter_imports_neither_torch_nor_the_oracle():
    graph = _import_graph()
    rewriter = [m for m in graph if m.startswith("eqrewrite.rewriter")]
    for module in rewriter:
        bad = {n for n in _reachable(graph, module)
               if n.split(".")[0] == "torch" or n.startswith("eqrewrite.oracle")
               or _within(n, (HELPER_CODE,))}
        assert bad == set(), f"{module} reaches {sorted(bad)}"
    # The helper code (data beside the packs, read as text) is real code that imports torch.
    assert "import torch as _eqrw_torch" in (ROOT / "rules" / "helpers" / "shared.py").read_text()


def test_oracle_uses_only_the_rewriters_public_api():
    graph = _import_graph()
    for module in (m for m in graph if m.startswith("eqrewrite.oracle")):
        private = {n for n in graph[module] if n.startswith("eqrewrite.rewriter")
                   and not any(n == p or n.startswith(p + ".") for p in PUBLIC)}
        assert private == set(), f"{module} imports {sorted(private)}"


# The rewriter's layers above its engine: the command line (the composition root), the
# runner and its reports, the public API, the plugin interface, the audit, the typed run
# results. The engine (rules, matching, inference, kinds, application) and the support
# modules below it (sources, files, workers, cache) reach none of them.
ABOVE_THE_ENGINE = tuple(f"eqrewrite.rewriter.{name}" for name in (
    "cli", "__main__", "audit", "running.runner", "running.report", "api", "plugins",
    "running.results", "workspace.worklist", "workspace.discovery", "workspace.config",
    "options",
    "rulebook.docs", "running.progress", "running.formatting", "hook"))


def _within(name: str, modules: tuple[str, ...]) -> bool:
    return any(name == m or name.startswith(m + ".") for m in modules)


def test_the_command_line_is_the_composition_root():
    # Only ``python -m eqrewrite.rewriter`` imports it; the audit command finds the plugin
    # registry in its click context instead.
    graph = _import_graph()
    importers = {m for m, names in graph.items() if "eqrewrite.rewriter.cli" in names}
    assert importers == {"eqrewrite.rewriter.__main__"}


def test_the_engine_reaches_no_layer_above_it():
    graph = _import_graph()
    below = [m for m in graph if m.startswith("eqrewrite.rewriter.")
             and not _within(m, ABOVE_THE_ENGINE)]
    assert ("eqrewrite.rewriter.rewriting.engine" in below
            and "eqrewrite.rewriter.kinds.graphbreaks.select" in below)
    for module in below:
        above = {n for n in _reachable(graph, module) if _within(n, ABOVE_THE_ENGINE)}
        assert above == set(), f"{module} reaches {sorted(above)}"


def test_benchmarks_use_only_public_modules():
    for path in (ROOT / "benchmarks").glob("*.py"):
        used = {n for n in _imports(path, "benchmarks") if n.startswith("eqrewrite.rewriter")}
        assert used <= PUBLIC | {"eqrewrite.rewriter.api." + n for n in _api_names()}, path.name


def _api_names() -> list[str]:
    from eqrewrite.rewriter import api

    return list(api.__all__)


def test_nothing_imports_the_repository_folders_by_their_own_names():
    # ``import rewriter`` works only from a checkout's root; installed, only ``eqrewrite`` exists.
    offenders = []
    for folder in ("rewriter", "oracle", "rules", "tests", "benchmarks"):
        for path in (ROOT / folder).rglob("*.py"):
            # Relative imports resolve against the real package (``..matching.rules`` in a
            # subpackage of the rewriter is eqrewrite.rewriter.matching.rules, not ``rules``).
            module = _module_name(path) if folder in PACKAGES else "x.y"
            for name in _imports(path, module):
                if name.split(".")[0] in ("rewriter", "oracle", "rules"):
                    offenders.append(f"{path.relative_to(ROOT)}: {name}")
    assert offenders == []


def test_the_wheel_installs_only_the_eqrewrite_package(tmp_path):
    # Generic names (``rules``, ``oracle``) would clash with other distributions.
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path),
                    str(ROOT)], check=True, capture_output=True)
    import zipfile

    (wheel,) = tmp_path.glob("eqrewrite-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if ".dist-info/" not in name}
    assert top == {"eqrewrite"}
    assert {"eqrewrite/rules/default.yaml", "eqrewrite/rules/graphbreaks.yaml"} <= set(names)
    assert not any(name.startswith("eqrewrite/__init__") for name in names)  # a namespace
    # Every package of the folders is listed in pyproject.toml, so none is left out.
    for folder in PACKAGES:
        for init in (ROOT / folder).rglob("__init__.py"):
            assert f"eqrewrite/{init.relative_to(ROOT).as_posix()}" in names, init


@pytest.mark.parametrize("name", sorted(packaged_packs()))
def test_packaged_packs_pass_their_examples(name):
    pack = load_pack(name)
    assert count_examples(pack) > 0
    assert [f"{f.rule.id}:{f.line}: {f.message}" for f in check_pack(pack)] == []


def test_ruff_is_clean():
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    result = subprocess.run([ruff, "check", "rewriter", "oracle", "rules", "tests", "benchmarks"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_examples_rewrite_and_second_run_is_noop(tmp_path):
    out = tmp_path / "rewritten"
    first = subprocess.run([sys.executable, "-m", "eqrewrite.rewriter", str(ROOT / "examples"),
                            "--out", str(out), "--no-cache"], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert "files rewritten" in first.stderr and " 0 files rewritten" not in first.stderr
    second = subprocess.run([sys.executable, "-m", "eqrewrite.rewriter", str(out), "--check",
                             "--no-cache"], capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
