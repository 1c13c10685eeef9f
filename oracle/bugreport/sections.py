"""Sentences of the issue that say what kind of finding it is and what was checked: its kind
(crash, silent wrong result, cosmetic), the first compiler layer the ablation shows it in,
a crash's full traceback, the known issue it matches and what was searched for one, and
where the program came from. Each states only what was measured or read: a layer the
ablation did not show, a search that did not run, a path the folder does not hold are
said to be so.
"""

from __future__ import annotations

import re
from typing import Protocol

from ..campaign import known as known_issues
from .finding import Finding, area_of, category, deciding, ops_in
from .runs import Outcome, Row
from .upstream import Search, query_terms
from .values import Values


class Report(Protocol):
    """What these sentences read of issue.Report (which imports this module)."""

    finding: Finding
    outcome: Outcome
    second: Outcome | None
    rows: list[Row]
    ablated: bool
    values: Values | None
    known: known_issues.KnownIssue | None
    known_file: known_issues.KnownIssues
    upstream: Search | None

# The ablation's backends, lowest layer first, with the layer each adds.
_LAYERS = (("eager", "[dynamo]", "Dynamo"), ("aot_eager", "[aot_autograd]", "AOT autograd"),
           ("inductor", "[inductor]", "Inductor"))
_TRACEBACK_LINES = 400  # of a crash's verbose traceback, in the report
_VERBS = {"same-repro": "matches", "same-mechanism": "matches",
          "same-error": "raises the same error as", "same-symptom": "resembles"}


def component(report: Report) -> str:
    """The title's tag: the lowest layer whose ablation row fails as the script did;
    ``[torch.compile]`` when the ablation did not run or no row of it shows it."""
    found = _first_failing(report)
    return found[1] if found else "[torch.compile]"


def _first_failing(report: Report) -> tuple[str, str, str] | None:
    rows = {row.backend: row for row in report.rows if row.mode is None}
    for layer in _LAYERS:
        row = rows.get(layer[0])
        if row is not None and row.outcome is not None and \
                row.outcome.status == report.outcome.status:
            return layer
    return None


def first_layer(report: Report) -> str:
    """Which layer the ablation shows it in, with what the layers below gave."""
    if not report.ablated:
        return "not determined: the ablation was not run (`--no-ablation`)."
    found = _first_failing(report)
    if found is None:
        return "none of the ablation's backends shows it; only the recorded settings do."
    rows = {row.backend: row for row in report.rows if row.mode is None}
    names = [layer[0] for layer in _LAYERS]
    below = [f"`backend={name!r}` {rows[name].outcome.describe()}"  # type: ignore[union-attr]
             for name in names[:names.index(found[0])]
             if name in rows and rows[name].outcome is not None]
    text = f"{found[2]}: `backend={found[0]!r}` {report.outcome.status}"
    return text + (f", while {' and '.join(below)}." if below else
                   " (Dynamo alone, before AOT autograd and Inductor).")


def kind_line(report: Report) -> str:
    """Crash, silent wrong result or cosmetic, in bold, with what that means here."""
    finding = report.finding
    difference = deciding(finding)
    area = area_of(difference[0]) if difference else "output"
    kind = category(finding, report.outcome.status)
    if kind == "crash":
        backward = difference is not None and "backward_error" in difference[2]
        return ("**Kind: crash.** " + ("The compiled backward raises where eager's backward "
                                       "runs." if backward else "Compiling or running the "
                                       "compiled program raises where eager runs it."))
    if kind == "wrong result" and difference is not None and difference[1] == "exception":
        return ("**Kind: silent wrong result.** Eager and the compiled call do not raise the "
                "same way: one returns where the other raises.")
    if kind == "wrong result":
        return (f"**Kind: silent wrong result.** The compiled call returns without an error, "
                f"and its {area} differs from eager's.")
    agree = report.values is not None and not report.values.differences \
        and not report.values.note
    what = "the memory layout (strides) of the " + area if difference and \
        difference[1] == "stride" else "what was printed or warned"
    return (f"**Kind: cosmetic.** Only {what} differs"
            f"{'; the values agree' if agree else ''}.")


