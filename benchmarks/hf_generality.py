"""Graph breaks before and after a rule pack on every model family a library has.

``hf_graph_breaks.py`` measures nine hand-written transformers models; a pack tuned on them may
not carry over. This benchmark enumerates every family generically and splits them in two
halves by a hash of the name (``dev``: the half rules may be developed on; ``held-out``: the
half that says whether they generalise), so no one picks the families by whether they break.

Libraries (``--library``):

* ``transformers``: every model type of ``MODEL_MAPPING_NAMES``, built with
  ``AutoModel.from_config`` from ``AutoConfig.for_model(model_type)`` shrunk by ``shrink``
  (width 64, 4 heads, 2 layers, vocabulary 128, ... nested sub-configs alike), inputs from
  ``hf_inputs.candidates`` (token ids with the images, videos, audio or boxes the forward
  takes and their placeholder tokens, richest first; the label of the one that ran is kept).
  Variants: ``forward`` for every family and, for the causal LMs
  (``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``), ``decode``: one cached step after an eager prefill;
  for the families whose experts layer can switch implementation (5.x's
  ``@use_experts_implementation``), ``experts_eager``: ``forward`` with
  ``experts_implementation="eager"``, the per-expert dispatch loop (5.x picks ``grouped_mm``
  by default where it can; the loop is what runs where it cannot, and what 4.x always runs).
* ``timm``: one model per timm module (the one with the fewest parameters, counted on the meta
  device), ``pretrained=False``, its default input size, batch 2. Variant ``forward``.

Each (tree, case) pair runs in a fresh worker process (``hf_workers.run_case``) that
imports the package from ``WORKDIR/LIBRARY/orig`` or ``.../rew``; a family whose model cannot
be built or run eagerly is reported as skipped, with the error. The rewritten tree is measured
only on the cases that break in the original one (``--check-unbroken``: on every case, to see
that none gains breaks). ``--original-only`` measures the original tree alone: the quick scan.
Break counts and outputs are always taken on the CPU.

Every mode of ``--modes`` (default: both) is measured: ``default`` (no Dynamo switch) and
``switches`` (``--dynamo-config``'s, else the two capture switches of ``eqrewrite run
--dynamic-sizes``), each with its own records folder; the breaks removed are printed per half
for each mode, side by side.

Then, unless ``--skip-latency``, every case whose breaks dropped (both trees measured, eager
outputs equal) is timed compiled, with the latency workers of ``hf_workers.py``
(``run_latency``): steady state (both trees in one process, ``--backend``, two warm-up calls,
then the median of ``--repeats`` alternating calls) and cold start (the first call,
compilation included, each tree in a fresh process with an empty Inductor cache,
``--cold-repeats`` times), on ``--device`` (the model and its inputs moved there).
``--latency-cases N`` times only the N cases with the most breaks removed (ties by name). A
per-case table and the geometric means of the after/before ratios are printed, and saved
with ``--json``.

The transformers release is whichever is importable (e.g. ``PYTHONPATH=DIR`` with a
``pip install --target DIR transformers==5.24.0`` folder);
timm likewise (with a torchvision that imports on the installed torch).

Examples::

    python benchmarks/hf_generality.py --original-only --workdir W --jobs 2 --json scan.json
    python benchmarks/hf_generality.py --workdir W --reuse-original --split held-out
    python benchmarks/hf_generality.py --library timm --families resnet,vision_transformer
    python benchmarks/hf_generality.py --workdir W2 --families jetmoe --modes switches \\
        --dynamo-config capture_scalar_outputs=true
    python benchmarks/hf_generality.py --workdir W --reuse-original --reuse-trees \\
        --reuse-records --latency-cases 5 --device cuda   # time an earlier run's cases
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import statistics
import sys
import tempfile
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import hf_inputs as hfi
import hf_models as hfm
import hf_trees
import hf_workers as hfw

BATCH, SEQ = hfm.BATCH, hfm.SEQ
WIDTH, HEADS, KV_HEADS, HEAD_DIM, FFN, LAYERS, VOCAB = 64, 4, 2, 16, 64, 2, 128
POSITIONS, IMAGE, EXPERTS, TOP_K = 128, 64, 4, 2
SPLITS = ("dev", "held-out")

# Config fields and the value they shrink to (only ever down: a smaller default is kept).
_CAPS: dict[str, int] = {
    **dict.fromkeys(("hidden_size", "d_model", "n_embd", "embed_dim", "dim", "word_embed_proj_dim",
                     "projection_dim", "out_hidden_size"), WIDTH),
    **dict.fromkeys(("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers",
                     "decoder_layers", "num_decoder_layers", "num_encoder_layers"), LAYERS),
    **dict.fromkeys(("num_attention_heads", "n_head", "n_heads", "num_heads",
                     "encoder_attention_heads", "decoder_attention_heads"), HEADS),
    **dict.fromkeys(("num_key_value_heads", "num_kv_heads", "multi_query_group_num"), KV_HEADS),
    **dict.fromkeys(("intermediate_size", "ffn_dim", "encoder_ffn_dim", "decoder_ffn_dim", "d_ff",
                     "n_inner", "hidden_dim", "moe_intermediate_size", "ffn_hidden_size",
                     "shared_expert_intermediate_size"), FFN),
    **dict.fromkeys(("max_position_embeddings", "n_positions", "max_source_positions",
                     "max_target_positions"), POSITIONS),
    **dict.fromkeys(("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"),
                    EXPERTS),
    **dict.fromkeys(("num_experts_per_tok", "moe_topk", "num_selected_experts"), TOP_K),
    **dict.fromkeys(("n_group", "topk_group"), 1),  # expert groups must divide the experts
    # Multi-head latent attention (DeepSeek-V2 and after): its own head sizes and ranks.
    **dict.fromkeys(("qk_rope_head_dim", "qk_nope_head_dim"), HEAD_DIM // 2),
    **dict.fromkeys(("v_head_dim", "kv_lora_rank", "rotary_dim"), HEAD_DIM),
    "q_lora_rank": 2 * HEAD_DIM,
    "image_size": IMAGE,
}
# Head sizes that are width / heads in the default config: set so that they stay so.
_HEAD_SIZES = ("head_dim", "d_kv", "kv_channels")
_LAYER_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers",
               "decoder_layers", "num_decoder_layers", "num_encoder_layers")
_TOKEN_SUFFIXES = ("_token_id", "_token_index")


# --------------------------------------------------------------------------------------------
# Pure parts: the split and the config shrinker (no torch, no transformers)
# --------------------------------------------------------------------------------------------

def split_of(family: str) -> str:
    """"dev" or "held-out", fixed by the first byte of the family name's SHA-256."""
    return SPLITS[hashlib.sha256(family.encode()).digest()[0] % 2]


