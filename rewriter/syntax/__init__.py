"""Python text and trees before any meaning: the vocabulary every later stage shares.

``nodes.py``: which fields of each ``ast`` node type hold nodes, for fast walks;
``lines.py``: lines as ``ast`` counts them, and the lines holding a token; ``pattern.py``:
the metavariable syntax of patterns and templates, compiled and matched structurally;
``enums.py``: the closed sets of names (an edit's level, a rule's safety, context and
scope, what the inference proves, where a rule declined) whose values are the YAML's and the
reports' words; ``marks.py``: the marks eqrewrite leaves in the code it writes (the helpers'
name prefix, the helper block's comment lines).

May import: nothing.
"""
