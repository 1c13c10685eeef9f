"""The program generator: determinism, validity, coverage of the trigger classes, the op
table's validation, rejection of bad candidates, and ``eqrewrite gen``."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
from collections import Counter

import pytest
from click.testing import CliRunner
from eqrewrite.oracle.generate import (
    BatchStats,
    GenConfig,
    TableError,
    default_table,
    generate,
    generate_many,
)
from eqrewrite.oracle.generate.execute import check
from eqrewrite.oracle.generate.table import parse_table
from eqrewrite.oracle.harness.targets import find_target
from eqrewrite.rewriter.cli import main

SEEDS = range(300)


@pytest.fixture(scope="module")
def batch():
    """Programs for a few hundred seeds (eager only: about ten seconds)."""
    stats = BatchStats(default_table())
    programs = []
    for seed, program in generate_many(SEEDS):
        stats.add(seed, program)
        programs.append(program)
    return stats, programs


def _digest(seeds: range) -> str:
    sources = "".join(generate(seed).source for seed in seeds)
    return hashlib.sha256(sources.encode()).hexdigest()


def test_same_seed_same_bytes_across_processes_and_hash_seeds():
    script = ("import hashlib; from eqrewrite.oracle.generate import generate; "
              "print(hashlib.sha256(''.join(generate(s).source for s in range(8))"
              ".encode()).hexdigest())")
    digests = set()
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                                text=True, check=True)
        digests.add(result.stdout.strip())
    assert digests == {_digest(range(8))}


def test_different_seeds_give_different_programs(batch):
    _, programs = batch
    assert len({p.source for p in programs}) == len(programs)


def test_every_seed_gives_a_valid_program_in_the_oracle_convention(batch, tmp_path):
    stats, programs = batch
    assert stats.failed == [] and stats.programs == len(SEEDS)
    for program in programs[:60]:
        path = program.write(tmp_path)
        ast.parse(program.source)
        target = find_target(tmp_path, path)  # header parses, exactly one target
        assert target is not None and target.attribute == program.target
        assert target.settings == program.settings
        assert check(program.source, program.target).valid


def test_validity_and_op_coverage(batch):
    stats, _ = batch
    # Every statement is executed when chosen, so whole candidates rarely fail.
    assert stats.validity >= 0.8
    assert stats.coverage >= 0.9, stats.unused_ops()
    assert stats.statements_kept / stats.statements_tried >= 0.5


TRIGGERS = {
    # aliased mutation
    "inplace", "aliased-mutation", "write-through-view", "slice-assignment", "index-put",
    "duplicate-indices", "data-write", "input-mutation", "aliasing",
    # layout chains, mixed dtypes, parameterised ops
    "layout-chain", "layout", "mixed-dtypes", "interpolation", "reduction", "pooling",
    # control flow
    "static-branch", "data-dependent-branch", "loop", "data-dependent-loop",
    "tensor-iteration",
    # non-tensor Python constructs
    "modulelist", "modulelist-truthiness", "assert", "dict-dispatch", "partial",
    "manual-seed", "generator", "generator-expression", "module-state", "global-rebinding",
    "python-scalar", "item", "try-except", "closure", "list-comprehension",
}


def test_programs_cover_the_trigger_classes(batch):
    stats, _ = batch
    assert TRIGGERS - set(stats.features) == set()


def test_inputs_cover_boundary_values_layouts_and_dtypes(batch):
    stats, _ = batch
    assert {"-0.0", "inf", "nan", "empty", "integer-limit", "extreme-float"} <= set(
        stats.boundary)
    assert {"transposed", "strided", "offset", "expanded", "permuted",
            "channels_last"} <= set(stats.layouts)
    assert {"float16", "bfloat16", "int64", "int8", "uint8", "bool"} <= set(stats.dtypes)


def test_metadata_matches_the_source(batch):
    _, programs = batch
    table = default_table().by_id()
    for program in programs[:50]:
        assert set(program.ops) <= set(table)
        data = json.loads(json.dumps(program.metadata()))
        assert data["seed"] == program.seed and data["file"] == program.filename
        for spec in program.inputs:
            assert f"{spec.name}:" in program.source
        if "manual-seed" in program.features:
            assert program.settings.get("inductor.fallback_random") is True


def test_features_and_ops_can_be_restricted():
    config = GenConfig(features=tuple((name, 0.0) for name in (
        "view-op", "inplace", "view-then-write", "slice-assignment", "index-put",
        "data-write", "layout-chain", "static-branch", "data-branch", "loop", "data-loop",
        "tensor-loop", "modulelist", "assert", "dict-dispatch", "manual-seed", "generator",
        "module-state", "python-scalar", "try-except", "closure", "comprehension")),
        ops=frozenset({"add", "mul", "sin"}))
    for seed in range(5):
        program = generate(seed, config)
        assert set(program.ops) <= {"add", "mul", "sin"}
        body = program.source.split("def forward" if "class" in program.source
                                    else "def program")[1].split("def get_inputs")[0]
        assert all(line.strip().startswith(("v", "return", "global")) or not line.strip()
                   for line in body.splitlines()[1:])


def test_unknown_feature_is_an_error():
    with pytest.raises(ValueError, match="unknown features"):
        GenConfig(features=(("no-such-feature", 1.0),)).weights()


@pytest.mark.parametrize("entry, message", [
    ({"call": "torch.abs", "args": ["self", "nonsense"]}, "unknown argument kind"),
    ({"call": "torch.abs", "args": ["self"], "dtypes": ["float128"]}, "unknown dtype"),
    ({"call": "torch.abs", "args": ["dim"]}, "exactly one subject"),
    ({"call": "numpy.abs", "args": ["self"]}, "'call' must be"),
    ({"call": "torch.abs", "args": ["self"], "colour": "red"}, "unknown keys"),
    ({"call": "Tensor.abs", "args": ["self"]}, "needs a method"),
])
def test_bad_table_entries_name_the_op(entry, message):
    with pytest.raises(TableError, match=f"op 'broken'.*{message}"):
        parse_table({"dtype_classes": {"float": ["float32"]}, "ops": {"broken": entry}})


def _program(body: str, imports: str = "import torch") -> str:
    lines = [imports, "", "", "def program(x: torch.Tensor):"]
    lines += ["    " + line for line in body.splitlines()]
    lines += ["", "", "def get_inputs():", "    return [torch.ones(3)]", ""]
    return "\n".join(lines)


@pytest.mark.parametrize("body, imports, reason", [
    ("return x[5]", "import torch", "IndexError"),
    ("return torch.tensor(list(os.urandom(8)))", "import os\nimport torch", "nondeterministic"),
    ("y = x.exp()\ny.add_(1)\nreturn y", "import torch", "backward"),
])
def test_check_rejects_invalid_programs(body, imports, reason):
    verdict = check(_program(body, imports), "program")
    assert not verdict.valid and reason in verdict.reason


def test_check_accepts_in_place_writes_to_inputs_like_the_oracle():
    # With gradients the in-place write on a leaf fails; the oracle then runs without them.
    assert check(_program("x.mul_(2)\nreturn x"), "program").valid


def test_gen_command_writes_programs_manifest_and_stats(tmp_path):
    out = tmp_path / "programs"
    result = CliRunner().invoke(main, ["gen", "--seed", "5", "--count", "3", "-o", str(out),
                                       "--stats", "--format", "json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    assert stats["programs"] == 3 and 0 < stats["ops"]["coverage"] <= 1
    files = sorted(p.name for p in out.glob("*.py"))
    assert files == ["gen_000005.py", "gen_000006.py", "gen_000007.py"]
    assert (out / "gen_000006.py").read_text() == generate(6).source
    manifest = json.loads((out / "manifest.json").read_text())
    assert [p["seed"] for p in manifest["programs"]] == [5, 6, 7]


@pytest.mark.parametrize("args, message", [
    (["gen"], "nothing to do"),
    (["gen", "--stats", "--ops", "add,nope"], "unknown op ids: nope"),
    (["gen", "--stats", "--feature", "loop"], "NAME=WEIGHT"),
    (["gen", "--stats", "--statements", "5:2"], "LOW <= HIGH"),
])
def test_gen_command_usage_errors(args, message):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and message in result.output


def test_parallel_generation_gives_the_same_programs():
    serial = [p.source for _, p in generate_many(range(3))]
    parallel = [p.source for _, p in generate_many(range(3), jobs=2)]
    assert serial == parallel


def test_generated_programs_pass_the_oracle_end_to_end(tmp_path):
    # Dynamo only (no code generation): each program traces and agrees with itself.
    generate(1).write(tmp_path)
    result = subprocess.run([sys.executable, "-m", "eqrewrite.rewriter", "oracle",
                             str(tmp_path), "--backend", "eager", "--no-breaks",
                             "--format", "json"], capture_output=True, text=True)
    report = json.loads(result.stdout)
    verdicts = Counter(t["verdict"] for t in report["targets"])
    assert verdicts == Counter({"passed": 1}), result.stdout[-2000:]


def test_a_new_table_entry_is_used_without_code():
    # Operator coverage is data: an op that only a custom table knows gets generated.
    table = parse_table({"dtype_classes": {"float": ["float32", "float64"]}, "ops": {
        "expit": {"call": "torch.special.expit", "dtypes": ["float"], "args": ["self"]},
        "scaled": {"call": "torch.mul", "method": "mul", "dtypes": ["float"],
                   "args": ["self", {"number": {"values": [3.0]}}]}}})
    programs = [generate(seed, GenConfig(table=table)) for seed in range(6)]
    used = Counter(op for p in programs for op in p.ops)
    assert set(used) == {"expit", "scaled"}
    assert any("torch.special.expit(" in p.source for p in programs)
