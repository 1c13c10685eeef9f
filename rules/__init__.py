"""Rule packs shipped with eqrewrite, as YAML data files (see docs/writing-rules.md)."""
