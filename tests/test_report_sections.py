"""The report's words, without running torch: the title's phrase from the recorded
difference and from measured values (both sides of NaN), the finding's kind, the first layer
the ablation shows, the known-issues line with what was searched, and GitHub's issue search
against a local fake server and an address nothing answers at.
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest
from eqrewrite.oracle.bugreport import sections, upstream, values
from eqrewrite.oracle.bugreport.finding import Finding, category, difference_phrase
from eqrewrite.oracle.bugreport.runs import Completed, Outcome, Row
from eqrewrite.oracle.campaign import known

TARGET = {"form": "function", "attribute": "program", "inputs": "get_inputs",
          "has_init_inputs": False}
PROGRAM = "import torch\n\n\ndef program(x):\n    return torch.var_mean(x)\n"


def finding(*differences: tuple[str, str, str], cls: str = "compiler-bug") -> Finding:
    record = {"class": cls, "verdict": "compiler-bug", "signature_ops": ["var_mean"],
              "kinds": [], "seeds": [7]}
    return Finding(Path("/nowhere"), record, PROGRAM, "program.py", TARGET,
                   {"backend": "inductor"}, differences, "eager")


def outcome(status: str, message: str = "") -> Outcome:
    return Outcome(status, message, Completed(1, "", "", 1.0))


# -- the title's phrase ---------------------------------------------------------------------


@pytest.mark.parametrize(("message", "phrase"), [
    ("first at index (0, 1): expected -nan, got -inf", "output is -inf where eager's is NaN"),
    ("first at index (0,): expected 0.5, got nan", "output is NaN where eager's is finite"),
    ("first at index (): expected nan, got 0", "output is finite where eager's is NaN"),
    ("NaN positions differ at 2 of 30 values", "NaN positions in the output differ from eager"),
])
def test_the_nan_side_is_read_from_the_record_never_guessed(message, phrase):
    assert difference_phrase(finding(("result['output'][1]", "nan", message))) == phrase


def test_a_wrong_value_outranks_a_lost_warning_beside_it():
    # compiler-bug-f5f4d84f4c63: a mean of 0 against NaN, and a warning compiled dropped
    both = finding(("result['printed']['warnings']", "structure", "expected list of length 1"),
                   ("result['output'][2]", "nan", "first at index (): expected nan, got 0"))
    assert difference_phrase(both) == "output is finite where eager's is NaN"
    assert category(both) == "wrong result"
    warning = finding(("result['printed']['warnings']", "structure", "length 1, got 0"))
    assert difference_phrase(warning) == "printed output structure differs from eager"
    assert category(warning) == "cosmetic"
    assert category(finding(("result['output']", "stride", "strides"))) == "cosmetic"
    assert category(finding(cls="compile-crash")) == "crash"
    backward = finding(("result['grads']", "structure", "unexpected keys ['backward_error']"))
    assert difference_phrase(backward) == "compiled backward raises where eager's runs"
    assert category(backward, "raises") == "crash"


def _values(eager: str, compiled: str, eager_kind: str, compiled_kind: str, path="[2]"):
    line = values._MARK + json.dumps({"differences": [
        {"path": path, "index": [], "eager": eager, "compiled": compiled,
         "eager_kind": eager_kind, "compiled_kind": compiled_kind, "differ": 1,
         "switched": int(eager_kind != compiled_kind), "total": 1}]})
    return values.parse(f"noise\n{line}\n", 0)


def test_the_measured_values_name_both_sides():
    mean = _values("NaN", "0", "NaN", "finite")
    assert values.headline(mean, "output") == "output is 0 where eager's is NaN"
    assert values.sentence(mean, "output") == ("At the single element of the output `[2]`, "
                                               "eager gives NaN and the compiled call 0 "
                                               "(1 of 1 values differ).")
    poisoned = _values("-1.68294", "NaN", "finite", "NaN", path="['gradients'][0]")
    assert values.headline(poisoned, "output") == "gradient is NaN where eager's is -1.68294"
    # finite on both sides: the title keeps the recorded kind
    assert values.headline(_values("1.5", "2", "finite", "finite"), "output") is None


def test_a_failed_values_probe_says_so():
    assert values.parse("", 1).note == "the values probe failed (exit 1)"
    assert values.parse("", None).note == "the values probe failed (timed out)"
    raised = values.parse(values._MARK + json.dumps({"error": "RuntimeError: x"}), 0)
    assert raised.note == "a run raised: RuntimeError: x" and raised.special is None


# -- the first layer ------------------------------------------------------------------------


def _report(status: str, rows: list[Row], ablated: bool = True):
    return SimpleNamespace(outcome=outcome(status), rows=rows, ablated=ablated)


def test_the_first_layer_is_the_lowest_row_that_fails_the_same_way():
    rows = [Row("eager", None, outcome("agrees")), Row("aot_eager", None, outcome("differs")),
            Row("inductor", None, outcome("differs")),
            Row("inductor", "reduce-overhead", None, "not run")]
    report = _report("differs", rows)
    assert sections.component(report) == "[aot_autograd]"
    assert sections.first_layer(report) == ("AOT autograd: `backend='aot_eager'` differs, "
                                            "while `backend='eager'` agrees.")
    # a row failing another way does not count
    rows[1] = Row("aot_eager", None, outcome("raises", "RuntimeError: other"))
    assert sections.component(report) == "[inductor]"


def test_no_layer_is_named_without_the_ablation():
    report = _report("differs", [], ablated=False)
    assert sections.component(report) == "[torch.compile]"
    assert sections.first_layer(report).startswith("not determined: the ablation was not run")
    none = _report("differs", [Row("eager", None, outcome("agrees"))])
    assert sections.first_layer(none).startswith("none of the ablation's backends shows it")


# -- known issues and what was searched ---------------------------------------------------


def _known_report(issue=None, search=None, path=known.DEFAULT_FILE):
    return SimpleNamespace(known=issue, upstream=search, known_file=known.read(path))


def test_no_match_says_what_was_searched():
    line = sections.known_line(_known_report())
    assert line == ("no known issue matches. Searched: eqrewrite's known-issues file "
                    f"({len(known.read(known.DEFAULT_FILE).issues)} entries, checked upstream "
                    "2026-11-28); GitHub's issue search was not run (`--search-upstream` not "
                    "given).")
    failed = upstream.Search("q", error="http://127.0.0.1:9 could not be reached (refused)")
    assert sections.known_line(_known_report(search=failed)).endswith(
        "GitHub's issue search could not be run: http://127.0.0.1:9 could not be reached "
        "(refused).")
    assert "no known-issues file (`--known-issues none`)" in sections.known_line(
        _known_report(path=None))


def test_a_symptom_only_match_is_not_called_a_match():
    issue = next(i for i in known.read(known.DEFAULT_FILE).issues if i.number == "185497")
    line = sections.known_line(_known_report(issue))
    assert line.startswith("resembles known issue #185497 (")
    assert "; open): https://github.com/pytorch/pytorch/issues/185497 (same symptom; its " \
           "reproducer was not compared)" in line


def test_near_matches_are_listed():
    found = upstream.Search("repo:pytorch/pytorch is:issue var_mean", (
        upstream.Match(197108, "var_mean of an empty tensor", "open",
                       "https://github.com/pytorch/pytorch/issues/197108"),), total=3,
        token=True)
    report = _known_report(search=found)
    assert "GitHub's issue search (`repo:pytorch/pytorch is:issue var_mean`) returned 3 " \
           "issues; the nearest 1 are listed below." in sections.known_line(report)
    assert sections.near_matches(report)[2] == (
        "- #197108 var_mean of an empty tensor (open): "
        "https://github.com/pytorch/pytorch/issues/197108")


# -- GitHub's issue search --------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    answer: tuple[int, bytes] = (200, b"")
    seen: list[tuple[str, str | None]] = []

    def do_GET(self):  # noqa: N802 - the http.server name
        _Handler.seen.append((self.path, self.headers.get("Authorization")))
        code, body = self.answer
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def github():
    """A fake GitHub API on 127.0.0.1: set ``_Handler.answer``, read ``_Handler.seen``."""
    server = HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Handler.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


ITEMS = {"total_count": 2, "items": [
    {"number": 197108, "title": "var_mean on an empty tensor", "state": "open",
     "html_url": "https://github.com/pytorch/pytorch/issues/197108"},
    {"number": 113167, "title": "Different behaviors on torch.var_mean", "state": "closed",
     "html_url": "https://github.com/pytorch/pytorch/issues/113167"}]}


def test_the_search_sends_the_query_and_token_and_reads_the_items(github):
    _Handler.answer = (200, json.dumps(ITEMS).encode())
    query = upstream.query_terms(["var_mean"], "", ["output/nan", "printed/structure"])
    assert query == "repo:pytorch/pytorch is:issue torch.compile var_mean nan structure"
    found = upstream.search(query, api=github, token="secret")
    assert not found.error and found.token and found.total == 2
    assert [(m.number, m.state) for m in found.matches] == [(197108, "open"), (113167, "closed")]
    path, authorization = _Handler.seen[0]
    assert path.startswith("/search/issues?")
    assert urllib.parse.parse_qs(path.partition("?")[2])["q"] == [query]
    assert authorization == "Bearer secret"


def test_the_api_address_and_token_come_from_the_environment(github, monkeypatch):
    _Handler.answer = (200, json.dumps(ITEMS).encode())
    monkeypatch.setenv("EQREWRITE_GITHUB_API", github)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    found = upstream.search("repo:pytorch/pytorch x")
    assert len(found.matches) == 2 and not found.token
    assert _Handler.seen[0][1] is None  # no token, no Authorization header


@pytest.mark.parametrize(("answer", "error"), [
    ((403, b'{"message": "API rate limit exceeded"}'),
     "answered HTTP 403 Forbidden: API rate limit exceeded"),
    ((200, b"<html>not json</html>"), "gave an answer that is not a search result"),
    ((200, b'{"total_count": 1}'), "gave an answer that is not a search result (KeyError"),
])
def test_a_failed_search_says_why(github, answer, error):
    _Handler.answer = answer
    found = upstream.search("q", api=github, token="")
    assert error in found.error and found.matches == ()


def test_an_unreachable_address_is_reported_not_raised():
    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    found = upstream.search("q", api=f"http://127.0.0.1:{port}", token="", timeout=5)
    assert found.error.startswith(f"http://127.0.0.1:{port} could not be reached (")


def test_crash_queries_keep_the_telling_words_of_the_error():
    query = upstream.query_terms([], "BackendCompilerFailed: backend='inductor' raised: "
                                 "RuntimeError: While executing unfold, functionalization "
                                 "encountered a tensor being mutated", [])
    assert query == ("repo:pytorch/pytorch is:issue torch.compile While executing unfold "
                     "functionalization encountered tensor")
