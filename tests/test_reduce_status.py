"""``eqrewrite reduce``'s exit status, as the reduction's ``Result`` states it."""

from __future__ import annotations

from pathlib import Path

import pytest
from eqrewrite.oracle.minimising.outputs import Result
from eqrewrite.oracle.minimising.signature import Signature, Tally


def _result(verified: dict[str, int | None]) -> Result:
    signature = Signature("bug", (None, None), (("out", "value"),))
    return Result(Path("f"), "program", signature, {}, {}, Tally(), 1.0, None, False,
                  Path("f/reduced"), Path("f/minimal.py"), verified=verified)


@pytest.mark.parametrize(("verified", "status"), [
    ({}, 0),                                                 # --no-verify: nothing checked
    ({"reduced/repro.py": 1, "minimal.py": 1}, 0),           # both show the finding
    ({"reduced/repro.py": 1, "minimal.py": 0}, 0),           # minimal.py compares less
    ({"reduced/repro.py": 1, "minimal.py": None}, 0),        # no minimal.py written
    ({"reduced/repro.py": 0, "minimal.py": 1}, 1),           # the reduced one passes
    ({"reduced/repro.py": 1, "minimal.py": 2}, 1),           # minimal.py is broken
])
def test_status_is_one_only_when_verification_failed(verified, status):
    assert _result(verified).status == status
