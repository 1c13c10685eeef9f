"""The rules' own book: ``docs.py`` (``eqrewrite rules docs``), the README's rule tables,
``docs/rules.md`` and ``rules/schema.json`` generated from the packs; ``examples.py``
(``eqrewrite rules test``), every rule's embedded examples rewritten and checked.

May import: syntax, analysis, kinds, matching, rewriting.
"""