def _is_int(value: Any) -> bool:
    """An int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def _is_sub_config(value: Any) -> bool:
    """A nested config as ``to_dict()`` writes it: a dict that names its model type."""
    return isinstance(value, dict) and "model_type" in value


def _shrink_token(value: Any, spare: dict[int, int]) -> Any:
    """A special token id (or list of ids) moved below VOCAB; ``spare`` maps each id moved
    to the one it got, counting down from VOCAB - 1 so that distinct ids stay distinct."""
    if isinstance(value, list):
        return [_shrink_token(v, spare) for v in value]
    if not _is_int(value) or value < VOCAB:
        return value
    return spare.setdefault(value, VOCAB - 1 - len(spare))


def _is_vocabulary(key: str) -> bool:
    """A vocabulary size field: vocab_size, vocab_size_per_layer_input, decoder_vocab_size."""
    return key == "vocab_size" or key.startswith("vocab_size_") or key.endswith("_vocab_size")


def _derived_head_size(values: Mapping[str, Any], key: str) -> bool:
    """Whether ``values[key]`` is the default width divided by the default head count."""
    width = next((values[k] for k in ("hidden_size", "d_model", "n_embd") if _is_int(
        values.get(k))), None)
    heads = next((values[k] for k in ("num_attention_heads", "num_heads", "n_head") if _is_int(
        values.get(k))), None)
    return bool(width and heads) and values[key] * heads == width


def shrink(values: Mapping[str, Any], spare: dict[int, int] | None = None,
           layers: bool = True, mrope: bool = False, widths: set[int] | None = None
           ) -> dict[str, Any]:
    """The fields of a config's ``to_dict()`` to change for a tiny model.

    Size fields are capped (``_CAPS``), head sizes kept at width / heads where the default has
    them so, special token ids moved below the vocabulary, and nested sub-configs (dicts with
    a ``model_type``) shrunk the same way and returned whole, since a composite config
    rebuilds them from the dict. With ``layers`` layer counts are capped too, at LAYERS or at
    the first layers that hold every kind of layer a per-layer type list names (a hybrid
    model's first attention layer may follow several linear ones; ``hf_inputs.layer_prefix``),
    and per-layer lists and dicts cut alike; without, all are kept. Multimodal rotary
    sections (``mrope_section``: three parts of half a head) are scaled to the shrunk head;
    with ``mrope`` (a family whose code reads them with a default) they are set where absent.
    Multi-head attention stays multi-head, and ``*_dim``/``*hidden_size``/``*_groups`` fields
    equal to a width of the config tree (``widths``: a projection's input, a depthwise
    convolution's groups) shrink with it.
    """
    spare = {} if spare is None else spare
    widths = _widths(values) if widths is None else widths
    # A backbone names the stages it outputs: its stages stay (a tiny width keeps it small).
    backbone = "stage_names" in values and bool(values.get("out_features")
                                                 or values.get("out_indices"))
    keep = hfi.layer_prefix(values, LAYERS) if layers and not backbone else None
    changes: dict[str, Any] = {}
    for key, value in values.items():
        if _is_sub_config(value) and value["model_type"] == "timm_backbone":
            # The library's own ResNet with the same stages: timm needs a torchvision that
            # imports beside this torch, which PyPI does not have.
            changes[key] = {"model_type": "resnet", "out_indices": value.get("out_indices"),
                            "depths": [1, 1, 1, 1], "hidden_sizes": [32, 64, 128, 256],
                            "embedding_size": 32}
        elif _is_sub_config(value):
            changes[key] = {**value, **shrink(value, spare, layers, mrope, widths)}
        elif key in _LAYER_KEYS:
            if keep is not None and _is_int(value) and value > keep:
                changes[key] = keep
        elif key in _KV_KEYS and _is_int(value) and value == values.get(
                "num_attention_heads") and value > HEADS:
            changes[key] = HEADS  # multi-head attention stays so (some configs insist)
        elif key in _CAPS and _is_int(value) and value > _CAPS[key]:
            changes[key] = _CAPS[key]
        elif (key in _HEAD_KEYS and isinstance(value, list) and value
              and all(_is_int(v) for v in value) and max(value) > HEADS):
            changes[key] = [HEADS] * len(value)  # heads per stage: each divides every width
        elif _is_vocabulary(key) and _is_int(value) and value > VOCAB:
            changes[key] = VOCAB
        elif key in _HEAD_SIZES and _is_int(value) and _derived_head_size(values, key):
            changes[key] = HEAD_DIM
        elif value is None and (key in _HEAD_SIZES or (key in _TOP_K_KEYS and any(
                _is_int(values.get(k)) for k in _EXPERT_KEYS))):
            # Unset in the default, read by the code: the tiny model's value (width / heads;
            # top-k of the experts a config does set).
            changes[key] = HEAD_DIM if key in _HEAD_SIZES else TOP_K
        elif key in ("use_timm_backbone", "use_pretrained_backbone") and value is True:
            changes[key] = False  # the library's own backbone: no timm, no download
        elif key.endswith(_TOKEN_SUFFIXES) and _shrink_token(value, spare) != value:
            changes[key] = _shrink_token(value, spare)
        elif (key.endswith(("_dim", "hidden_size", "_groups")) and "head" not in key
              and _is_int(value) and value in widths and value > WIDTH):
            changes[key] = WIDTH  # a width tied to a model's width (validators check it)
    if keep is not None:
        changes.update(_cut_per_layer(values, keep, changes))
    changes.update(_mrope(values, mrope, changes.get("head_dim", values.get("head_dim"))))
    return changes


_KV_KEYS = ("num_key_value_heads", "num_kv_heads", "multi_query_group_num")
_HEAD_KEYS = ("num_attention_heads", "num_heads", "n_head", "n_heads")
_EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
_TOP_K_KEYS = ("num_experts_per_tok", "moe_topk", "num_selected_experts")
_WIDTH_KEYS = ("hidden_size", "d_model", "n_embd", "embed_dim")


def _widths(values: Mapping[str, Any]) -> set[int]:
    """Every model width of a config dict and its sub-configs (fields tied to one shrink with
    it: a projection's input, a codebook that must equal the width)."""
    found = {v for k, v in values.items() if k in _WIDTH_KEYS and _is_int(v)}
    for value in values.values():
        if _is_sub_config(value):
            found |= _widths(value)
    return found


def _mrope(values: Mapping[str, Any], inject: bool, head: Any) -> dict[str, Any]:
    """Multimodal rotary sections (three parts of half a rotary head) scaled to the shrunk
    rotary head (``qk_rope_head_dim``, else ``head``: the head size as shrunk, else HEAD_DIM);
    with ``inject`` (a family whose code reads them with a default) set where the text
    config's rotary parameters lack them (never on a vision tower's axial ones)."""
    rope = values.get("rope_parameters")
    if not (isinstance(rope, dict) and _is_int(values.get("hidden_size"))):
        return {}
    if not ("mrope_section" in rope or (inject and rope.get("rope_type") not in (None, "axial"))):
        return {}
    rotary = values.get("qk_rope_head_dim")
    factor = rope.get("partial_rotary_factor", values.get("partial_rotary_factor")) or 1
    half = int((min(rotary, _CAPS["qk_rope_head_dim"]) if _is_int(rotary)
                else head if _is_int(head) else HEAD_DIM) * factor) // 2
    section = rope.get("mrope_section") or [16, 24, 24]
    return {"rope_parameters": {**rope, "mrope_section": _scaled(section, half)}}


def _scaled(parts: list[int], total: int) -> list[int]:
    """``parts`` scaled to sum to ``total``, each at least 1, the rest on the last."""
    scaled = [max(1, part * total // sum(parts)) for part in parts[:-1]]
    return scaled + [total - sum(scaled)]


def _cut_per_layer(values: Mapping[str, Any], keep: int, changed: Mapping[str, Any]
                   ) -> dict[str, Any]:
    """Per-layer fields cut to the first ``keep`` layers (as ``changed`` has them, else as
    ``values`` do): lists as long as a layer count, and dicts keyed by layer index
    (``per_layer_config``)."""
    counts = {values[k] for k in _LAYER_KEYS if _is_int(values.get(k))} - {keep}
    changes: dict[str, Any] = {}
    for key in values:
        value = changed.get(key, values[key])
        if isinstance(value, list) and len(value) in counts and len(value) > keep:
            changes[key] = value[:keep]
        elif ("layer" in key and isinstance(value, dict) and value
              and all(str(k).isdigit() for k in value) and any(int(k) >= keep for k in value)):
            changes[key] = {k: v for k, v in value.items() if int(k) < keep}
    return changes


# --------------------------------------------------------------------------------------------
# Builders (run in the worker process; the library is imported from the tree)
# --------------------------------------------------------------------------------------------

def _with_optional_inputs(kwargs: dict, model: Any, config: Any) -> dict:
    """``kwargs`` less an attention mask the forward does not take, plus decoder ids for an
    encoder-decoder model."""
    params = inspect.signature(model.forward).parameters
    if "attention_mask" in kwargs and "attention_mask" not in params:
        kwargs = {k: v for k, v in kwargs.items() if k != "attention_mask"}
    if getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" in params:
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
    kept; the inputs the first candidate that runs (drawn on the CPU, then moved). Raises the
    first error if nothing runs.
    """
    default = tf.AutoConfig.for_model(family).to_dict()
    auto = tf.AutoModelForCausalLM if variant == "decode" else tf.AutoModel
    options = {"experts_implementation": "eager"} if variant == "experts_eager" else {}
    errors = []
    for layers in (True, False):
        try:
            config = tf.AutoConfig.for_model(family, **shrink(
                default, layers=layers, mrope=_reads(tf, family, "mrope_section")))
            torch_seed()
            model = auto.from_config(config, **options).eval().to(device)
            for label, make in _tries(model, config, variant):
                try:
                    kwargs = _on(_with_optional_inputs(make(), model, config), device)
                    fn, kwargs = (hfm._decode_step(model, True, kwargs, device)
                                  if variant == "decode" else (model, kwargs))
                    _runs(fn, kwargs)
                    return fn, kwargs, {"layers_capped": layers, "inputs": label,
                                        "modalities": hfi.modalities_taken(model)}
                except hfm.NotApplicable:
                    raise
                except Exception as error:  # the next candidate input may fit
                    errors.append(error)
        except hfm.NotApplicable:
            raise
        except Exception as error:  # the next config may build
            errors.append(error)
    raise errors[0]


def _tries(model: Any, config: Any, variant: str) -> list[tuple[str, Callable[[], dict]]]:
    """The input candidates in the order tried (``hf_inputs.candidates``), then, for a
    forward that takes ``use_cache``, each again without a cache: a hybrid model whose
    default config holds no attention layer cannot start a cache."""
    tries = hfi.candidates(model, config)
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


def _reads(tf: Any, family: str, name: str) -> bool:
    """Whether a transformers family's modeling code mentions ``name`` (read as text)."""
    folder = Path(tf.__file__).parent / _transformers_code(tf, family)
    return any(name in path.read_text(encoding="utf-8")
               for path in folder.glob("modeling_*.py"))


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
                             lambda timm, family: f"models/{family}.py")}


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


WORKER_JOBS: dict[str, Callable[[dict], dict]] = {
    "count": run_worker,
    "latency": lambda spec: hfw.run_latency_worker(spec, build_case),
    "cold": lambda spec: hfw.run_cold_worker(spec, build_case),
}


def _versions(package: Any) -> dict[str, str]:
    """The measured package's and torch's versions, as a worker record carries them."""
    import torch

    return {f"{package.__name__}_version": package.__version__,
            "torch_version": torch.__version__}


def _first_line(error: Exception) -> str:
    """``Type: first line of the message`` (300 characters at most)."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0][:300] if text else ''}"


# --------------------------------------------------------------------------------------------
# Parent
# --------------------------------------------------------------------------------------------

def select_families(all_families: dict[str, tuple[str, ...]], split: str, chosen: str
                    ) -> dict[str, tuple[str, ...]]:
    """The families of ``--split`` (dev, held-out, all), narrowed to ``--families`` if given."""
    wanted = {f.strip() for f in chosen.split(",") if f.strip()}
    unknown = wanted - set(all_families)
    if unknown:
        hf_trees._fail(f"unknown families: {', '.join(sorted(unknown))}")
    return {f: v for f, v in all_families.items()
            if (split == "all" or split_of(f) == split) and (not wanted or f in wanted)}


def scope_excludes(library: Library, package: Any, all_families: list[str],
                   chosen: list[str]) -> list[str]:
    """eqrewrite ``--exclude`` arguments that leave out the code of every family not chosen
    (code a chosen family shares with another stays in)."""
    keep = {library.code(package, family) for family in chosen}
    code = sorted({library.code(package, family) for family in all_families} - keep)
    return [arg for glob in code for arg in ("--exclude", glob)]


def _run_all(tree: str, cases: list[str], workdir: Path, args: argparse.Namespace
             ) -> dict[str, dict]:
    """Every case in one tree, ``--jobs`` worker processes at a time."""
    def one(case: str) -> dict:
        print(f"{case} [{tree}] ...", file=sys.stderr, flush=True)
        result = hfw.run_case(tree, workdir / tree, case, workdir, args, __file__,
                              LIBRARIES[args.library].package)
        if "error" in result:
            print(f"  {case} [{tree}] FAILED: {result['error']}\n"
                  f"{result.get('stderr_tail', '')[-800:]}", file=sys.stderr)
        return result

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        return dict(zip(cases, pool.map(one, cases)))


def _why(record: dict) -> str:
    """Why a worker gave no measurement: the skip reason, or its error and the last line of
    its stderr (the exception)."""
    if "skipped" in record:
        return str(record["skipped"])
    lines = [ln for ln in record.get("stderr_tail", "").splitlines() if ln.strip()]
    return f"{record.get('error')}: {lines[-1].strip()[:300]}" if lines else str(
        record.get("error"))


def _status(record: dict | None) -> str:
    """"ok", "not_applicable", "skipped" or "error" for one worker record (None: not
    measured)."""
    if record is None:
        return "not measured"
    for status in ("not_applicable", "skipped", "error"):
        if status in record:
            return status
    return "ok"


def _top_reasons(record: dict, count: int = 3) -> list[str]:
    """The most frequent break reasons of a record, one line each."""
    return [f"{r['count']}x {r['gb_type'] or r['reason']} at {r['frame']}: {r['source']}"
            for r in (record.get("reasons") or [])[:count]]


_REPORT_KEYS = {"skipped": "skipped", "not_applicable": "not_applicable"}
DYNAMO_ONLY = "fails under Dynamo only"


def _missing_modalities(record: dict) -> list[str]:
    """The modalities a measured case's forward takes that its inputs did not hold (a
    vision-language model run on text alone measures none of its vision code)."""
    label = str(record.get("inputs", ""))
    return [] if "+" in label else [m for m in record.get("modalities", []) if m not in label]


def summarize(cases: list[str], orig: dict[str, dict], rew: dict[str, dict]) -> dict:
    """Totals per split and overall, skipped and failed cases, output mismatches, gains."""
    import torch

    # breaking / breaks: the original tree; compared, before, after: the breaking cases
    # measured in both trees.
    per_split: dict[str, dict[str, int]] = {s: dict.fromkeys(
        ("cases", "breaking", "breaks", "compared", "before", "after"), 0) for s in SPLITS}
    report: dict[str, Any] = {key: {} for key in (
        "skipped", "dynamo_only", "not_applicable", "without_modality", "errors", "breaking",
        "mismatches", "gained")}
    report["per_split"] = per_split
    for case in cases:
        before, after = orig.get(case), rew.get(case)
        status = _status(before)
        if status != "ok":
            report[_REPORT_KEYS.get(status, "errors")][case] = _why(before or {})
            if status == "skipped" and str(before["skipped"]).startswith(DYNAMO_ONLY):
                report["dynamo_only"][case] = report["skipped"].pop(case)
            continue
        missing = _missing_modalities(before)
        if missing:
            report["without_modality"][case] = f"ran as {before['inputs']!r}; takes {missing}"
        split = per_split[split_of(case.rsplit(":", 1)[0])]
        split["cases"] += 1
        if before["breaks"]:
            split["breaking"] += 1
            split["breaks"] += before["breaks"]
            report["breaking"][case] = {"breaks": before["breaks"], "split": split_of(
                case.rsplit(":", 1)[0]), "reasons": _top_reasons(before)}
        if _status(after) != "ok":
            if after is not None:
                report["errors"][case + " [rew]"] = _why(after)
            continue
        if before["breaks"]:
            split["compared"] += 1
            split["before"] += before["breaks"]
            split["after"] += after["breaks"]
            report["breaking"][case]["after"] = after["breaks"]
        match = hfw._compare(torch.load(before["outputs_file"]), torch.load(after["outputs_file"]))
        if match["verdict"] != "equal":
            report["mismatches"][case] = match
        if after["breaks"] > before["breaks"]:
            report["gained"][case] = {"before": before["breaks"], "after": after["breaks"],
                                      "reasons": _top_reasons(after)}
    return report


def _percent(before: int, after: int) -> str:
    """Breaks removed, in percent of before."""
    return f"{100.0 * (before - after) / before:.0f} %" if before else "-"


def print_report(report: dict, families: dict[str, tuple[str, ...]], original_only: bool
                 ) -> None:
    """The split, the breaking cases with their top reasons, totals, skips and problems."""
    for split in SPLITS:
        names = [f for f in families if split_of(f) == split]
        print(f"{split} ({len(names)} families): {', '.join(names)}\n")
    print("breaking cases (original tree):")
    for case, info in report["breaking"].items():
        after = "" if original_only else f" -> {info.get('after', '?')}"
        print(f"  {case:36} {info['split']:8} {info['breaks']}{after}")
        for line in info["reasons"]:
            print(f"      {line[:220]}")
    print()
    for split, t in report["per_split"].items():
        print(f"{split:8}: {t['cases']} cases measured, {t['breaking']} breaking with "
              f"{t['breaks']} breaks" + ("" if original_only else
                                         f"; {t['compared']} compared: {t['before']} -> "
                                         f"{t['after']} ({_percent(t['before'], t['after'])} "
                                         "removed)"))
    if not original_only:
        before = sum(t["before"] for t in report["per_split"].values())
        after = sum(t["after"] for t in report["per_split"].values())
        print(f"total   : breaks {before} -> {after} ({_percent(before, after)} removed)")
    measured = sum(t["cases"] for t in report["per_split"].values())
    total = measured + sum(len(report[k]) for k in ("skipped", "dynamo_only", "errors"))
    print(f"skipped for lack of inputs or a config that builds: {len(report['skipped'])} of "
          f"{total} cases ({_percent(total, total - len(report['skipped']))})")
    for title, key in (("skipped (could not be built or run eagerly)", "skipped"),
                       ("fail under Dynamo only (run eagerly: candidates for the oracle)",
                        "dynamo_only"),
                       ("measured without a modality their forward takes", "without_modality"),
                       ("not applicable (e.g. a decode step of a model without a cache)",
                        "not_applicable"),
                       ("failed (worker error)", "errors"),
                       ("eager outputs differ between the trees", "mismatches"),
                       ("gained breaks", "gained")):
        print(f"\n{title}: {len(report[key])}")
        for case, why in report[key].items():
            print(f"  {case}: {why}")


def latency_cases(report: dict, limit: int | None = None) -> list[str]:
    """The cases to time: breaks dropped (measured in both trees) and eager outputs equal,
    the most breaks removed first, ties by name; the first ``limit`` (None: all)."""
    removed = {case: info["breaks"] - info["after"] for case, info in report["breaking"].items()
               if "after" in info and info["after"] < info["breaks"]
               and case not in report["mismatches"]}
    ranked = sorted(removed, key=lambda case: (-removed[case], case))
    return ranked if limit is None else ranked[:max(limit, 0)]


def latency_means(latencies: dict[str, dict]) -> dict[str, Any]:
    """Geometric means of after/before over the timed cases (failed ones left out): steady
    state (median call) and cold start (first call); None where no case has the figure."""
    steady, cold = [], []
    for timing in latencies.values():
        if "error" in timing:
            continue
        before, after = timing["orig"], timing["rew"]
        steady.append(after["median_s"] / before["median_s"])
        if "cold_s" in before and "cold_s" in after:
            cold.append(after["cold_s"] / before["cold_s"])
    return {"cases": len(steady),
            "steady": statistics.geometric_mean(steady) if steady else None,
            "cold": statistics.geometric_mean(cold) if cold else None}


def latency_rows(latencies: dict[str, dict], report: dict) -> list[list[str]]:
    """One table row per timed case: breaks, steady ms and cold s before/after, ratios."""
    rows = []
    for case, timing in latencies.items():
        info = report["breaking"][case]
        breaks = f"{info['breaks']} -> {info['after']}"
        if "error" in timing:
            rows.append([case, breaks] + ["ERR"] * 6)
            continue
        before, after = timing["orig"], timing["rew"]
        row = [case, breaks, f"{1e3 * before['median_s']:.2f}", f"{1e3 * after['median_s']:.2f}",
               f"{after['median_s'] / before['median_s']:.2f}"]
        if "cold_s" in before and "cold_s" in after:
            row += [f"{before['cold_s']:.2f}", f"{after['cold_s']:.2f}",
                    f"{after['cold_s'] / before['cold_s']:.2f}"]
        else:
            row += ["-"] * 3
        rows.append(row)
    return rows


def print_latency(latencies: dict[str, dict], report: dict, args: argparse.Namespace) -> None:
    """The latency table, the geometric means, compiled outputs off the eager ones, failures."""
    print(f"\ncompiled latency ({args.backend}, {args.device}, {args.threads} thread(s)): "
          f"steady = median of {args.repeats} calls (both trees in one process, alternating), "
          f"cold = first call with compilation in a fresh process with an empty compile cache "
          f"(median of {args.cold_repeats}); ratio = after/before")
    header = ["case", "breaks", "steady before ms", "steady after ms", "ratio",
              "cold before s", "cold after s", "ratio"]
    rows = latency_rows(latencies, report)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, ["-" * w for w in widths], *rows]:
        print("  " + " | ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    means = latency_means(latencies)
    shown = {k: "-" if means[k] is None else f"{means[k]:.2f}" for k in ("steady", "cold")}
    print(f"  geometric mean of after/before over {means['cases']} cases: steady "
          f"{shown['steady']}, cold {shown['cold']}")
    for case, timing in latencies.items():
        if "error" in timing:
            print(f"  {case}: latency run failed: {_why(timing)}")
            continue
        for tree in ("orig", "rew"):
            verdict = timing[tree].get("compiled_vs_eager", {}).get("verdict")
            if verdict == "DIFFERENT":
                print(f"  {case} [{tree}]: compiled outputs differ from eager ones "
                      f"(max |diff| {timing[tree]['compiled_vs_eager']['max_abs']})")


def run_latencies(report: dict, workdir: Path, args: argparse.Namespace) -> dict[str, dict]:
    """Time the chosen cases (``latency_cases``) with hf_workers' ``run_latency``, each in
    fresh worker processes of this script."""
    latencies = {}
    for case in latency_cases(report, args.latency_cases):
        print(f"{case} latency, both trees ...", file=sys.stderr, flush=True)
        latencies[case] = hfw.run_latency(case, workdir, args, __file__,
                                          LIBRARIES[args.library].package)
        if "error" in latencies[case]:
            print(f"  {case} latency FAILED: {latencies[case]['error']}\n"
                  f"{latencies[case].get('stderr_tail', '')[-800:]}", file=sys.stderr)
    return latencies


def main(argv: list[str] | None = None) -> int:
    """Parse options; run as the benchmark driver or as a one-case worker."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", choices=sorted(LIBRARIES), default="transformers")
    parser.add_argument("--rules", default="graphbreaks",
                        help="rule pack name or path (default: graphbreaks)")
    parser.add_argument("--split", choices=[*SPLITS, "all"], default="all")
    parser.add_argument("--families", default="", help="comma-separated families (default: all)")
    parser.add_argument("--workdir", type=Path,
                        help="folder for the trees and records (default: a temp folder, kept)")
    parser.add_argument("--original-only", action="store_true",
                        help="measure the original tree only: which families break")
    parser.add_argument("--check-unbroken", action="store_true",
                        help="measure the rewritten tree on unbroken cases too (gained breaks)")
    parser.add_argument("--reuse-original", action="store_true",
                        help="take the original tree's records from an earlier run in the "
                             "workdir when the package and torch versions match")
    parser.add_argument("--rewrite-scope", choices=["all", "families"], default="all",
                        help="rewrite the whole package (default) or leave out the code of the "
                             "families not selected (faster; a family's breaks in another "
                             "family's code are then not rewritten)")
    parser.add_argument("--reuse-trees", action="store_true",
                        help="reuse the workdir's orig/ and rew/ trees if both exist")
    parser.add_argument("--reuse-records", action="store_true",
                        help="with --reuse-trees: take both trees' records from an earlier run "
                             "in the workdir when the versions match (e.g. to time its cases)")
    parser.add_argument("--json", type=Path, help="write the full results to this JSON file")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes at a time")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds per worker process (default: 600)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    hfw.add_dynamo_config_argument(parser)
    hfw.add_modes_argument(parser)
    parser.add_argument("--skip-latency", action="store_true",
                        help="do not time compiled runs (otherwise: every case whose breaks "
                             "dropped, both trees)")
    parser.add_argument("--latency-cases", type=int, metavar="N",
                        help="time only the N cases with the most breaks removed (ties by "
                             "name; default: all)")
    parser.add_argument("--backend", default="inductor",
                        help="torch.compile backend for latency (inductor, aot_eager, eager)")
    parser.add_argument("--device", default="cpu",
                        help="device the latency runs use (cpu, cuda, cuda:1...); break counts "
                             "are taken on the CPU")
    parser.add_argument("--repeats", type=int, default=hfw.REPEATS,
                        help=f"timed calls after {hfw.WARMUP} warm-up calls; the median is kept "
                             f"(default: {hfw.REPEATS})")
    parser.add_argument("--cold-repeats", type=int, default=1,
                        help="cold starts per tree and case, each in a fresh process with an "
                             "empty compile cache; the median is kept (default: 1; 0: none)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", help=argparse.SUPPRESS)
    parser.set_defaults(record_profile=None)
    args = parser.parse_args(argv)
    if args.worker:
        spec = json.loads(args.worker)
        result = WORKER_JOBS[spec.get("job", "count")](spec)
        Path(args.worker_out).write_text(json.dumps(result, indent=1))
        return 0
    return run(args)


def run(args: argparse.Namespace) -> int:
    """The benchmark driver: list, split, make the trees, then measure every mode."""
    import importlib

    library = LIBRARIES[args.library]
    package = importlib.import_module(library.package)
    every = library.families(package)
    families = select_families(every, args.split, args.families)
    cases = [f"{family}:{variant}" for family, variants in families.items()
             for variant in variants]
    root = (args.workdir or Path(tempfile.mkdtemp(prefix="generality-"))).resolve()
    workdir = root / args.library
    pack = hf_trees._check_pack(args.rules)
    rewrite = None
    if args.original_only:
        hf_trees.copy_original(workdir, library.package, args.reuse_original)
    else:
        excludes = (scope_excludes(library, package, list(every), list(families))
                    if args.rewrite_scope == "families" else [])
        rewrite = hf_trees.prepare_trees(workdir, pack, "all", [], args.reuse_trees, excludes,
                                    library.package)
    modes = {mode: measure_mode(cases, families, workdir, hfw.mode_args(args, mode))
             for mode in args.modes}
    if len(modes) > 1 and not args.original_only:
        print_modes(modes)
    if args.json:
        args.json.write_text(json.dumps(
            {"library": args.library, "version": _version(library.package), "rules": pack,
             "workdir": str(root), "rewrite": rewrite, "split": {f: split_of(f) for f in families},
             "modes": modes}, indent=1))
        print(f"\nresults written to {args.json}")
    failed = any(m["report"]["errors"] or m["report"]["mismatches"] or m["report"]["gained"]
                 for m in modes.values())
    return 1 if failed else 0


def measure_mode(cases: list[str], families: dict[str, tuple[str, ...]], workdir: Path,
                 args: argparse.Namespace) -> dict[str, Any]:
    """One mode: the original tree, the rewritten one on the cases that break, the report
    printed, latency unless skipped; what the JSON keeps of it."""
    settings = hfw.dynamo_settings(args)
    print(f"\n===== mode: {'switches ' + str(settings) if settings else 'default'} =====\n")
    orig = _run_all("orig", cases, workdir, args)
    rew: dict[str, dict] = {}
    if not args.original_only:
        chosen = [c for c in cases if _status(orig[c]) == "ok"
                  and (orig[c]["breaks"] or args.check_unbroken)]
        rew = _run_all("rew", chosen, workdir, args)
    report = summarize(cases, orig, rew)
    print_report(report, families, args.original_only)
    latency = None
    if not (args.original_only or args.skip_latency):
        latency = measure_latency(report, workdir, args)
    return {"dynamo_config": settings, "report": report, "latency": latency, "orig": orig,
            "rew": rew}


def measure_latency(report: dict, workdir: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Time the cases whose breaks dropped, print the table; what the JSON keeps."""
    latencies = run_latencies(report, workdir, args)
    if latencies:
        print_latency(latencies, report, args)
    means = latency_means(latencies)
    return {"backend": args.backend, "device": args.device, "threads": args.threads,
            "repeats": args.repeats, "cold_repeats": args.cold_repeats,
            "limit": args.latency_cases, "geomean_steady": means["steady"],
            "geomean_cold": means["cold"],
            "cases": {case: {"breaks_before": report["breaking"][case]["breaks"],
                             "breaks_after": report["breaking"][case]["after"], **timing}
                      for case, timing in latencies.items()}}


def print_modes(modes: dict[str, dict]) -> None:
    """Breaks removed per half in each mode, side by side."""
    print("\nper half and mode (breaking cases measured in both trees: before -> after):")
    for split in SPLITS:
        cells = []
        for mode, measured in modes.items():
            t = measured["report"]["per_split"][split]
            cells.append(f"{mode} {t['before']} -> {t['after']} "
                         f"({_percent(t['before'], t['after'])})")
        print(f"  {split:8}: " + "; ".join(cells))


def _version(package: str) -> str:
    """The installed version of ``package``."""
    from importlib.metadata import version

    return version(package)


if __name__ == "__main__":
    sys.exit(main())
