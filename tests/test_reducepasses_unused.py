"""The minimiser's passes for unread inputs and members and for loops that run once: text in,
smaller text out (``candidates/``); nothing is compiled."""

from __future__ import annotations

import ast
import textwrap

import pytest
from eqrewrite.oracle.minimising import candidates as rp

# ``x1`` and ``spare`` are never read, nor are ``p1``, ``b0`` and ``lin``. The unread input
# draws nothing from the generator and the unread members come after the read ones, so that
# removing them leaves every other value (and the result) as it was.
PROGRAM = textwrap.dedent('''
    import torch
    from torch import nn


    class Program(nn.Module):
        def __init__(self, scale, spare):
            super().__init__()
            self.scale = scale
            self.p0 = nn.Parameter(torch.randn(3))
            self.p1 = nn.Parameter(torch.randn(3))
            self.register_buffer("b0", torch.ones(3))
            self.lin = nn.Linear(3, 3)

        def forward(self, x0, x1: torch.Tensor, x2):
            y = x0 * self.p0 + x2
            return y * self.scale


    def get_init_inputs():
        return [2.0, 5]


    def get_inputs():
        g = torch.Generator().manual_seed(0)
        a = torch.randn(3, generator=g)
        return [a, torch.zeros(3), torch.randn(3, generator=g)]
''')


def candidates(function, text: str) -> list[str]:
    made = [candidate for _, candidate in function(text)]
    for candidate in made:
        ast.parse(candidate)
        assert rp.size(candidate).tokens < rp.size(text).tokens
    return made


def returned(text: str, function: str) -> ast.expr:
    """What ``function`` in ``text`` returns."""
    tree = ast.parse(text)
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function)
    value = next(n for n in ast.walk(node) if isinstance(n, ast.Return)).value
    assert value is not None
    return value


def parameters(text: str, method: str) -> list[str]:
    tree = ast.parse(text)
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == method)
    return [a.arg for a in node.args.args]


# -- unused inputs ------------------------------------------------------------------------------


def test_an_unread_forward_parameter_goes_with_its_input():
    made = candidates(rp.unused_input_candidates, PROGRAM)
    assert len(made) == 2
    forward = made[0]
    assert parameters(forward, "forward") == ["self", "x0", "x2"]
    items = returned(forward, "get_inputs")
    assert isinstance(items, ast.List) and len(items.elts) == 2
    assert "return [a, torch.randn(3, generator=g)]" in forward, forward
    # The dead statement that built it (none here: it was inline) is the statement pass's.
    assert forward.count("a = torch.randn") == 1
    init = made[1]
    assert parameters(init, "__init__") == ["self", "scale"]
    assert "return [2.0]" in init and "def forward(self, x0, x1: torch.Tensor, x2):" in init


def test_read_parameters_are_kept():
    made = candidates(rp.unused_input_candidates, PROGRAM)
    for candidate in made:
        assert "x0" in parameters(candidate, "forward") and "x2" in parameters(
            candidate, "forward")
        assert "scale" in parameters(candidate, "__init__")
    # Read only through a nested function, or as a keyword argument's value: still read.
    text = PROGRAM.replace("return y * self.scale", "return (lambda: y * x1)()")
    assert all("x1" in parameters(c, "forward")
               for c in candidates(rp.unused_input_candidates, text))
    text = PROGRAM.replace("return y * self.scale", "return torch.add(y, other=x1)")
    assert all("x1" in parameters(c, "forward")
               for c in candidates(rp.unused_input_candidates, text))


@pytest.mark.parametrize("form, expected", [
    ("return (a, b, c)", "return (a, c)"),
    ("return a, b, c", "return a, c"),
    ("return (a, b)", "return (a,)"),
    ("return [\n        a,\n        b,\n        c,\n    ]",
     "return [\n        a,\n        c,\n    ]"),
])
def test_tuple_and_multiline_returns(form, expected):
    text = ("class M:\n    def forward(self, x, y, z):\n        return x + z\n\n\n"
            f"def get_inputs():\n    a = b = c = 1\n    {form}\n")
    if form == "return (a, b)":
        text = text.replace("(self, x, y, z)", "(self, x, y)").replace("x + z", "x")
    made = candidates(rp.unused_input_candidates, text)
    assert len(made) == 1
    assert expected in made[0], made[0]
    value = returned(made[0], "get_inputs")
    assert isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(
        parameters(made[0], "forward")) - 1


def test_the_last_input_and_an_emptied_tuple():
    text = ("class M:\n    def forward(self, x, y):\n        return x\n\n\n"
            "def get_inputs():\n    return [1, 2]\n")
    assert candidates(rp.unused_input_candidates, text) == [
        text.replace("self, x, y", "self, x").replace("[1, 2]", "[1]")]
    text = ("class M:\n    def forward(self, x):\n        return 0\n\n\n"
            "def get_inputs():\n    return 1,\n")
    (made,) = candidates(rp.unused_input_candidates, text)
    assert "def forward(self):" in made and "return ()" in made


