"""The families ``hf_generality.py`` measures and how one case is built and counted: every
transformers model type (shrunk config, inputs from ``hf_inputs``), every timm module and
every diffusers model class (``hf_diffusers``), the worker that builds one case from one tree
and counts its breaks (run in a fresh process).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import hf_configs as cfg
import hf_diffusers as hfd
import hf_inputs as hfi
import hf_models as hfm
import hf_recipes as recipes
import hf_workers as hfw

BATCH = hfm.BATCH
DYNAMO_ONLY = "fails under Dynamo only"

# Builders (run in the worker process; the library is imported from the tree)
# --------------------------------------------------------------------------------------------

def _with_optional_inputs(kwargs: dict, model: Any, config: Any) -> dict:
    """``kwargs`` less an attention mask the forward does not take, plus decoder ids for an
    encoder-decoder model where they have none."""
    params = inspect.signature(model.forward).parameters
    if "attention_mask" in kwargs and "attention_mask" not in params:
        kwargs = {k: v for k, v in kwargs.items() if k != "attention_mask"}
    if (getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" in params
            and "decoder_input_ids" not in kwargs):  # a recipe's (Dia's codes) are kept
        ids = hfi.token_ids(hfi.special_ids(config.to_dict()))
        kwargs = {**kwargs, "decoder_input_ids": ids.flip(1)}
    return kwargs


def _on(kwargs: dict, device: str) -> dict:
    """``kwargs`` with every tensor moved to ``device``."""
    import torch

    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}


def _runs(fn: Any, kwargs: dict) -> None:
    """Call ``fn(**kwargs)`` eagerly without gradients, twice: counting calls it again, so a
    decode step must start from the same cache every time (raises what it raises)."""
    import torch

    with torch.no_grad():
        fn(**kwargs)
        fn(**kwargs)


def build_transformers(tf: Any, family: str, variant: str, device: str = "cpu"
                       ) -> tuple[Any, dict, dict]:
    """``(callable, kwargs, notes)`` of one transformers case that runs eagerly on ``device``.

    The config is the default one shrunk with its layer count capped, else (hybrid models)
    kept, else, as a last resort, with only its layers and vocabulary shrunk (its default
    widths: built only under DEFAULT_SIZED_LIMIT parameters); the inputs the first candidate
    that runs (drawn on the CPU, then moved). Raises the first error if nothing runs.
    """
    default = tf.AutoConfig.for_model(family).to_dict()
    auto = tf.AutoModelForCausalLM if variant == "decode" else tf.AutoModel
    options = {"experts_implementation": "eager"} if variant == "experts_eager" else {}
    errors = []
    mrope = _reads(tf, family, "mrope_section", default)  # read once: files, not the rung
    for layers, sizes in ((True, True), (False, True), (True, False)):
        try:
            changes = cfg.shrink(default, layers=layers, sizes=sizes, mrope=mrope)
            config = tf.AutoConfig.for_model(family, **recipes.configured(family, default,
                                                                          changes))
            if not sizes:
                _check_default_sized(auto, config, options)
            builder, config = _model_builder(tf, auto, config)
            torch_seed()
            model = builder(config, **options).eval().to(device)
            _check_callable(model)
            for label, make in _tries(family, model, config, variant):
                try:
                    kwargs = _on(_with_optional_inputs(make(), model, config), device)
                    given = hfi.modalities_given(model, kwargs)
                    fn, kwargs = (hfm._decode_step(model, True, kwargs, device)
                                  if variant == "decode" else (model, kwargs))
                    _runs(fn, kwargs)
                    return fn, kwargs, {"layers_capped": layers, "inputs": label,
                                        "modalities": hfi.modalities_taken(model),
                                        "modalities_given": given,
                                        "sizes": "tiny" if sizes else "default widths"}
                except hfm.NotApplicable:
                    raise
                except Exception as error:  # the next candidate input may fit
                    errors.append(error)
        except hfm.NotApplicable:
            raise
        except Exception as error:  # the next config may build
            errors.append(error)
    raise errors[0]


def _check_callable(model: Any) -> None:
    """Raise NotApplicable for a model with no forward of its own (Bark: generate only)."""
    import torch

    if type(model).forward is torch.nn.Module.forward:
        raise hfm.NotApplicable(f"{type(model).__name__} has no forward (it only generates)")


def _model_builder(tf: Any, auto: Any, config: Any) -> tuple[Callable[..., Any], Any]:
    """How the model is built and from which config: the auto class from the family's; the
    model class its model type names where the auto class does not know the config's class
    (Evolla's mapping names the model as its model type); or where the model class declares
    a sub-config's class (MusicGen's decoder), that class from that sub-config (the auto
    class refuses those)."""
    if type(config) not in auto._model_mapping:
        name = auto._model_mapping._model_mapping.get(config.model_type)
        # No class named either: the auto class raises its own error.
        return (getattr(tf, name)._from_config, config) if name else (auto.from_config,
                                                                       config)
    model_class = auto._model_mapping[type(config)]
    wanted = getattr(model_class, "config_class", None)
    if wanted is not None and not isinstance(config, wanted):
        for name in getattr(config, "sub_configs", {}):
            if isinstance(getattr(config, name, None), wanted):
                return model_class._from_config, getattr(config, name)
    return auto.from_config, config


# Parameters a default-widths model may have (float32: 1 GB), counted on the meta device.
DEFAULT_SIZED_LIMIT = 250_000_000


def _check_default_sized(auto: Any, config: Any, options: dict) -> None:
    """Raise unless the model ``config`` makes has at most DEFAULT_SIZED_LIMIT parameters."""
    import torch

    with torch.device("meta"):
        count = sum(p.numel() for p in auto.from_config(config, **options).parameters())
    if count > DEFAULT_SIZED_LIMIT:
        raise ValueError(f"default widths: {count / 1e6:.0f}M parameters, over the "
                         f"{DEFAULT_SIZED_LIMIT / 1e6:.0f}M a case may build")


def _tries(family: str, model: Any, config: Any, variant: str
           ) -> list[tuple[str, Callable[[], dict]]]:
    """The input candidates in the order tried (the family's recipe, then
    ``hf_inputs.candidates``, which may know no shape for a main input the recipe makes, with
    the inputs of a tower whose family has a recipe before those holding no modality),
    then, for a forward that takes ``use_cache``, each again without a cache: a hybrid model
    whose default config holds no attention layer cannot start a cache."""
    tries = recipes.candidates(family, model, config)
    try:
        generic = hfi.candidates(model, config)
    except ValueError:
        if not tries:
            raise
        generic = []
    # A tower's recipe after the generic inputs holding a modality, before those without.
    tries += [try_ for try_ in generic if "+" in try_[0]] + recipes.tower_candidates(
        model, config) + [try_ for try_ in generic if "+" not in try_[0]]
    if variant == "decode" or "use_cache" not in inspect.signature(model.forward).parameters:
        return tries
    return tries + [(f"{label}, use_cache=False", partial(_no_cache, make))
                    for label, make in tries]


def _no_cache(make: Callable[[], dict]) -> dict:
    """A candidate's inputs with ``use_cache=False``."""
    return {**make(), "use_cache": False}


