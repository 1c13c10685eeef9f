"""Rule packs shipped with eqrewrite, as YAML data files (see README, "Writing rules")."""