def traceback(report: Report) -> list[str]:
    """A crash's full traceback, from the second run (``TORCHDYNAMO_VERBOSE=1``)."""
    second = report.second
    if second is None or second.status != "raises":
        return []
    # the script ran from a scratch folder that is gone: call it what a reader saves it as
    text = re.sub(r'"[^"\n]*/eqrewrite-report-[^/"\n]+/run\d+\.py"', '"repro.py"',
                  second.completed.stderr)
    lines = text.rstrip().splitlines()
    if len(lines) > _TRACEBACK_LINES:
        cut = len(lines) - _TRACEBACK_LINES
        lines = lines[:50] + [f"... ({cut} lines left out) ..."] + lines[50 + cut:]
    return ["<details><summary>Full traceback (the script run again with "
            "<code>TORCHDYNAMO_VERBOSE=1</code>)</summary>", "", "```", *lines, "```", "",
            "</details>", ""]


def known_line(report: Report) -> str:
    """The known issue it matches, or that none does, always with what was searched."""
    searched = f"Searched: {_file(report.known_file)}; {_upstream(report)}."
    issue = report.known
    if issue is None:
        return f"no known issue matches. {searched}"
    state = issue.state or "state not recorded"
    state += f", fixed in {issue.fixed_in}" if issue.fixed_in else ""
    how = known_issues.MATCHES.get(issue.match, "")
    return (f"{_VERBS.get(issue.match, 'matches')} known issue #{issue.number} "
            f"({issue.title}; {state}): {issue.url}" + (f" ({how})" if how else "")
            + f". {searched}")


def _file(file: known_issues.KnownIssues) -> str:
    if file.path is None:
        return "no known-issues file (`--known-issues none`)"
    name = "eqrewrite's known-issues file" if file.path == known_issues.DEFAULT_FILE else \
        f"the known-issues file {file.path.name}"
    checked = f", checked upstream {file.checked}" if file.checked else ", no check date"
    return f"{name} ({len(file.issues)} entries{checked})"


def _upstream(report: Report) -> str:
    search = report.upstream
    if search is None:
        return "GitHub's issue search was not run (`--search-upstream` not given)"
    if search.error:
        return f"GitHub's issue search could not be run: {search.error}"
    token = "" if search.token else ", without a token"
    if not search.matches:
        return f"GitHub's issue search (`{search.query}`{token}) returned no issue"
    return (f"GitHub's issue search (`{search.query}`{token}) returned {search.total} "
            f"issues; the nearest {len(search.matches)} are listed below")


def near_matches(report: Report) -> list[str]:
    """GitHub's near matches, one a line (none when it was not searched)."""
    search = report.upstream
    if search is None or not search.matches:
        return []
    lines = ["Near matches (GitHub's issue search, unchecked):", ""]
    lines += [f"- #{m.number} {m.title} ({m.state}): {m.url}" for m in search.matches]
    return lines + [""]


def upstream_query(report: Report) -> str:
    finding = report.finding
    ops = ops_in(finding.program, list(finding.record.get("signature_ops") or ()),
                 finding.target["attribute"])
    error = report.outcome.message if report.outcome.status == "raises" else ""
    return query_terms(ops, error, list(finding.record.get("kinds") or ()))


def origin(finding: Finding) -> str:
    """Where the program came from, naming only a path the finding folder holds."""
    seeds = finding.record.get("seeds") or []
    held = (finding.folder / finding.source).is_file()
    where = (f"the program part of `{finding.source}` in the finding folder"
             if finding.source == "minimal.py" else f"`{finding.source}` of the finding folder"
             ) if held else "the finding's smallest program"
    if seeds:
        return (f"Found by differential testing of a generated program (seed "
                f"{', '.join(map(str, seeds))}); the program above is {where}.")
    return f"The program above is {where}."
