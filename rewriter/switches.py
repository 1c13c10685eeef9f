"""Dynamo switches for the import hook: ``--dynamo-config KEY=VALUE`` and
``--dynamic-sizes`` read (as the oracle's ``--dynamo-config`` reads them), checked against
``torch._dynamo.config`` and set on it as soon as that module has run.

``DynamoSwitches`` checks and sets them; ``SwitchingLoader`` wraps the loader of
``torch._dynamo.config`` so that they are set before the import returns the module to anyone
(and so before any of the program's code compiles). Never imports torch: the module is
handed over by the import system, or found in ``sys.modules``.
"""

from __future__ import annotations

import difflib
import sys
import types
from collections.abc import Iterable, Mapping
from importlib.abc import Loader
from importlib.machinery import ModuleSpec
from typing import Any

DYNAMO_CONFIG = "torch._dynamo.config"
# ``--dynamic-sizes``: Dynamo captures ``.item()`` values and data-dependent output shapes
# (``nonzero``, boolean masks) as symbolic values instead of breaking the graph there.
DYNAMIC_SIZES: Mapping[str, object] = types.MappingProxyType(
    {"capture_scalar_outputs": True, "capture_dynamic_output_shape_ops": True})


class SwitchError(Exception):
    """A switch that cannot be set as asked: malformed, unknown to Dynamo, of the wrong
    type."""


def parse_switch_value(text: str) -> object:
    """``true``/``false``/``none``, numbers, or the text itself: as the oracle's
    ``--dynamo-config`` reads a value (a test keeps the two alike; the rewriter may not
    import the oracle)."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def parse_switches(pairs: Iterable[str], dynamic_sizes: bool = False) -> dict[str, object]:
    """``KEY=VALUE`` texts (``--dynamo-config``) as switches; ``dynamic_sizes`` adds
    ``DYNAMIC_SIZES`` first, so that a switch named explicitly wins over the shorthand."""
    switches: dict[str, object] = dict(DYNAMIC_SIZES) if dynamic_sizes else {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SwitchError(f"--dynamo-config: expected KEY=VALUE, got {pair!r}")
        switches[key.strip()] = parse_switch_value(value.strip())
    return switches


class DynamoSwitches:
    """The ``torch._dynamo.config`` switches a hook sets, and when it set them."""

    def __init__(self, values: Mapping[str, object]):
        for name in values:
            if not all(part.isidentifier() for part in str(name).split(".")):
                raise SwitchError(f"{name!r} is not a {DYNAMO_CONFIG} switch name")
        self.values = dict(values)
        self.applied: str | None = None  # "installation" or "import": when they were set
        self.error: SwitchError | None = None  # the refusal raised into the program's import

    @property
    def pending(self) -> bool:
        """Switches to set that are not set yet."""
        return bool(self.values) and self.applied is None

    def check(self, config: types.ModuleType) -> None:
        """Refuse a name ``config`` does not have (with its close matches), and a value
        other than true or false for a boolean switch (``=off`` would read as true)."""
        known = list(getattr(config, "_config", None) or
                     (n for n in vars(config) if not n.startswith("_")))
        for name, value in self.values.items():
            if name not in known:
                close = difflib.get_close_matches(name, known, n=3)
                hint = f" (did you mean {', '.join(close)}?)" if close else ""
                raise SwitchError(f"unknown {DYNAMO_CONFIG} switch {name!r}{hint}")
            if isinstance(getattr(config, name, None), bool) and not isinstance(value, bool):
                raise SwitchError(f"{DYNAMO_CONFIG}.{name} must be true or false, "
                                f"got {value!r}")

    def apply(self, config: types.ModuleType, when: str) -> None:
        """Check the switches, then set them all on ``config``."""
        self.check(config)
        for name, value in self.values.items():
            try:
                setattr(config, name, value)
            except Exception as error:  # noqa: BLE001 - the config module's own refusal
                raise SwitchError(f"cannot set {DYNAMO_CONFIG}.{name} = {value!r}: "
                                f"{error}") from None
        self.applied = when

    def apply_on_import(self, config: types.ModuleType) -> None:
        """``apply`` as the config module is imported; a refusal is kept, so that ``run``
        reports it as its own error even when the program's traceback would hide it."""
        try:
            self.apply(config, "import")
        except SwitchError as error:
            self.error = error
            raise

    def to_json(self) -> dict[str, Any]:
        """The switches (values JSON can hold, others as their repr) and when they were set
        (None: not set, since the program never imported Dynamo)."""
        plain = (bool, int, float, str, type(None))
        return {"switches": {k: v if isinstance(v, plain) else repr(v)
                             for k, v in self.values.items()},
                "applied": self.applied}


class SwitchingLoader(Loader):
    """The loader of ``torch._dynamo.config``, wrapped: it runs the module, then sets the
    switches before the import returns it to anyone (and so before anything compiles)."""

    def __init__(self, loader: Loader, switches: DynamoSwitches):
        self._loader = loader
        self._switches = switches

    def create_module(self, spec: ModuleSpec) -> types.ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self._loader.exec_module(module)
        # The import returns what sys.modules holds (install_config_module changes the
        # module's class in place, but a module may replace itself there).
        self._switches.apply_on_import(sys.modules.get(module.__name__, module))

    def __getattr__(self, name: str) -> Any:
        # get_source, get_filename, is_package...: the wrapped loader's (inspect, linecache)
        loader = self.__dict__.get("_loader")
        if loader is None:
            raise AttributeError(name)
        return getattr(loader, name)