def test_nothing_for_star_args_or_a_computed_input_list():
    star = PROGRAM.replace("def forward(self, x0, x1: torch.Tensor, x2):",
                           "def forward(self, x0, x1, *rest):")
    assert "*rest" in star
    assert all("x1" in c for c in candidates(rp.unused_input_candidates, star))
    assert len(candidates(rp.unused_input_candidates, star)) == 1  # __init__'s only
    computed = PROGRAM.replace(
        "return [a, torch.zeros(3), torch.randn(3, generator=g)]",
        "return [a] + [torch.randn(3, generator=g) for _ in range(2)]")
    made = candidates(rp.unused_input_candidates, computed)
    assert len(made) == 1 and "def forward(self, x0, x1: torch.Tensor, x2):" in made[0]
    looked_up = PROGRAM.replace("return y * self.scale", "return locals()['x1']")
    assert len(candidates(rp.unused_input_candidates, looked_up)) == 1  # __init__'s only


def test_defaulted_parameters_beyond_the_inputs_and_no_init_inputs():
    text = ("class M:\n    def __init__(self, n=3, m=4):\n        self.n = n\n\n"
            "    def forward(self, x, y=None):\n        return x * self.n\n\n\n"
            "def get_inputs():\n    return [1]\n")
    made = candidates(rp.unused_input_candidates, text)
    assert [parameters(c, "forward") for c in made] == [["self", "x"], ["self", "x", "y"]]
    assert parameters(made[1], "__init__") == ["self", "n"]
    assert all("return [1]" in c for c in made)


def test_submodules_are_not_the_target():
    text = textwrap.dedent('''
        class Inner:
            def forward(self, a, b):
                return a


        class Program:
            def __init__(self):
                self.inner = Inner()

            def forward(self, x, y):
                return self.inner(x, x)


        def get_inputs():
            return [1, 2]
    ''')
    (made,) = candidates(rp.unused_input_candidates, text)
    assert "def forward(self, x):" in made and "def forward(self, a, b):" in made
    assert "return [1]" in made


# -- unused members -----------------------------------------------------------------------------


def test_unread_members_are_removed_one_at_a_time():
    made = candidates(rp.unused_member_candidates, PROGRAM)
    removed = ["self.p1 = ", 'self.register_buffer("b0"', "self.lin = "]
    assert len(made) == len(removed)
    for candidate, gone in zip(made, removed, strict=True):
        assert gone not in candidate
        assert rp.size(candidate).statements == rp.size(PROGRAM).statements - 1
        for kept in ("self.scale = scale", "self.p0 = ", *(r for r in removed if r != gone)):
            assert kept in candidate


def test_members_read_anywhere_are_kept():
    read = PROGRAM.replace("return y * self.scale", "return self.lin(y) * self.scale + self.b0")
    made = candidates(rp.unused_member_candidates, read)
    assert len(made) == 1 and "self.p1 = " not in made[0]
    by_name = PROGRAM.replace("return y * self.scale", "return y * getattr(self, 'scale')")
    assert candidates(rp.unused_member_candidates, by_name) == []
    listed = PROGRAM.replace("return y * self.scale", "return y * len(list(self.parameters()))")
    assert candidates(rp.unused_member_candidates, listed) == []
    # Set again or read in ``__init__`` itself: kept.
    again = PROGRAM.replace("self.lin = nn.Linear(3, 3)",
                            "self.lin = nn.Linear(3, 3)\n        self.lin.weight.zero_()")
    assert all("self.lin = " in c for c in candidates(rp.unused_member_candidates, again))


def test_an_emptied_block_gets_pass_and_semicolons_are_tidied():
    text = ("class M:\n    def __init__(self, a):\n        if a:\n            self.u = 1\n"
            "        self.v = 2; self.w = 3\n\n    def forward(self, x):\n"
            "        return x * self.v\n")
    made = candidates(rp.unused_member_candidates, text)
    assert made == [text.replace("self.u = 1", "pass"),
                    text.replace("self.v = 2; self.w = 3", "self.v = 2")]


# -- loops that run once ------------------------------------------------------------------------


LOOPS = textwrap.dedent('''
    def f(x):
        for i in range(1):
            x = x + i
        for (a, b) in [(x, 2)]:
            x = a * b
        for j in range(0, 1): x = x - j; x = x + 1
        for k in (x,):
            if k:
                x = k
        return x
''')


