"""The marks eqrewrite leaves in the code it writes, by which it knows that code again: the
prefix of every name it inserts (its helpers) and the comment lines around the block of
helpers. Text only, no imports: the facts skip the helpers by their names, the layout finds
their block, the import hook cuts it out."""

from __future__ import annotations

MARKER = "# eqrewrite helpers: keep torch.compile graphs whole (see eqrewrite's README)."
END_MARKER = "# end of eqrewrite helpers."
PREFIX = "_eqrw_"
