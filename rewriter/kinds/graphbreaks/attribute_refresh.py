"""``self.x = self.x.to(...)``: an attribute refreshed with a converted copy of itself.

Modules keep tensors that ``Module.to`` does not move (plain attributes, buffers registered
late, tables built on the fly) and refresh them in ``forward``:
``self.pos_encoding = self.pos_encoding.to(device=device, dtype=dtype)`` (transformers' CTRL),
``self.pe = self.pe.to(dtype=x.dtype, device=x.device)`` (conformer positional encodings),
``self.classifier = self.classifier.to(self.dtype)`` (Switch routers). Dynamo cannot trace a
store of a tensor into a module attribute (``Unsupported python_type() call``): a graph break
on every call, although the conversion almost always returns the attribute itself (it is
already on that device, in that dtype) and the store changes nothing.

The statement becomes ``_eqrw_refresh(self, "x", self.x.to(...))``. Eagerly it stores the
converted value, exactly as before. Traced, it leaves the store out when the conversion
returned the very object the attribute holds (Dynamo decides that identity at trace time and
guards on the device and dtype it depends on), and stores it otherwise, as the original did.

The store left out is a store of the same object into the same attribute: a no-op for plain
attributes and for ``nn.Module``'s parameters, buffers and submodules (save for global
registration hooks, which run on each store). It is not a no-op for a property or a class
with its own ``__setattr__``, so the rewrite is refused when the enclosing class defines
either in this file, and when the attribute is not assigned in the class's ``__init__``
(a name the class does not own may be a property of a base class elsewhere).
"""

from __future__ import annotations

import ast

from ...syntax.enums import Level
from ...syntax.pattern import Bindings
from .. import Kind, KindContext, Proposal
from ..attributes import enclosing_class, owner_attribute, owns_plain_attribute
from ..values import CONVERSIONS


class AttributeRefresh(Kind):
    name = "attribute_refresh"
    node_types = (ast.Assign,)

    def tokens(self) -> frozenset[str]:
        return CONVERSIONS

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            return None
        target, value = node.targets[0], node.value
        if not (owner_attribute(target) and isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr in CONVERSIONS
                and ast.unparse(value.func.value) == ast.unparse(target)):
            return None
        assert isinstance(target, ast.Attribute)
        cls = enclosing_class(context)
        if cls is None or not owns_plain_attribute(cls, target.attr):
            context.note(f"`{ast.unparse(target)}` is not a plain attribute assigned in its "
                         "class's __init__ (a property or custom __setattr__ may run on a store)")
            return None
        bindings: Bindings = {"o": target.value, "v": value}
        return Proposal(f'_eqrw_refresh($o, "{target.attr}", $v)', bindings, Level.STATEMENT,
                        helpers=frozenset({"_eqrw_refresh"}))
