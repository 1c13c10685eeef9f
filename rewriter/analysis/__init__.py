"""What a module's code means, proven statically: what every rule consults before it edits.

``facts/``: one module's facts from one shared walk (imports, text, definitions, nn.Module
classes, compiled functions, scopes); ``inference.py``: what kind of value an expression
holds; ``knowledge.py``: the torch API facts the inference uses, as data; ``guards.py``: the
named predicates of ``where:``; ``callgraph.py``: the ``traced`` scope, a module reduced to
a ``Summary`` and reachability solved over many (over a run's files, with the summaries kept
on disk: ``running/summaries.py``).

May import: syntax.
"""
