"""``numpy-flag``: a NumPy scalar that ``__init__`` keeps as a module flag, stored as the
Python bool of its truth when every read in the file only tests that truth. Checked by
running the rewritten module (eager outputs bit for bit, compiled outputs equal, the breaks
gone in both modes), the helper on every kind of value, and the proofs that refuse."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
import torch
from eqrewrite.oracle.judging.graphbreaks import count_graph_breaks
from eqrewrite.rewriter.matching.rules import load_pack
from eqrewrite.rewriter.rewriting.engine import RewriteOptions, rewrite_source, select_rules

# diffusers' HunyuanVideo VAEs: the flag computed with NumPy in the parent's __init__,
# handed to a block that stores it and tests it in forward.
SOURCE = textwrap.dedent('''\
    import numpy as np
    import torch


    class Down(torch.nn.Module):
        def __init__(self, channels: int, add_temporal_downsample: bool = True):
            super().__init__()
            self.conv = torch.nn.Conv3d(channels, channels, 1)
            self.add_temporal_downsample = add_temporal_downsample

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            r1 = 2 if self.add_temporal_downsample else 1
            h = self.conv(x)
            if self.add_temporal_downsample:
                h = h[:, :, ::r1]
            return h


    class Encoder(torch.nn.Module):
        def __init__(self, channels: int = 4, ratio: int = 2, blocks: int = 3):
            super().__init__()
            self.blocks = torch.nn.ModuleList()
            for i in range(blocks):
                add_temporal_downsample = i >= np.log2(ratio)
                self.blocks.append(Down(channels, add_temporal_downsample=add_temporal_downsample))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for block in self.blocks:
                x = block(x)
            return x
''')


def _rewritten(source: str, only: bool = True) -> str:
    rules = [r for r in select_rules(load_pack("graphbreaks").rules, RewriteOptions())
             if not only or r.id == "numpy-flag"]
    return rewrite_source(source, rules, RewriteOptions(scope=frozenset({"everywhere"}))).text


def _namespace(source: str) -> dict:
    namespace: dict = {}
    exec(compile(source, "<encoder>", "exec"), namespace)
    return namespace


def _encoder(source: str) -> torch.nn.Module:
    torch.manual_seed(0)
    return _namespace(source)["Encoder"]()


def test_the_store_is_rewritten_and_nothing_else():
    text = _rewritten(SOURCE, only=False)
    assert "self.add_temporal_downsample = _eqrw_plain_flag(add_temporal_downsample)" in text
    assert "add_temporal_downsample = i >= np.log2(ratio)" in text  # the producer stays
    assert text.count("_eqrw_plain_flag(") == 2  # the store and the helper's definition


def test_flags_are_python_bools_of_the_same_truth():
    original, rewritten = _encoder(SOURCE), _encoder(_rewritten(SOURCE))
    before = [b.add_temporal_downsample for b in original.blocks]
    after = [b.add_temporal_downsample for b in rewritten.blocks]
    assert [type(f) for f in before] == [np.bool_] * 3
    assert after == [False, True, True] and all(type(f) is bool for f in after)
    assert [bool(f) for f in before] == after


def test_outputs_are_the_originals_eagerly_and_compiled():
    original, rewritten = _encoder(SOURCE), _encoder(_rewritten(SOURCE, only=False))
    x = torch.randn(1, 4, 8, 2, 2, generator=torch.Generator().manual_seed(1))
    expected = original(x)
    assert torch.equal(rewritten(x), expected)
    assert torch.equal(torch.compile(rewritten, backend="eager")(x), expected)


def test_the_breaks_go_in_both_modes():
    x = torch.randn(1, 4, 8, 2, 2)
    for switches in ({}, {"capture_scalar_outputs": True,
                          "capture_dynamic_output_shape_ops": True}):
        with torch._dynamo.config.patch(**switches):
            before = count_graph_breaks(_encoder(SOURCE), (x,), backend="eager").break_events
            after = count_graph_breaks(_encoder(_rewritten(SOURCE, only=False)), (x,),
                                       backend="eager").break_events
        assert before >= 3 and after == 0, (switches, before, after)


@pytest.mark.parametrize("value, expected", [
    (np.True_, True), (np.False_, False), (np.int64(0), False), (np.int8(-3), True),
    (np.float32(0.0), False), (np.float64("nan"), True)])
def test_the_helper_gives_the_python_truth_of_numpy_scalars(value, expected):
    plain = _namespace(_rewritten(SOURCE))["_eqrw_plain_flag"]
    assert plain(value) is expected


@pytest.mark.parametrize("value", [np.zeros(3), np.array(True), torch.tensor(True), [0], None,
                                   True, 0, "", np.str_("x")])
def test_the_helper_returns_anything_else_itself(value):
    plain = _namespace(_rewritten(SOURCE))["_eqrw_plain_flag"]
    assert plain(value) is value


@pytest.mark.parametrize("change", [
    # read other than for its truth, here or in another class of the file
    ("            h = h[:, :, ::r1]\n",
     "            h = h[:, :, ::r1]\n        h = h * self.add_temporal_downsample\n"),
    ("        return x\n",
     "        return x, [b.add_temporal_downsample for b in self.blocks]\n"),
    # `and` hands its operand on where its value is used
    ("        r1 = 2 if self.add_temporal_downsample else 1\n",
     "        r1 = 2 if self.add_temporal_downsample else 1\n"
     "        flag = self.add_temporal_downsample and True\n"),
    # stored outside __init__, or named in a string
    ("        return h\n",
     "        return h\n\n    def freeze(self):\n        self.add_temporal_downsample = False\n"),
    ("        super().__init__()\n        self.conv",
     "        super().__init__()\n        setattr(self, 'add_temporal_downsample', None)\n"
     "        self.conv"),
    # no NumPy in the module: nothing to convert
    ("import numpy as np\n", ""),
])
def test_a_read_store_or_module_the_proof_cannot_see_leaves_it(change):
    old, new = change
    assert old in SOURCE
    source = SOURCE.replace(old, new, 1)
    if "np." in source and "import numpy" not in source:
        source = source.replace("np.log2(ratio)", "ratio > 1")
    assert "_eqrw_plain_flag" not in _rewritten(source)


def test_not_and_truth_tested_bool_operands_are_truth_tests():
    assert "        if self.add_temporal_downsample:\n" in SOURCE
    source = SOURCE.replace(
        "        if self.add_temporal_downsample:\n",
        "        if not self.add_temporal_downsample or (self.add_temporal_downsample and"
        " r1 > 1):\n")
    assert "= _eqrw_plain_flag(add_temporal_downsample)" in _rewritten(source)
