"""eqrewrite's rewriter: YAML rule packs applied to Python sources with libcst.

This package never imports torch: it reasons about tensors statically so that
pre-commit runs stay fast. Only ``oracle/`` executes code.
"""

__version__ = "0.1.0"
