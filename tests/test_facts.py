"""The parts of ``ModuleFacts``, each answering about one concern of one module."""

import ast
import textwrap

import pytest
from eqrewrite.rewriter.analysis.facts import ModuleFacts
from eqrewrite.rewriter.analysis.facts.definitions import definition_qualname
from eqrewrite.rewriter.analysis.facts.text import TextIndex
from eqrewrite.rewriter.syntax.enums import Scope

SOURCE = textwrap.dedent("""
    import torch
    import numpy as np
    from torch import nn as tnn
    from .local import helper

    LIMIT = 3

    def scale(x):
        global LIMIT
        return x * LIMIT

    class Block(tnn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()
            self.register_buffer("mask", torch.ones(3))

        def forward(self, x):
            def clip(y):
                nonlocal x
                return y
            return self.inner(clip(scale(x)))

    class Inner(Block):
        def forward(self, x):
            return x

    class Plain:
        def forward(self, x):
            return x

    @torch.compile
    def compiled(x):
        return step(x)

    def step(x):
        return x

    def untouched(x):
        return np.sqrt(x)
""")


def facts(text=SOURCE):
    return ModuleFacts(ast.parse(text), text)


def test_imports_resolve_dotted_names_through_their_aliases():
    module = facts()
    resolve = module.imports.resolve
    assert resolve(ast.parse("np.sqrt", mode="eval").body) == "numpy.sqrt"
    assert resolve(ast.parse("tnn.Linear", mode="eval").body) == "torch.nn.Linear"
    assert resolve(ast.parse("helper", mode="eval").body) == ".local.helper"
    assert resolve(ast.parse("scale", mode="eval").body) is None  # defined, not imported
    assert module.imports.local_name_of("numpy") == "np"
    assert module.imports.local_name_of("torch") == "torch"
    assert module.imports.local_name_of("math") is None


def test_definitions_know_nesting_and_name_definitions_as_python_does():
    definitions = facts().definitions
    block = definitions.classes["Block"]
    forward = definitions.method(block, "forward")
    assert forward is not None and definitions.enclosing_class(forward) is block
    clip = forward.body[0]
    assert definitions.enclosing_class(clip) is None  # nested in a method, not in a class
    assert definitions.owning_class(clip) is block
    # every function but the methods, nested ones included
    assert set(definitions.functions) == {"scale", "clip", "compiled", "step", "untouched"}
    assert definition_qualname([block, forward, clip]) == "Block.forward.<locals>.clip"
    assert definition_qualname([block]) == "Block"


def test_classes_find_modules_forwards_and_what_self_holds():
    module = facts()
    classes, names = module.classes, module.definitions.classes
    assert {c.name for c in classes.module_classes} == {"Block", "Inner"}
    plain_forward = module.definitions.method(names["Plain"], "forward")
    assert not classes.is_forward(plain_forward)  # its bases never leave the file
    assert classes.is_forward(module.definitions.method(names["Inner"], "forward"))
    assigned = {attribute for attribute, _, _ in classes.self_assignments(names["Block"])}
    assert assigned == {"inner", "mask"}  # register_buffer's name too
    assert classes.self_attribute_classes(names["Block"], "inner") == ["Inner"]


def test_compiled_functions_follow_calls_from_what_torch_compile_gets():
    module = facts()
    assert {f.name for f in module.compiled.functions} == {"compiled", "step"}
    without_compile = "def f(x):\n    return x\n"
    assert facts(without_compile).compiled.functions == frozenset()


def test_a_compiler_is_found_under_any_name_it_is_imported_as():
    # Only the statements naming a compiler are searched for its calls: `fast` is one.
    module = facts(textwrap.dedent("""\
        import torch
        from torch import compile as fast


        def f(x):
            return x


        def g(x):
            return x


        runner = fast(f)
        other = torch.compile(g)
        """))
    assert {getattr(f, "name", "") for f in module.compiled.functions} == {"f", "g"}


def test_a_statement_mentions_what_its_decorators_hold():
    tree = ast.parse("@register(mode=\"compile\")\ndef f(x):\n    return x\n")
    assert TextIndex(ast.unparse(tree)).mentions(tree.body[0], "compile")


def test_the_text_index_answers_per_statement_and_maybe_without_text():
    tree = ast.parse(SOURCE)
    module = ModuleFacts(tree, SOURCE)
    limit, scale = tree.body[4], tree.body[5]
    assert module.text.mentions(scale, "LIMIT") and not module.text.mentions(limit, "def")
    assert not module.text.has_walrus
    assert ModuleFacts(tree).text.mentions(limit, "anything")  # no text: maybe


@pytest.mark.parametrize(("text", "calls"), [
    ("model = torch.compile(model)", True),
    ("f = compile ( source, 'x', 'exec')", True),
    ("opt = torch._dynamo.optimize\n(backend)", True),
    ("if torch.compiler.is_compiling(): recompile(x)", False),  # no word `compile(`
    ("compiled(x); _compile(x); écompile(x)", False),  # part of a longer word
    ("# compile the model later", False),
])
def test_a_compiler_call_is_a_whole_word_before_a_parenthesis(text, calls):
    assert TextIndex(text).may_call_compiler is calls


def test_scopes_place_nodes_and_collect_shared_names():
    module = facts()
    scopes, names = module.scopes, module.definitions.classes
    forward = module.definitions.method(names["Block"], "forward")
    untouched = module.definitions.functions["untouched"][0]
    compiled = module.definitions.functions["compiled"][0]
    assert scopes.in_scope({Scope.FORWARD}, (names["Block"], forward))
    assert not scopes.in_scope({Scope.FORWARD}, (untouched,))
    assert scopes.in_scope({Scope.COMPILED}, (compiled,))
    assert scopes.in_scope({Scope.EVERYWHERE}, (untouched,))
    # traced from this module alone: forward reaches scale, nothing reaches untouched
    assert scopes.in_scope({Scope.TRACED}, (module.definitions.functions["scale"][0],))
    assert not scopes.in_scope({Scope.TRACED}, (untouched,))
    assert scopes.global_names == {"LIMIT"} and scopes.nonlocal_names == {"x"}
