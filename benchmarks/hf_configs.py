"""The config shrinker of ``hf_generality.py``: a model family's default config made tiny
(pure: no torch, no transformers; configs are the dicts ``to_dict()`` returns).

Width 64, 4 heads, 2 key/value heads, 2 layers, FFN 64, vocabulary 128, 4 experts top-2,
positions 128, images 64 px, 8 object queries, multi-head-latent-attention ranks, special
token ids moved below the vocabulary, per-layer fields cut with the layers, nested
sub-configs alike, and what keeps a shrunk config valid (``shrink``'s docstring says each
rule).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import hf_inputs as hfi

WIDTH, HEADS, KV_HEADS, HEAD_DIM, FFN, LAYERS, VOCAB = 64, 4, 2, 16, 64, 2, 128
POSITIONS, IMAGE, EXPERTS, TOP_K, QUERIES = 128, 64, 4, 2, 8

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
    **dict.fromkeys(("num_experts_per_tok", "num_experts_per_token", "moe_topk", "moe_k",
                     "num_selected_experts"), TOP_K),
    # Expert groups must divide the experts.
    **dict.fromkeys(("n_group", "num_expert_group", "topk_group"), 1),
    # Multi-head latent attention (DeepSeek-V2 and after): its own head sizes and ranks.
    **dict.fromkeys(("qk_rope_head_dim", "qk_nope_head_dim"), HEAD_DIM // 2),
    **dict.fromkeys(("v_head_dim", "kv_lora_rank", "rotary_dim"), HEAD_DIM),
    "q_lora_rank": 2 * HEAD_DIM,
    "image_size": IMAGE,
    # Tokens an image pools to (Gemma-3's square grid): 2 x 2 divides a 64 px image's patch
    # grid (4 x 4 at patch 14 or 16); the default 256 pools with a kernel of 0.
    "mm_tokens_per_image": 4,
    # Object queries a detector selects with top-k over the encoder's tokens: a tiny image
    # has fewer tokens than the default 300.
    "num_queries": QUERIES,
}
# Head sizes that are width / heads in the default config: set so that they stay so.
_HEAD_SIZES = ("head_dim", "d_kv", "kv_channels")
_LAYER_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers",
               "decoder_layers", "num_decoder_layers", "num_encoder_layers")


def _is_sub_config(value: Any) -> bool:
    """A nested config as ``to_dict()`` writes it: a dict that names its model type."""
    return isinstance(value, dict) and "model_type" in value


def _shrink_token(value: Any, spare: dict[int, int]) -> Any:
    """A special token id (or list of ids) moved below VOCAB; ``spare`` maps each id moved
    to the one it got, counting down from VOCAB - 1 so that distinct ids stay distinct."""
    if isinstance(value, list):
        return [_shrink_token(v, spare) for v in value]
    if not hfi.is_int(value) or value < VOCAB:
        return value
    return spare.setdefault(value, VOCAB - 1 - len(spare))


def _is_vocabulary(key: str) -> bool:
    """A vocabulary size field: vocab_size, vocab_size_per_layer_input, decoder_vocab_size."""
    return key == "vocab_size" or key.startswith("vocab_size_") or key.endswith("_vocab_size")


def _derived_head_size(values: Mapping[str, Any], key: str) -> bool:
    """Whether ``values[key]`` is the default width divided by the default head count."""
    width = next((values[k] for k in ("hidden_size", "d_model", "n_embd") if hfi.is_int(
        values.get(k))), None)
    heads = next((values[k] for k in ("num_attention_heads", "num_heads", "n_head") if hfi.is_int(
        values.get(k))), None)
    return bool(width and heads) and values[key] * heads == width


def shrink(values: Mapping[str, Any], spare: dict[int, int] | None = None,
           layers: bool = True, mrope: bool = False, widths: set[int] | None = None,
           sizes: bool = True) -> dict[str, Any]:
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

    Without ``sizes`` only the layer counts (as above), the vocabulary and its token ids and
    a detector's object queries shrink: every width, head and size keeps its default (the
    builder's last resort, for a family whose code ties sizes in ways these rules miss; the
    builder first counts the parameters on the meta device,
    ``hf_families.DEFAULT_SIZED_LIMIT``).
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
            changes[key] = {**value, **shrink(value, spare, layers, mrope, widths, sizes)}
        elif key in _LAYER_KEYS:
            if keep is not None and hfi.is_int(value) and value > keep:
                changes[key] = keep
        elif not sizes:
            if _is_vocabulary(key) and hfi.is_int(value) and value > VOCAB:
                changes[key] = VOCAB
            elif key.endswith(hfi.TOKEN_SUFFIXES) and _shrink_token(value, spare) != value:
                changes[key] = _shrink_token(value, spare)
            elif key in ("use_timm_backbone", "use_pretrained_backbone") and value is True:
                changes[key] = False
            elif key == "num_queries" and hfi.is_int(value) and value > QUERIES:
                changes[key] = QUERIES  # outputs, not a width: top-k over a small image
        elif key in _KV_KEYS and hfi.is_int(value) and value == values.get(
                "num_attention_heads") and value > HEADS:
            changes[key] = HEADS  # multi-head attention stays so (some configs insist)
        elif key in _CAPS and hfi.is_int(value) and value > _CAPS[key]:
            changes[key] = _CAPS[key]
        elif (key in _HEAD_KEYS and isinstance(value, list) and value
              and all(hfi.is_int(v) for v in value) and max(value) > HEADS):
            changes[key] = [HEADS] * len(value)  # heads per stage: each divides every width
        elif _is_vocabulary(key) and hfi.is_int(value) and value > VOCAB:
            changes[key] = VOCAB
        elif key in _HEAD_SIZES and hfi.is_int(value) and _derived_head_size(values, key):
            changes[key] = HEAD_DIM
        elif value is None and (key in _HEAD_SIZES or (key in _TOP_K_KEYS and any(
                hfi.is_int(values.get(k)) for k in _EXPERT_KEYS))):
            # Unset in the default, read by the code: the tiny model's value (width / heads;
            # top-k of the experts a config does set).
            changes[key] = HEAD_DIM if key in _HEAD_SIZES else TOP_K
        elif value is None and key in _KV_KEYS and hfi.is_int(values.get("num_attention_heads")):
            # Unset key/value heads mean as many as the query heads (the configs' documented
            # default), which some models divide by without filling it in.
            changes[key] = min(values["num_attention_heads"], HEADS)
        elif key in ("use_timm_backbone", "use_pretrained_backbone") and value is True:
            changes[key] = False  # the library's own backbone: no timm, no download
        elif key.endswith(hfi.TOKEN_SUFFIXES) and _shrink_token(value, spare) != value:
            changes[key] = _shrink_token(value, spare)
        elif (key.endswith(("_dim", "hidden_size", "_groups")) and "head" not in key
              and hfi.is_int(value) and value in widths and value > WIDTH):
            changes[key] = WIDTH  # a width tied to a model's width (validators check it)
    if keep is not None:
        changes.update(_cut_per_layer(values, keep, changes))
    if sizes:
        changes.update(_mrope(values, mrope, changes.get("head_dim", values.get("head_dim"))))
    return changes


_KV_KEYS = ("num_key_value_heads", "num_kv_heads", "multi_query_group_num")
_HEAD_KEYS = ("num_attention_heads", "num_heads", "n_head", "n_heads")
_EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
_TOP_K_KEYS = ("num_experts_per_tok", "num_experts_per_token", "moe_topk", "moe_k",
               "num_selected_experts")
_WIDTH_KEYS = ("hidden_size", "d_model", "n_embd", "embed_dim")


def _widths(values: Mapping[str, Any]) -> set[int]:
    """Every model width of a config dict and its sub-configs (fields tied to one shrink with
    it: a projection's input, a codebook that must equal the width)."""
    found = {v for k, v in values.items() if k in _WIDTH_KEYS and hfi.is_int(v)}
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
    if not (isinstance(rope, dict) and hfi.is_int(values.get("hidden_size"))):
        return {}
    if not ("mrope_section" in rope or (inject and rope.get("rope_type") not in (None, "axial"))):
        return {}
    rotary = values.get("qk_rope_head_dim")
    factor = rope.get("partial_rotary_factor", values.get("partial_rotary_factor")) or 1
    half = int((min(rotary, _CAPS["qk_rope_head_dim"]) if hfi.is_int(rotary)
                else head if hfi.is_int(head) else HEAD_DIM) * factor) // 2
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
    counts = {values[k] for k in _LAYER_KEYS if hfi.is_int(values.get(k))} - {keep}
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
# diffusers: a model's ``__init__`` defaults (what ``register_to_config`` records), flat
# --------------------------------------------------------------------------------------------

SIDE, TEXT, CHANNELS = 32, 16, 64  # a latent's side, text tokens, the first channel rung
# Sizes a default config leaves unset (a real config sets them) that the code reads.
_UNSET_SIZES = {"in_channels": 32, "sample_size": SIDE}
UNSET_PATCH = 2  # a patch size where the default leaves it unset (shrink_diffusers(patch=True))
_LAYER_WORDS = {"layers", "blocks", "depth", "depths", "nlayers"}
_INDEX_SUFFIXES = ("_ids", "_places", "_indices")


def _words(key: str) -> list[str]:
    """A config key's words (``num_single_layers`` -> num, single, layers)."""
    return key.lower().split("_")


def _int_list(value: Any) -> bool:
    """A non-empty list or tuple of ints (not bools)."""
    return isinstance(value, (list, tuple)) and bool(value) and all(hfi.is_int(v) for v in value)


def _same_kind(value: Any, items: list[Any]) -> Any:
    """``items`` as the kind of sequence ``value`` is (a tuple stays a tuple)."""
    return tuple(items) if isinstance(value, tuple) else list(items)


def _scaled_even(parts: list[int], total: int) -> list[int]:
    """``parts`` (rotary sizes per axis, each even) scaled to sum to ``total``, each even and
    at least 2, the rest on the last."""
    halves = _scaled([p // 2 for p in parts], max(total // 2, len(parts)))
    return [2 * h for h in halves]


def _is_layer_count(key: str) -> bool:
    """A layer or block count (``num_layers``, ``layers_per_block``, ``decoder_stage_depths``),
    not a list of layer indices (``injection_layer_ids``) nor of block types."""
    words = _words(key)
    return bool(_LAYER_WORDS & set(words)) and not key.endswith(_INDEX_SUFFIXES + ("_types",))


def _is_layer_index_list(key: str, value: Any) -> bool:
    """Layer indices: an int list named for layers that is not a count (``vace_layers``,
    ``injection_layer_ids``, ``dual_attention_layers``)."""
    words = set(_words(key))
    return (_int_list(value) and ("layer" in words or "layers" in words) and "per" not in words
            and (key.endswith(_INDEX_SUFFIXES) or not (words & {"num", "n", "depths"})))


def _is_width(key: str) -> bool:
    """A width: ``*_dim``, ``*_channels``, ``*hidden_size`` and the bare ``dim``/``ch``/
    ``channels`` (head sizes and rotary sizes apart; spatial sizes are not widths)."""
    words = _words(key)
    return ("head" not in key and "rope" not in words and "freqs" not in words
            and (key in ("dim", "ch", "channels", "model_channels", "inner_dim")
                 or key.endswith(("_dim", "_channels", "hidden_size", "_width"))))


def _ladder(channels: list[int]) -> list[int]:
    """A channel ladder made small: the rungs over CHANNELS divided by one factor, so that
    the smallest of them becomes CHANNELS and the largest at most 4 x CHANNELS, each rounded
    to a multiple of CHANNELS (at least CHANNELS); rungs at most CHANNELS are kept."""
    big = [c for c in channels if c > CHANNELS]
    if not big:
        return channels
    factor = max(min(big) / CHANNELS, max(big) / (4 * CHANNELS))
    return [c if c <= CHANNELS else max(CHANNELS, int(c / factor / CHANNELS + 0.5) * CHANNELS)
            for c in channels]


def head_size(values: Mapping[str, Any]) -> int | None:
    """A diffusers config's attention head size: ``attention_head_dim``, else ``head_dim``,
    else the width (``hidden_size``, ``dim``, ``inner_dim``...) over the heads
    (``head_count``)."""
    for key in ("attention_head_dim", "head_dim"):
        if hfi.is_int(values.get(key)):
            return values[key]
    heads = head_count(values)
    width = next((values[k] for k in ("hidden_size", "dim", "inner_dim", "model_dim", "d_model")
                  if hfi.is_int(values.get(k))), None)
    return width // heads if heads and width and width % heads == 0 else None


def head_count(values: Mapping[str, Any]) -> int | None:
    """A diffusers config's attention head count (``num_attention_heads``, ``num_heads``,
    ``n_heads``...)."""
    return next((values[k] for k in ("num_attention_heads", "num_heads", "n_heads", "n_head",
                                     "nheads") if hfi.is_int(values.get(k))), None)


def shrink_diffusers(values: Mapping[str, Any], layers: bool = True, patch: bool = False
                     ) -> dict[str, Any]:
    """The fields of a diffusers model's default ``__init__`` arguments to change for a tiny
    model (``shrink``'s rules where the keys are the same, then these, by key shape only):

    * head sizes (``attention_head_dim``, ``*_head_dim``, ``dim_head``) at most HEAD_DIM,
      head counts (``*heads``) at most HEADS (key/value heads KV_HEADS unless they equal the
      query heads); the attention width (heads x head size) and every width equal to it shrink
      together;
    * rotary sizes per axis (an int list summing to the head size, or half of it: Flux's
      ``axes_dims_rope``) scaled to the shrunk head, each even;
    * channel ladders (int lists named ``*channels``: ``block_out_channels``) scaled so that
      the smallest rung is CHANNELS, each a multiple of it (group norms of 32 divide them);
    * other widths (``*_dim``, ``*_channels``, ``*hidden_size``) at most WIDTH;
    * with ``layers``: layer and block counts (``num_layers``, ``num_single_layers``,
      ``depth``) at most LAYERS, per-block counts (``layers_per_block``, per-block lists) at
      most 1, and lists of layer indices cut to the layers kept (at least the first);
    * the latent side (``sample_size``, ``sample_height``/``_width``) at most SIDE and text
      lengths (``*text_len*``, ``*text_seq*``) at most TEXT;
    * input channels (32: group norms divide them) and latent side set where the default
      leaves them unset (``_UNSET_SIZES``: a generic ``Transformer2DModel`` is configured by
      its caller), and with ``patch`` the patch size too (UNSET_PATCH; an unset patch size
      may also mean "no patches", as in Qwen-Image's VAE, so it is a second try).

    The head size is ``attention_head_dim``, else ``head_dim``, else the width over the heads.
    """
    changes = {k: v for k, v in shrink(values, layers=layers).items() if k in values}
    if not layers:
        changes = {k: v for k, v in changes.items() if not _is_layer_count(k)}
    head = head_size(values)
    heads = head_count(values)
    new_head = min(head, HEAD_DIM) if hfi.is_int(head) else None
    new_heads = min(heads, HEADS) if hfi.is_int(heads) else None
    inner = head * heads if new_head and new_heads else None
    new_inner = new_head * new_heads if new_head and new_heads else WIDTH
    head_counts = {v for k, v in values.items() if k.endswith("heads") and hfi.is_int(v)
                   and "kv" not in k and "key_value" not in k}
    for key, value in values.items():
        words = set(_words(key))
        if key in changes:
            continue
        if value is None and key in _UNSET_SIZES:
            changes[key] = _UNSET_SIZES[key]
        elif value is None and key == "patch_size" and patch:
            changes[key] = UNSET_PATCH
        elif ("head_dim" in key or key in ("dim_head", "dim_heads", "d_kv")) and (
                hfi.is_int(value) or _int_list(value)):
            capped = [min(v, HEAD_DIM) for v in (value if _int_list(value) else [value])]
            changes[key] = _same_kind(value, capped) if _int_list(value) else capped[0]
        elif key.endswith("heads") and (hfi.is_int(value) or _int_list(value)):
            kv = "kv" in key or "key_value" in key
            cap = HEADS if not kv or value in head_counts else KV_HEADS
            capped = [min(v, cap) for v in (value if _int_list(value) else [value])]
            changes[key] = _same_kind(value, capped) if _int_list(value) else capped[0]
        elif (_int_list(value) and 2 <= len(value) <= 4 and hfi.is_int(head) and new_head
              and all(v % 2 == 0 for v in value) and sum(value) in (head, head // 2)
              and new_head < head):
            total = new_head if sum(value) == head else new_head // 2
            changes[key] = _same_kind(value, _scaled_even(list(value), total))
        elif layers and _is_layer_index_list(key, value):
            kept = [v for v in value if v < LAYERS] or [0]
            if list(kept) != list(value):
                changes[key] = _same_kind(value, kept)
        elif _is_layer_count(key) and (hfi.is_int(value) or _int_list(value)):
            if not layers:
                continue
            per_block = "per" in words or isinstance(value, (list, tuple))
            cap = 1 if per_block else LAYERS
            capped = [min(v, cap) for v in (value if _int_list(value) else [value])]
            changes[key] = _same_kind(value, capped) if _int_list(value) else capped[0]
        elif key.endswith(("channels", "channel_sizes")) and _int_list(value):
            ladder = _ladder(list(value))
            if ladder != list(value):
                changes[key] = _same_kind(value, ladder)
        elif _is_width(key) and hfi.is_int(value) and value > WIDTH:
            changes[key] = new_inner if value == inner else WIDTH
        elif key in ("sample_size", "sample_height", "sample_width") and (
                hfi.is_int(value) or _int_list(value)):
            capped = [min(v, SIDE) for v in (value if _int_list(value) else [value])]
            changes[key] = _same_kind(value, capped) if _int_list(value) else capped[0]
        elif ("text_len" in key or "text_seq" in key) and hfi.is_int(value) and value > TEXT:
            changes[key] = TEXT
    return {k: v for k, v in changes.items() if v != values.get(k)}
