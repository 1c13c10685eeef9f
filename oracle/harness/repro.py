"""Standalone reproducers for eager-vs-compiled disagreements that the oracle calls bugs.

A reproducer is a folder: ``repro.py``, the target's saved weights (``state.pt``) and a copy
of the oracle modules that build, run and judge a target (``_eqrewrite_oracle/``). It needs
only torch and the target's source tree; it runs the target eagerly twice and compiled once
with the same seed, weights and settings, judges the difference with the same rules as the
oracle (exact dtypes exactly, tolerances, NaN signs in strict mode, the float64 reference and
the sensitivity check) and exits 1 exactly when the verdict is the finding's (``FAILS``:
``compiler-bug``, or ``compile-error`` for a compiled run that raises where eager does not),
0 otherwise, so it can be attached to a report or bisected over torch versions on its own.
"""

from __future__ import annotations

import re
from pathlib import Path

from .. import formats
from ..judging import compare as cmp
from ..judging.protocol import RunRequest
from ..judging.settings import CompileSettings, Target

_TEMPLATE = '''\
"""Reproducer written by eqrewrite's oracle for {name}.

{headline} Exits 1 while the oracle's verdict for this
target is {verdict}, 0 otherwise. Needs only torch and the source tree below.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = {root!r}
sys.path[:0] = [str(HERE), ROOT] + {extra_paths!r}

import torch  # noqa: E402

from _eqrewrite_oracle.compare import CompareOptions  # noqa: E402
from _eqrewrite_oracle.protocol import RunRequest, Variant  # noqa: E402
from _eqrewrite_oracle.replay import replay  # noqa: E402
from _eqrewrite_oracle.settings import CompileSettings, Target, TargetForm  # noqa: E402

STATE = HERE / "state.pt"
TARGET = {target}
SETTINGS = {settings_value}
REQUEST = RunRequest(TARGET, SETTINGS, Variant.EAGER, seed={seed},
                     state=STATE.read_bytes() if STATE.exists() else None, deadline=3600.0)
OPTIONS = CompareOptions(scale={scale!r}, strict={strict!r})
FAILS = {verdict!r}  # the verdict this reproducer shows

if __name__ == "__main__":
    print(f"torch {{torch.__version__}}; {{SETTINGS.describe()}}")
    verdict = replay(ROOT, REQUEST, OPTIONS)
    sys.exit(1 if verdict.value == FAILS else 0)
'''


FAILING_VERDICTS = ("compiler-bug", "compile-error")  # what a reproducer can show


def write_reproducer(folder: Path, root: Path, request: RunRequest,
                     options: cmp.CompareOptions, verdict: str = "compiler-bug") -> Path:
    """Write ``<folder>/repro_<target>/`` and return the path of its ``repro.py``, which
    exits 1 while the verdict is ``verdict``."""
    if verdict not in FAILING_VERDICTS:
        raise ValueError(f"a reproducer shows one of {FAILING_VERDICTS}, not {verdict!r}")
    settings = request.settings.describe()
    headline = (f"Eager and torch.compile ({settings}) disagree." if verdict == "compiler-bug"
                else f"torch.compile ({settings}) raises where eager does not.")
    target_dir = folder / f"repro_{re.sub(r'[^A-Za-z0-9_]+', '_', request.target.name)}"
    formats.vendor_core(target_dir / formats.CORE_PACKAGE)
    if request.state is not None:
        (target_dir / formats.STATE).write_bytes(request.state)
    script = target_dir / formats.SCRIPT
    script.write_text(_TEMPLATE.format(
        name=request.target.name, headline=headline, verdict=verdict, root=str(root),
        extra_paths=_backend_paths(request.settings.backend),
        target=_target_source(request.target),
        settings_value=_settings_source(request.settings), seed=request.seed,
        scale=options.scale, strict=options.strict), encoding="utf-8")
    return script


def _target_source(target: Target) -> str:
    file = f"Path({target.file.as_posix()!r})" if target.file is not None else "None"
    return (f"Target({target.name!r}, {target.attribute!r}, TargetForm.{target.form.name}, "
            f"{file}, {target.inputs!r}, {target.has_init_inputs!r})")


def _settings_source(settings: CompileSettings) -> str:
    return (f"CompileSettings(backend={settings.backend!r}, mode={settings.mode!r}, "
            f"dynamic={settings.dynamic!r}, fullgraph={settings.fullgraph!r}, "
            f"inductor_config={settings.inductor_config!r}, "
            f"dynamo_config={settings.dynamo_config!r}, strict={settings.strict!r}, "
            f"raises={settings.raises!r}, tolerance_scale={settings.tolerance_scale!r}, "
            f"inference={settings.inference!r})")


def _backend_paths(backend: str) -> list[str]:
    """Folders to put on sys.path so a ``module:function`` backend imports on its own."""
    import importlib.util

    if ":" not in backend:
        return []
    module = backend.partition(":")[0]
    try:
        spec = importlib.util.find_spec(module.split(".")[0])
    except (ImportError, ValueError):
        return []
    if spec is None or spec.origin is None:
        return []
    origin = Path(spec.origin)
    return [str(origin.parent.parent if origin.name == "__init__.py" else origin.parent)]
