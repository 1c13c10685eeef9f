"""Facts about one module that every rule consults, one part per concern.

``ModuleFacts`` holds the parts, built from one shared walk over the module's blocks of
statements (``index.py``):

* ``imports`` (imports.py): what names mean through the imports (``resolve``);
* ``text`` (text.py): which lines mention a token, cheap tests before tree searches;
* ``definitions`` (definitions.py): functions and classes by name, and their nesting;
* ``classes`` (classes.py): nn.Module classes, ``forward`` methods, ``self`` attributes;
* ``compiled`` (compiled.py): the functions ``torch.compile`` traces;
* ``scopes`` (scopes.py): whether a node lies in a rule's scope; global/nonlocal names.

Built once per file from its ``ast`` tree, and only for files in which some pattern
matched, so files no rule can touch never pay for it.
"""

from __future__ import annotations

import ast

from .classes import ModuleClasses
from .compiled import CompiledFunctions
from .definitions import Definitions
from .imports import Imports
from .index import ModuleIndex, index_module
from .scopes import Scopes
from .text import TextIndex


class ModuleFacts:
    """The facts of one parsed module, by concern (see the module docstring)."""

    def __init__(self, tree: ast.Module, text: str | None = None,
                 function_scopes: dict[str, frozenset[str]] | None = None,
                 index: ModuleIndex | None = None):
        """``index``: ``tree``'s, if the caller has it already."""
        self.tree = tree
        self.index = index = index or index_module(tree)
        self.text = TextIndex(text)
        self.imports = Imports(index.aliases)
        self.definitions = Definitions(index.parent, index.classes, index.functions)
        self.classes = ModuleClasses(self.imports, self.definitions, self.text)
        self.compiled = CompiledFunctions(tree, self.imports, self.definitions, self.classes,
                                          self.text)
        self.scopes = Scopes(tree, self.text, self.classes, self.compiled, self.definitions,
                             function_scopes,
                             index.global_names, index.nonlocal_names)