def torch_seed() -> None:
    """Seed torch's global generator (weights are drawn from it)."""
    import torch

    torch.manual_seed(0)


def build_timm(timm: Any, family: str, variant: str, device: str = "cpu"
               ) -> tuple[Any, dict, dict]:
    """``(model, kwargs, notes)`` of one timm case on ``device``: the family's model, its
    default input size."""
    name = _timm_model(timm, family)
    torch_seed()
    model = timm.create_model(name, pretrained=False).eval().to(device)
    _, height, width = model.pretrained_cfg.get("input_size", (3, 224, 224))
    kwargs = {"x": hfi.randn(BATCH, 3, height, width).to(device)}
    _runs(model, kwargs)
    return model, kwargs, {"model": name}


def _timm_model(timm: Any, family: str) -> str:
    """The model of a timm module with the fewest parameters (built on the meta device)."""
    import torch

    sizes = {}
    for name in timm.list_models(module=family):
        try:
            with torch.device("meta"):
                model = timm.create_model(name, pretrained=False)
        except Exception:  # a model that cannot be built does not represent the module
            continue
        sizes[name] = sum(p.numel() for p in model.parameters())
    if not sizes:
        raise ValueError(f"no model of timm module {family!r} builds")
    return min(sizes, key=lambda name: (sizes[name], name))


@dataclass(frozen=True)
class Library:
    """A measured library: its package, how to list its families and build a case."""

    package: str
    families: Callable[[Any], dict[str, tuple[str, ...]]]  # family -> its variants
    build: Callable[..., tuple[Any, dict, dict]]  # build(package, family, variant, device)
    code: Callable[[Any, str], str]  # a family's code in the package, as an --exclude glob


