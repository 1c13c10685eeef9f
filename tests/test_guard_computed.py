"""The guard kind on raises and asserts whose message is computed (an f-string, a library's
own exception, a ``from`` cause): eagerly and under TorchScript the same test, exception
and message (formatted only on failure); traced, one graph with the check inside it."""

from __future__ import annotations

import importlib
import textwrap

import pytest
import torch
from rule_support import pack_rules, rewrite, run_module

SOURCE = textwrap.dedent('''
    import torch

    FORMATTED = []


    class DepthError(ValueError):
        pass


    def shown(value):
        FORMATTED.append(value)  # a message formatted eagerly would show here
        return value


    class Merge(torch.nn.Module):
        def forward(self, overwrite: torch.Tensor, tokens: torch.Tensor):
            if overwrite.sum() != tokens.sum():
                raise ValueError(f"{shown(int(overwrite.sum()))} slots for {tokens.sum()} tokens")
            if (overwrite < 0).any():
                raise DepthError("negative slot count") from None
            assert (tokens >= 0).all(), f"negative tokens: {shown(tokens.min().item())}"
            return overwrite * 2
''')


@pytest.fixture(scope="module")
def rewritten() -> str:
    text = rewrite(SOURCE, pack_rules("graphbreaks", "guard-raise", "guard-assert"))
    assert text.count("if _eqrw_fails(") == 2 and text.count("_eqrw_assert(") == 2  # + def
    return text


@pytest.mark.parametrize("overwrite, tokens, error, message, formatted", [
    ([1, 2], [1, 1], ValueError, "3 slots for 2 tokens", 1),
    ([-1, 3], [1, 1], "DepthError", "negative slot count", 0),
    ([1, 1], [3, -1], AssertionError, "negative tokens: -1", 1),
])
def test_eagerly_the_same_exception_and_message(rewritten, overwrite, tokens, error, message,
                                                formatted):
    for text in (SOURCE, rewritten):
        namespace = run_module(text)
        kind = namespace[error] if isinstance(error, str) else error
        with pytest.raises(kind, match=message) as raised:
            namespace["Merge"]()(torch.tensor(overwrite), torch.tensor(tokens))
        assert len(namespace["FORMATTED"]) == formatted  # once, when its check failed
        if kind is namespace.get("DepthError"):
            assert raised.value.__suppress_context__  # `from None` kept


def test_eagerly_a_passing_check_formats_nothing(rewritten):
    namespace = run_module(rewritten)
    out = namespace["Merge"]()(torch.tensor([1, 1]), torch.tensor([1, 1]))
    assert torch.equal(out, torch.tensor([2, 2])) and namespace["FORMATTED"] == []


def test_traced_one_graph_that_still_checks(rewritten):
    original, module = run_module(SOURCE)["Merge"](), run_module(rewritten)["Merge"]()
    good = (torch.tensor([1, 1]), torch.tensor([1, 1]))
    torch._dynamo.reset()
    assert torch._dynamo.explain(original)(*good).graph_break_count > 0
    torch._dynamo.reset()
    assert torch._dynamo.explain(module)(*good).graph_break_count == 0
    torch._dynamo.reset()
    compiled = torch.compile(module, backend="aot_eager", fullgraph=True)
    assert torch.equal(compiled(*good), torch.tensor([2, 2]))
    with pytest.raises(RuntimeError, match="slots for"):
        compiled(torch.tensor([1, 2]), torch.tensor([1, 1]))


def test_under_torchscript_the_same_raise(tmp_path, monkeypatch):
    source = textwrap.dedent('''
        import torch


        class Merge(torch.nn.Module):
            def forward(self, overwrite: torch.Tensor, tokens: torch.Tensor):
                if overwrite.sum() != tokens.sum():
                    raise ValueError(f"{overwrite.sum()} slots for {tokens.sum()} tokens")
                return overwrite * 2
    ''')
    text = rewrite(source, pack_rules("graphbreaks", "guard-raise"))
    assert "if _eqrw_fails(" in text
    (tmp_path / "scripted_guard.py").write_text(text)  # TorchScript reads the source file
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("scripted_guard")
    scripted = torch.jit.script(module.Merge())
    assert torch.equal(scripted(torch.tensor([1, 1]), torch.tensor([1, 1])), torch.tensor([2, 2]))
    with pytest.raises(torch.jit.Error, match="slots for"):
        scripted(torch.tensor([1, 2]), torch.tensor([1, 1]))


@pytest.mark.parametrize("body", [
    "self.failures = 1\n            raise ValueError(f'{overwrite}')",  # another statement
    "raise ValueError(f'{overwrite}')\n        if overwrite.dim() == 9:\n            pass",
])
def test_what_is_not_a_lone_raise_under_a_tensor_test_stays(body):
    source = textwrap.dedent('''
        import torch


        class Merge(torch.nn.Module):
            def forward(self, overwrite: torch.Tensor, strict: bool):
                if {test}:
                    {body}
                return overwrite
    ''')
    rules = pack_rules("graphbreaks", "guard-raise")
    for test in ("(overwrite < 0).any()", "strict"):
        text = source.replace("{test}", test).replace("{body}", body)
        changed = rewrite(text, rules) != text
        assert changed is (test != "strict" and "failures" not in body), (test, body)
