"""One module's text rewritten to a fixed point: ``engine.py`` runs rounds until nothing
matches (each output parsed again); ``apply.py`` applies a round's edits with libcst, parsing
only the units that hold edits (``codegen.py`` finds the nodes edits name, ``substitution.py``
fills templates in, ``libcst_private.py`` is the one door to libcst's private code
generation); ``layout.py`` finds those units and where imports and helpers
go; ``incremental.py`` builds a later round's tree by re-parsing only the definitions that
held edits, when that provably finds what a whole-file round would; ``helpers.py`` reads the
helpers graph-break rewrites insert from ``rules/helpers/`` (real Python files, linted and
type-checked, never imported: read as text) and orders them with what each one uses.

May import: syntax, analysis, kinds, matching.
"""
