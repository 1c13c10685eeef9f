"""Smaller variants of one program's source text: the candidates the minimiser tries.

Every function here takes source text and returns source text (or yields candidates in a
fixed order), through libcst so the rest of the file keeps its formatting. Nothing runs the
code: the minimiser judges each candidate in its checking process and keeps it only when the
oracle's verdict and the finding's signature stay the same. Each kind of candidate makes the
program strictly smaller in its own measure (fewer statements or tokens, a simpler literal,
smaller input dimensions), so repeating them always ends.

- statements: ``keep_statements`` keeps a subset of one statement list (for delta debugging);
  the names a removed assignment bound are replaced, in the statements after it, by the
  first value it read (``v2 = v1.tanh()`` removed: later ``v2`` become ``v1``);
- ``unused_input_candidates``: a parameter of the program's ``forward`` (or ``__init__``)
  that its body never reads removed, with the item of the literal list ``get_inputs()``
  (``get_init_inputs()``) returns at its position;
- ``unused_member_candidates``: a member ``__init__`` sets (``self.NAME = ...``,
  ``self.register_buffer("NAME", ...)``) that nothing else in the module names, removed;
- ``unroll_candidates``: a loop that runs its body once (``range(1)``, ``range(0, 1)``, a
  one-item list or tuple; no ``break``, ``continue`` or ``else``) replaced by
  ``v = <value>`` and its body;
- ``inline_candidates``: an assignment to names removed, its values written where later
  statements of its block read them (a callable held in a temporary);
- ``iteration_candidates``: a loop over a literal list, tuple or dict (the generator's dicts
  of callables) replaced by one of its iterations;
- ``hoist_candidates``: a compound statement replaced by one of its blocks;
- ``break_candidates``: an ``if`` replaced by ``torch._dynamo.graph_break()`` and one of its
  blocks (a finding that needs the graph split a data-dependent ``if`` makes, not its test);
- ``expression_candidates``: a subexpression replaced by one of its operands (a call by its
  receiver or an argument, ``a * b`` by ``a`` or ``b``, ``x[i]`` by ``x``), an argument
  dropped, an item of a returned tuple or dict replaced by ``None`` (which keeps the
  positions of the outputs, and so the finding's path);
- ``constant_candidates``: a number replaced by a simpler one (0, 1, 2, half);
- ``shape_candidates``: dimensions of tensors made by factories (``torch.randn(4, 8)``)
  shrunk, everywhere at once or one at a time, and items of ``torch.tensor([...])`` lists
  removed;
- ``literal_inputs``: ``get_inputs()`` returning literals of the inputs it built (the
  checking process writes them: ``torch.tensor([[0.5, -1.0]])``), not what it computed;
- ``tidy``: parentheses around atoms that replaced operands brought along, removed (judged
  like any candidate, once at the end).

The modules, by concern: ``trees`` (what they share: sizes, parsing, replacement by
identity), ``statements`` (statement lists, compound statements, temporaries), ``loops``
(loops run once, loops over literals), ``interface`` (unread inputs, outputs, unread
members), ``expressions`` (operands, constants, the tidy-up), ``inputs`` (input shapes,
literal inputs). This ``__init__`` re-exports what the minimiser uses.
"""

from .expressions import INPUT_FUNCTIONS, constant_candidates, expression_candidates, tidy
from .inputs import literal_inputs, shape_candidates
from .interface import output_candidates, unused_input_candidates, unused_member_candidates
from .loops import iteration_candidates, unroll_candidates
from .statements import (
                         body_lengths,
                         break_candidates,
                         hoist_candidates,
                         inline_candidates,
                         keep_statements,
)
from .trees import Size, size

__all__ = ["INPUT_FUNCTIONS", "Size", "body_lengths", "break_candidates", "constant_candidates",
           "expression_candidates", "hoist_candidates", "inline_candidates",
           "iteration_candidates", "keep_statements", "literal_inputs", "output_candidates",
           "shape_candidates", "size", "tidy", "unroll_candidates", "unused_input_candidates",
           "unused_member_candidates"]
