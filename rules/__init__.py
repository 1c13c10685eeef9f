"""Rule packs shipped with eqrewrite, as YAML data files (see docs/writing-rules.md), and
``helpers/``: the code of the helpers their rewrites insert, read by the rewriter as text."""
