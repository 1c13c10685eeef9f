"""The program generator: random, valid, self-contained PyTorch programs for compiler testing.

``generate(seed)`` returns a ``Program`` whose ``source`` follows the oracle's file
convention (one ``nn.Module`` subclass ``Program`` or one function ``program``, plus
``get_inputs()``, and a ``# eqrewrite-oracle:`` header when settings are needed). The same
seed and ``GenConfig`` always give the same bytes, in any process. Every returned program
has run eagerly twice, as the oracle runs it, with identical results; candidates that did
not are regenerated (``Program.attempts``, ``Program.rejected``).

Operations come from the op table (``ops.yaml``, loaded by ``table.py``): data, not code per
op. Statements are chosen and executed one at a time (``builder.py``), so shapes, dtypes
and aliasing are read from real tensors; ``features.py`` adds in-place and aliasing writes,
layout chains, control flow and Python constructs; ``inputs.py`` picks dtypes, layouts and
boundary values. ``stats.py`` summarises a batch (validity, op coverage). ``cli.py`` is
``eqrewrite gen``: argument parsing and one call of the oracle's API.

May import: judging, api, options.
"""

from .program import GenConfig, GenerationError, Program, generate
from .stats import BatchStats, generate_many
from .table import OpSpec, OpTable, TableError, default_table

__all__ = ["BatchStats", "GenConfig", "GenerationError", "OpSpec", "OpTable", "Program",
           "TableError", "default_table", "generate", "generate_many"]
