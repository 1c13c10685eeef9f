"""The graph-break pack page's generated rule table (docs/graph-break-pack.md, once in the
README) names every rule of the packaged pack, and says which are unsafe (the drift check in
test_docs.py keeps it equal to the generator's)."""

from __future__ import annotations

from pathlib import Path

from eqrewrite.rewriter.api import load_pack
from eqrewrite.rewriter.rulebook.docs import TABLES

PAGE = Path(__file__).parent.parent / TABLES["graphbreaks"]


def test_graph_break_table_lists_every_rule():
    text = PAGE.read_text()
    table = text.split("<!-- rules:graphbreaks:begin -->", 1)[1].split(
        "<!-- rules:graphbreaks:end -->", 1)[0]
    rows = {line.split("`", 2)[1]: line for line in table.splitlines()
            if line.startswith("| [`")}
    rules = load_pack("graphbreaks").rules
    assert sorted(rows) == sorted(r.id for r in rules)
    for rule in rules:
        last_cell = rows[rule.id].rstrip(" |").rsplit("|", 1)[1]
        assert last_cell.split(":")[0].strip(" *") == rule.safety, rows[rule.id]