def test_loops_that_run_once_are_unrolled():
    made = candidates(rp.unroll_candidates, LOOPS)
    assert len(made) == 4
    assert "    i = 0\n    x = x + i\n    for (a, b)" in made[0]
    assert "    (a, b) = (x, 2)\n    x = a * b\n" in made[1]
    assert "    j = 0\n    x = x - j; x = x + 1\n" in made[2]
    assert "    k = x\n    if k:\n        x = k\n    return x\n" in made[3]
    for candidate in made:
        assert candidate.count("for ") == 3
    namespace: dict = {}
    exec(LOOPS, namespace)
    for candidate in made:
        unrolled: dict = {}
        exec(candidate, unrolled)
        assert unrolled["f"](5) == namespace["f"](5)


@pytest.mark.parametrize("loop", [
    "for i in range(2):\n        x = x + i",
    "for i in range(1):\n        if x:\n            break\n        x = x + i",
    "for i in [x]:\n        continue",
    "for i in range(1):\n        x = x + i\n    else:\n        x = 0",
    "for i in [x, x]:\n        x = i",
    "for i in [*x]:\n        x = i",
    "for i in range(0, 1, 2):\n        x = x + i",
    "for i in range(n):\n        x = x + i",
])
def test_loops_that_may_not_run_once_are_left(loop):
    text = f"def f(x, n):\n    {loop}\n    return x\n"
    assert candidates(rp.unroll_candidates, text) == []


def test_a_nested_loops_break_is_its_own():
    text = ("def f(x):\n    for i in range(1):\n        for j in range(3):\n"
            "            break\n        x = x + i\n    return x\n")
    (made,) = candidates(rp.unroll_candidates, text)
    assert made.startswith("def f(x):\n    i = 0\n    for j in range(3):\n")


ITERATED = textwrap.dedent('''
    from functools import partial

    import torch


    def f(x):
        fns0 = {"clamp": partial(torch.clamp, min=0.0), "scale": partial(torch.mul, other=2.0)}
        for key, fn in fns0.items():
            y = fn(x)
        for s in (1.0, 3.0):
            y = y * s
        for name in fns0:
            y = y + len(name)
        return y
''')


def fewer(function, text: str, statement: type) -> list[str]:
    """Candidates of a pass that trades one ``statement`` (a loop, an ``if``) for what it
    runs: not always fewer tokens (the item is written out), always one fewer of those."""
    def count(code: str) -> int:
        return sum(isinstance(n, statement) for n in ast.walk(ast.parse(code)))
    made = [candidate for _, candidate in function(text)]
    assert all(count(candidate) == count(text) - 1 for candidate in made)
    return made


def test_a_loop_over_a_literal_becomes_each_of_its_iterations():
    made = fewer(rp.iteration_candidates, ITERATED, ast.For)
    assert len(made) == 6
    assert "    (key, fn) = (\"clamp\", partial(torch.clamp, min=0.0))\n    y = fn(x)\n" in (
        made[0].replace("key, fn = ", "(key, fn) = "))
    assert "    s = 3.0\n    y = y * s\n" in made[3]
    assert "    name = \"scale\"\n" in made[5]
    namespace: dict = {}
    exec(made[1], namespace)  # the dict's second callable alone: 2x
    import torch
    assert torch.equal(namespace["f"](torch.tensor([-1.0])), torch.tensor([-6.0 + 5 + 5]))


@pytest.mark.parametrize("loop", [
    "for i in (1,):\n        x = x + i",  # runs once: the unroll pass's
    "for i in items:\n        x = x + i",  # not a literal
    "for i in [*x, 1]:\n        x = x + i",
    "for i in {**d}:\n        x = x + i",
])
def test_loops_over_other_iterables_are_left_to_other_passes(loop):
    text = f"def f(x, items, d):\n    {loop}\n    return x\n"
    assert fewer(rp.iteration_candidates, text, ast.For) == []


def test_an_if_becomes_a_graph_break_and_one_of_its_blocks():
    text = ("import torch\n\n\ndef f(x):\n    y = x.exp()\n    if x.sum():\n"
            "        z = y + 1\n    else:\n        z = y - 1\n    return z\n")
    made = fewer(rp.break_candidates, text, ast.If)
    assert made == [text.replace("    if x.sum():\n        z = y + 1\n    else:\n"
                                 "        z = y - 1\n", "    torch._dynamo.graph_break()\n"
                                 f"        z = y {sign} 1\n".replace("        ", "    "))
                    for sign in "+-"]
    assert fewer(rp.break_candidates, text.replace("import torch", "import numpy"),
                 ast.If) == []


