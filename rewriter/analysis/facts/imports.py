"""What the imports of a module make its names mean: ``np.sqrt`` → ``numpy.sqrt``."""

from __future__ import annotations

import ast

from ...syntax.pattern import dotted_name


class Imports:
    """Resolves dotted expressions through one module's imports."""

    def __init__(self, aliases: dict[str, str]):
        # Each imported local name -> the dotted name it imports (``import torch.nn``
        # binds ``torch``; relative imports keep their leading dots).
        self.aliases = aliases

    def resolve(self, node: ast.AST) -> str | None:
        """Fully qualified name of a dotted expression rooted at an import, else None."""
        name = dotted_name(node)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        if root not in self.aliases:
            return None
        return f"{self.aliases[root]}.{rest}" if rest else self.aliases[root]

    def local_name_of(self, module: str) -> str | None:
        """The name under which ``module`` is imported here, if it is."""
        if self.aliases.get(module) == module:
            return module
        return next((local for local, q in self.aliases.items() if q == module), None)
