"""The kinds of the equivalence pack (``rules/equivalences.yaml``), collected in one place
so that registering them touches a single line of the kind registry."""

from __future__ import annotations

from .interpolate import InterpolateSize
from .literal import FloatLiteral
from .reshape import ViewReshape
from .roundtrip import TransposeRoundTrip
from .setitem import SetitemCopy

EQUIVALENCE_KINDS = (FloatLiteral, InterpolateSize, SetitemCopy, ViewReshape,
                     TransposeRoundTrip)
