"""The README's graph-break rule table names every rule of the packaged pack."""

from __future__ import annotations

from pathlib import Path

from eqrewrite.rewriter.api import load_pack

README = Path(__file__).parent.parent / "README.md"


def test_graph_break_table_lists_every_rule():
    text = README.read_text()
    table = text.split("<!-- rule table:", 1)[1].split("\n\n", 1)[0]
    missing = [r.id for r in load_pack("graphbreaks").rules if f"`{r.id}`" not in table]
    assert not missing, f"README's graph-break table lacks {missing}"
    unsafe = [r.id for r in load_pack("graphbreaks").rules if r.safety == "unsafe"]
    assert all(f"`{r}` (" in table and "**unsafe**" in table for r in unsafe)
