"""The code of the helpers that graph-break rewrites insert into a module: data for the
rewriter, written as real modules so that ruff and mypy check it.

The rewriter's ``rewriting/helpers.py`` reads these files as text (``importlib.resources``)
and never imports them: they import torch, which the rewriter never does
(``tests/test_repository.py`` and ``tests/test_import_graph.py`` check both). One file holds
what several kinds call (``shared.py``, whose imports are also the preamble of every helper
block); each other file holds the helpers of one kind and is named after it.

How a file is read (``helpers.read_helpers``):

- ``__all__`` lists the helpers rewrites ask for by name. A top-level ``def`` or ``class``
  not listed belongs to the helper above it and is always inserted with it
  (``_eqrw_print_now`` with ``_eqrw_print``); so does any other statement there
  (``_eqrw_exact_in._dynamo_marked_constant = True``).
- A helper's text runs from its first decorator (or the comment lines right above it) to
  the two blank lines before the next helper; a further blank line there is the helper's
  own (rewritten modules have always had it after ``_eqrw_moe_experts``).
- A helper needs the helpers whose names (``_eqrw_...``) its code reads, in the order it
  first reads them: they are inserted before it. Names in strings and docstrings do not
  count; a name no file defines is an error.
- Everything above the first helper (docstring, imports, ``__all__``) is for Python, ruff and
  mypy only. A helper file imports only the preamble (``shared.py``'s imports) and other
  helper files, which is all a rewritten module has.
"""
