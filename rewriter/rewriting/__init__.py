"""One module's text rewritten to a fixed point: ``engine.py`` runs rounds until nothing
matches (each output parsed again); ``apply.py`` applies a round's edits with libcst, parsing
only the units that hold edits; ``layout.py`` finds those units and where imports and helpers
go; ``incremental.py`` builds a later round's tree by re-parsing only the definitions that
held edits, when that provably finds what a whole-file round would; ``helpers.py`` holds the
source of the helpers graph-break rewrites insert, and finds the kinds' own.

May import: syntax, analysis, kinds, matching.
"""
