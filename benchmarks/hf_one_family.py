"""One transformers family, built as ``hf_generality.py`` builds it, run once under
``torch._dynamo.explain``: graphs and breaks printed, the eager output saved.

Meant to be run under ``eqrewrite run`` with and without the pack and the switches, to see what
one command leaves of a family's breaks and that the output does not change::

    python benchmarks/hf_one_family.py llava plain.pt
    eqrewrite run --package transformers benchmarks/hf_one_family.py llava pack.pt
    eqrewrite run --dynamic-sizes --package transformers benchmarks/hf_one_family.py llava both.pt

Arguments: the model type, the file the eager output goes to, and optionally the variant
(``forward`` by default). The transformers release is whichever is importable.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hf_families as families  # noqa: E402
import hf_workers as workers  # noqa: E402


def main(argv: list[str]) -> int:
    """Build, run eagerly, explain, save; print one line."""
    import torch
    import transformers

    family, out = argv[0], argv[1]
    variant = argv[2] if len(argv) > 2 else "forward"
    fn, kwargs, notes = families.build_transformers(transformers, family, variant)
    with torch.no_grad():
        eager = fn(**kwargs)
        explained = torch._dynamo.explain(fn)(**kwargs)
    torch.save(workers._tensors(eager), out)
    print(f"{family}:{variant}: inputs {notes['inputs']}, graphs {explained.graph_count}, "
          f"breaks {explained.graph_break_count}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: hf_one_family.py MODEL_TYPE OUTPUT.pt [VARIANT]")
    sys.exit(main(sys.argv[1:]))
