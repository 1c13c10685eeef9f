"""What a module's code means, proven statically: what every rule consults before it edits.

``facts/``: one module's facts from one shared walk (imports, text, definitions, nn.Module
classes, compiled functions, scopes); ``inference.py``: what kind of value an expression
holds; ``knowledge.py``: the torch API facts the inference uses, as data; ``guards.py``: the
named predicates of ``where:``; ``modulesummary.py``: a module reduced to a ``Summary``, the
names its functions and classes refer to; ``callgraph.py``: the ``traced`` scope, reachability
solved over the summaries of a run's files (kept on disk: ``running/summaries.py``).

May import: syntax.
"""