def test_a_temporary_is_inlined_where_it_is_read():
    text = ("from functools import partial\n\nimport torch\n\n\ndef f(x):\n"
            "    key, fn = (0, partial(torch.clamp, min=0.0))\n    s = x + 1\n"
            "    y = fn(s) * s\n    s = 2\n    return y + s + key\n")
    made = [candidate for _, candidate in rp.inline_candidates(text)]
    assert "    y = partial(torch.clamp, min=0.0)(s) * s\n    s = 2\n    return y + s + 0\n" in (
        made[0])
    assert "    y = fn(x + 1) * (x + 1)\n    s = 2\n    return y + s + key\n" in made[1]
    assert len(made) == 4  # y and the second s too (nothing reads it after: just removed)
    for candidate in made[:2]:
        namespace: dict = {}
        exec(text, namespace)
        inlined: dict = {}
        exec(candidate, inlined)
        import torch
        assert torch.equal(inlined["f"](torch.tensor([-3.0, 1.0])),
                           namespace["f"](torch.tensor([-3.0, 1.0])))
    assert [p for p, _ in rp.inline_candidates(text, 2)] == [2, 3]


def test_candidates_start_at_a_position():
    assert [p for p, _ in rp.unroll_candidates(LOOPS, 2)] == [2, 3]
    assert [p for p, _ in rp.unused_member_candidates(PROGRAM, 1)] == [1, 2]
    assert [p for p, _ in rp.unused_input_candidates(PROGRAM, 1)] == [1]


# -- the candidates run as the original does ----------------------------------------------------


def run(text: str):
    torch = pytest.importorskip("torch")
    namespace: dict = {}
    exec(compile(text, "<program>", "exec"), namespace)
    torch.manual_seed(0)
    module = namespace["Program"](*namespace["get_init_inputs"]())
    return module(*namespace["get_inputs"]())


def test_removing_unread_inputs_and_members_keeps_the_result():
    torch = pytest.importorskip("torch")
    expected = run(PROGRAM)
    for function in (rp.unused_input_candidates, rp.unused_member_candidates):
        for candidate in candidates(function, PROGRAM):
            assert torch.equal(run(candidate), expected), candidate
    # All of them at once, as the minimiser would leave the program.
    text = PROGRAM
    for function in (rp.unused_input_candidates, rp.unused_member_candidates):
        while made := list(function(text)):
            text = made[0][1]
    assert "x1" not in text and "spare" not in text and "p1" not in text
    assert "b0" not in text and "self.lin" not in text
    assert torch.equal(run(text), expected)


FUNCTIONAL = textwrap.dedent('''
    import torch


    def scaled(t, k):
        return t * k


    def program(x0: torch.Tensor, x1: torch.Tensor, x2: torch.Tensor):
        v3 = torch.fmin(x0, scaled(x1, 2))
        return None, None, v3


    def get_inputs():
        b_x0 = torch.randn((2, 2, 1, 2))
        b_x1 = torch.randn((2, 1, 1, 2))
        b_x2 = torch.rand((1, 2, 1, 2))
        return [b_x0, b_x1.permute(3, 0, 1, 2), b_x2]
''')


def test_a_functional_programs_unread_parameter_goes_with_its_input():
    # The generator's functional programs (`program.py::program`) take their inputs from
    # get_inputs() by position, like forward, but have no `self` to skip.
    (made,) = candidates(rp.unused_input_candidates, FUNCTIONAL)
    assert parameters(made, "program") == ["x0", "x1"]
    assert "return [b_x0, b_x1.permute(3, 0, 1, 2)]" in made
    assert parameters(made, "scaled") == ["t", "k"]  # a helper it calls is not the target
    # Two functions neither of which calls the other: which one runs is not known.
    ambiguous = FUNCTIONAL + "\n\ndef other(y):\n    return y\n"
    assert candidates(rp.unused_input_candidates, ambiguous) == []


def test_each_returned_item_can_go_and_one_left_stands_alone():
    made = candidates(rp.output_candidates, FUNCTIONAL)
    assert [ast.unparse(returned(m, "program")) for m in made] == [
        "(None, v3)", "(None, v3)", "(None, None)"]
    pair = FUNCTIONAL.replace("return None, None, v3", "return None, v3")
    assert [ast.unparse(returned(m, "program"))
            for m in candidates(rp.output_candidates, pair)] == ["v3", "None"]
    listed = FUNCTIONAL.replace("return None, None, v3", "return [v3, None]")
    assert [ast.unparse(returned(m, "program"))
            for m in candidates(rp.output_candidates, listed)] == ["None", "v3"]
    # a forward's tuple too; a single value: nothing
    assert candidates(rp.output_candidates, PROGRAM) == []
    two = PROGRAM.replace("return y * self.scale", "return y, self.scale")
    made = candidates(rp.output_candidates, two)
    assert [m.count("return self.scale") + 2 * m.count("return y\n") for m in made] == [1, 2]
