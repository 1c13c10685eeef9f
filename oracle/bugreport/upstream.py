"""GitHub's issue search for a finding (``eqrewrite report --search-upstream``): near matches
in pytorch/pytorch, found from the finding's op names and error text.

The query goes to ``GET {api}/search/issues`` with urllib, the token from ``$GITHUB_TOKEN``
when set (GitHub answers without one too, at a lower rate), the API's address from
``$EQREWRITE_GITHUB_API`` (default ``https://api.github.com``; tests point it at a local
server). Any failure (no network, a refusal, a rate limit, an answer that is not the API's)
is kept as a sentence: the report then says it could not search and why, never that
nothing was found.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

API = "https://api.github.com"
REPOSITORY = "pytorch/pytorch"
_LIMIT = 5  # near matches listed in the report
# Words of an error message that say nothing about which bug it is.
_NOISE = frozenset({"raised", "error", "backend", "inductor", "backendcompilerfailed",
                    "runtimeerror", "torchruntimeerror", "inductorerror", "the", "a", "an",
                    "of", "to", "in", "is", "and", "with", "when", "where", "was", "on",
                    "for", "not"})


@dataclass(frozen=True)
class Match:
    """One issue GitHub's search returned."""

    number: int
    title: str
    state: str
    url: str


@dataclass(frozen=True)
class Search:
    """What the search asked and what came back, or why it could not run (``error``)."""

    query: str
    matches: tuple[Match, ...] = ()
    total: int = 0
    error: str = ""
    token: bool = False  # was $GITHUB_TOKEN sent


def query_terms(ops: list[str], error: str, kinds: list[str]) -> str:
    """The search's query: the repository, the op names, then a few words of the error text
    (a crash) or the divergence kinds (a wrong result)."""
    words = ["torch.compile", *ops[:3]]
    if error:
        text = re.sub(r"\(.*?\)|'[^']*'|\"[^\"]*\"|`[^`]*`", " ", error)
        words += [w for w in re.findall(r"[A-Za-z_]{3,}", text)
                  if w.lower() not in _NOISE][:6]
    else:
        words += sorted({kind.partition("/")[2] for kind in kinds if "/" in kind})[:2]
    return f"repo:{REPOSITORY} is:issue " + " ".join(dict.fromkeys(words))


def search(query: str, api: str | None = None, token: str | None = None,
           timeout: float = 15.0) -> Search:
    """Ask GitHub's issue search; never raises (a failure is the result's ``error``)."""
    api = (api or os.environ.get("EQREWRITE_GITHUB_API") or API).rstrip("/")
    token = os.environ.get("GITHUB_TOKEN") if token is None else token
    request = urllib.request.Request(
        f"{api}/search/issues?" + urllib.parse.urlencode(
            {"q": query, "per_page": _LIMIT, "sort": "best-match"}),
        headers={"Accept": "application/vnd.github+json", "User-Agent": "eqrewrite-report",
                 **({"Authorization": f"Bearer {token}"} if token else {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data = json.loads(response.read().decode("utf-8"))
        items, total = data["items"], int(data.get("total_count", 0))
        found = tuple(Match(int(i["number"]), str(i["title"]), str(i["state"]),
                            str(i["html_url"])) for i in items[:_LIMIT])
    except urllib.error.HTTPError as error:
        return Search(query, error=f"{api} answered HTTP {error.code} {error.reason}"
                      f"{_why(error)}", token=bool(token))
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        return Search(query, error=f"{api} could not be reached ({reason})", token=bool(token))
    except (ValueError, KeyError, TypeError) as error:
        return Search(query, error=f"{api} gave an answer that is not a search result "
                      f"({type(error).__name__}: {error})", token=bool(token))
    return Search(query, found, total, token=bool(token))


def _why(error: urllib.error.HTTPError) -> str:
    """The API's own message (a rate limit, a bad token), when it sent one."""
    try:
        message = json.loads(error.read().decode("utf-8")).get("message", "")
    except (ValueError, OSError, AttributeError):
        message = ""
    return f": {message}" if message else ""