def _transformers_families(tf: Any) -> dict[str, tuple[str, ...]]:
    """Every AutoModel model type; causal LMs also get "decode", families with a switchable
    experts layer "experts_eager"."""
    from transformers.models.auto import modeling_auto

    causal = modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    root = Path(tf.__file__).parent
    return {name: ("forward",) + (("decode",) if name in causal else ())
            + (("experts_eager",) if _switchable_experts(root / _transformers_code(tf, name))
               else ())
            for name in sorted(modeling_auto.MODEL_MAPPING_NAMES)}


def _reads(tf: Any, family: str, name: str, default: dict | None = None) -> bool:
    """Whether a transformers family's modeling code mentions ``name`` (read as text), or,
    given its ``default`` config, the code of a model type a sub-config names (GLM-4.6V's
    text model is GLM-4V's)."""
    root = Path(tf.__file__).parent
    types = [family] + [value["model_type"] for value in (default or {}).values()
                        if cfg._is_sub_config(value)]
    folders = {root / _transformers_code(tf, kind) for kind in types}
    return any(name in path.read_text(encoding="utf-8")
               for folder in folders for path in folder.glob("modeling_*.py"))


def _switchable_experts(folder: Path) -> bool:
    """Whether a model folder's code declares an experts layer whose implementation can be
    chosen (the decorator transformers 5.x puts on it; read as text, nothing imported)."""
    return any("@use_experts_implementation" in path.read_text(encoding="utf-8")
               for path in folder.glob("modeling_*.py"))


def _transformers_code(tf: Any, family: str) -> str:
    """The model folder of a transformers model type."""
    from transformers.models.auto import configuration_auto

    return f"models/{configuration_auto.model_type_to_module_name(family)}/"


def _timm_families(timm: Any) -> dict[str, tuple[str, ...]]:
    """Every timm module that registers models."""
    return {name: ("forward",) for name in sorted(timm.list_modules())}


LIBRARIES = {"transformers": Library("transformers", _transformers_families, build_transformers,
                                     _transformers_code),
             "timm": Library("timm", _timm_families, build_timm,
                             lambda timm, family: f"models/{family}.py"),
             "diffusers": Library("diffusers", hfd.families, hfd.build, hfd.code)}


def run_worker(spec: dict) -> dict:
    """Build one case from one tree (a "skipped" record if it fails) and count its breaks."""
    import torch

    # LIBRARIES is keyed by package name.
    library = LIBRARIES[spec["package"]]
    package = hfw._import_tree(spec["tree_parent"], library.package)
    torch.set_num_threads(spec["threads"])
    hfw._apply_dynamo_settings(spec)
    family, variant = spec["case"].rsplit(":", 1)
    try:
        model, kwargs, notes = library.build(package, family, variant)
    except hfm.NotApplicable as reason:  # e.g. a decode step of a model without a cache
        return {**_versions(package), "case": spec["case"], "tree": spec["tree"],
                "not_applicable": str(reason)}
    except Exception as error:  # any failure: not buildable generically
        return {**_versions(package), "case": spec["case"], "tree": spec["tree"],
                "skipped": _first_line(error)}
    torch_seed()
    try:
        return {**hfw.measure(model, kwargs, spec, package), **notes}
    except Exception as error:  # runs eagerly (built above), fails once Dynamo traces it
        return {**_versions(package), "case": spec["case"], "tree": spec["tree"],
                "skipped": f"{DYNAMO_ONLY}: {_first_line(error)}"}


def build_case(package: Any, case: str, device: str) -> tuple[Any, dict]:
    """``(callable, kwargs)`` of a "family:variant" case of ``package`` (imported from a tree)
    on ``device``: the builder hf_workers' latency workers call."""
    family, variant = case.rsplit(":", 1)
    fn, kwargs, _ = LIBRARIES[package.__name__].build(package, family, variant, device)
    return fn, kwargs


def _versions(package: Any) -> dict[str, str]:
    """The measured package's and torch's versions, as a worker record carries them."""
    import torch

    return {f"{package.__name__}_version": package.__version__,
            "torch_version": torch.__version__}


def _first_line(error: Exception) -> str:
    """``Type: first line of the message`` (300 characters at most)."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0][:300] if text else ''}"
