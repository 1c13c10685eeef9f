"""The oracle on real torch.compile miscompilations and on expected-numerics controls.

``tests/miscompilations/`` holds targets made from public PyTorch issues that still reproduce
on torch 2.13.0 CPU (each file's docstring has its issue link, settings and what differs) and
controls that maintainers closed as expected numerics. Each file says what the oracle must
conclude (``Expect:``). This test runs a subset that covers every class of difference, with
Inductor, on every CI run, and checks that each bug's reproducer exits 1 on its own;
``benchmarks/miscompilations.py`` runs the whole set.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from eqrewrite.oracle.harness.harness import HarnessOptions, HarnessPool  # noqa: E402
from eqrewrite.oracle.harness.targets import find_target  # noqa: E402
from eqrewrite.oracle.judging.judge import Verdict  # noqa: E402

CORPUS = Path(__file__).parent / "miscompilations"
SUBSET = (
    "bug_argmin_transposed_add.py",               # an index output (exact)
    "bug_any_uint8_returns_bool.py",               # result dtype
    "bug_bool_subtraction_not_rejected.py",        # eager raises, compiled returns
    "bug_atan2_amin_gradient.py",                  # gradients only
    "bug_negative_zero_add_reciprocal.py",         # sign of infinity, against the reference
    "bug_minimum_signed_zero.py",                  # sign of zero (strict)
    "bug_generator_returned_as_tuple_iterator.py",  # the type of a returned object
    "bug_closure_list_mutation_local_class.py",    # module state
    "noise_gelu_sign_ill_conditioned.py",          # compiled closer to float64
    "noise_fp16_overflow_kept_in_fp32.py",         # float16 overflow avoided compiled
    "noise_where_on_rounding_residue.py",          # amplified rounding: sensitivity
    "bug_floor_divide_quotient_rounded_up.py",     # an integer jump the exact answer decides
    "noise_floor_constant_row_residue.py",         # a jump at an exact tie: not decided
)


def expected(path: Path) -> str:
    """The ``Expect:`` line of a case's docstring."""
    return re.search(r"^Expect: (\S+)", path.read_text(), re.MULTILINE).group(1)


def test_the_corpus_is_big_enough_and_every_case_names_its_issue():
    cases = sorted(CORPUS.glob("*.py"))
    outcome_classes = [expected(path) for path in cases]
    disputed = [p for p in cases if "\nDisputed:" in p.read_text()]
    assert outcome_classes.count("compiler-bug") - len(disputed) >= 20
    assert outcome_classes.count("numerical-noise") >= 4
    for path in cases:
        assert re.search(r"^Issue: (https://github.com/pytorch/pytorch/issues/\d+|none )",
                         path.read_text(), re.MULTILINE), path.name


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    """The subset validated once, two at a time, with Inductor as each header says."""
    reproducers = tmp_path_factory.mktemp("reproducers")
    pool = HarnessPool(CORPUS, None, HarnessOptions(timeout=600, reproducer_dir=reproducers,
                                             count_breaks=False), jobs=2)
    try:
        targets = [find_target(CORPUS, CORPUS / name) for name in SUBSET]
        return dict(zip(SUBSET, pool.validate_all(targets)))
    finally:
        pool.close()


@pytest.mark.parametrize("name", SUBSET)
def test_verdict_is_the_expected_one(verdicts, name):
    report = verdicts[name]
    assert report.verdict is Verdict(expected(CORPUS / name)), report.detail


@pytest.mark.parametrize("name", [n for n in SUBSET if n.startswith("bug_")])
def test_reproducer_fails_on_its_own(verdicts, name):
    (finding,) = [f for f in verdicts[name].findings if f.verdict is Verdict.COMPILER_BUG]
    script = Path(finding.reproducer)
    alone = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           cwd=script.parent, timeout=900)
    assert alone.returncode == 1, alone.stdout + alone.stderr[-2000:]
    assert "compiler-bug" in alone.stdout
