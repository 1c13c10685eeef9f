"""Inputs for any transformers model family, made from its config alone (no processor, no hub).

``hf_generality.py`` builds every family from a shrunk default config; this module makes what
its forward eats, richest first, so that the vision, video and audio code paths run (that is
where sizes come from the data and where the breaks of multimodal families live):

* the main input (``main_input_name``): token ids, pixel values at the config's image size and
  channels (one image, or frames/tiles), log-mel features, raw audio (a length the feature
  extractor would pad to), time series, states;
* a modality the forward takes beside the token ids: ``pixel_values`` (NCHW, tiles, or the
  flattened patches of a ``*_grid_thw`` vision tower, with its grid), ``pixel_values_videos``,
  ``input_features`` / ``input_values`` (with their masks), ``bbox`` (layout models), each
  with placeholder tokens in ``input_ids``: as many image (video, audio) tokens as the
  model's ``get_image_features`` (video, audio) returns features, framed by the config's start
  and end tokens where it has them (Qwen's ``vision_start``, Gemma's ``boi``/``eoi``);
* the other inputs a dual encoder needs (CLIP: token ids and pixels).

``candidates(model, config)`` returns ``(label, kwargs)`` pairs, the richest first; the
builder keeps the first that runs and records its label, so a family that ran without its
images says so (``text only``). Token ids avoid every special id of the config. Pure parts
(``placeholder_ids``, ``layer_prefix``) are tested without transformers.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

from hf_models import BATCH, SEQ

VOCAB, IMAGE = 128, 64
# Special token ids (Molmo-2 names its image token image_patch_id, aliased image_token_id).
TOKEN_SUFFIXES = ("_token_id", "_token_index", "_patch_id")
# Per modality: the config fields naming its placeholder token, and its start and end tokens.
PLACEHOLDERS = {
    "image": (("image_token_id", "image_token_index"),
              ("vision_start_token_id", "image_start_token_id", "boi_token_id",
               "boi_token_index"),
              ("vision_end_token_id", "image_end_token_id", "eoi_token_id", "eoi_token_index")),
    "video": (("video_token_id", "video_token_index"),
              ("vision_start_token_id", "video_start_token_id"),
              ("vision_end_token_id", "video_end_token_id")),
    "audio": (("audio_token_id", "audio_token_index"),
              ("audio_start_token_id", "audio_bos_token_id", "boa_token_id"),
              ("audio_end_token_id", "audio_eos_token_id", "eoa_token_id", "eoa_token_index")),
}
_SUB_CONFIGS = ("vision_config", "audio_config", "encoder", "text_config", "vision_tower_config",
                "audio_encoder_config", "encoder_config")


# --------------------------------------------------------------------------------------------
# Pure parts
# --------------------------------------------------------------------------------------------

def is_int(value: Any) -> bool:
    """An int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def special_ids(values: Mapping[str, Any]) -> set[int]:
    """Every special token id of a config dict and its sub-configs (kept out of the inputs)."""
    found: set[int] = set()
    for key, value in values.items():
        if isinstance(value, dict):
            found |= special_ids(value)
        elif isinstance(key, str) and key.endswith(TOKEN_SUFFIXES):
            found |= {v for v in (value if isinstance(value, list) else [value]) if is_int(v)}
    return found


def placeholder_rows(text: list[list[int]], count: int, token: int, start: int | None,
                     end: int | None, avoid: Iterable[int] = ()) -> list[list[int]]:
    """Token rows with ``count`` placeholder tokens spread over the rows, each row's run
    framed by ``start``/``end`` where given, before its text: evenly when ``count`` divides
    by the rows, else all in the first row and the others padded with their own text tokens
    to the same length (a batch is rectangular). Tokens in ``avoid`` (another modality's
    placeholders already in the rows) are never used as padding."""
    rows = len(text)
    share = [count // rows] * rows if count % rows == 0 else [count] + [0] * (rows - 1)
    runs = [([start] if start is not None else []) + [token] * n
            + ([end] if end is not None else []) if n else [] for n in share]
    width = max(len(run) for run in runs) + len(text[0])
    avoid = set(avoid)
    pads = [[t for t in row if t not in avoid] or row for row in text]
    return [run + row + (pad * (width // max(len(pad), 1) + 1))[:width - len(run) - len(row)]
            for run, row, pad in zip(runs, text, pads)]


def layer_prefix(values: Mapping[str, Any], layers: int, most: int = 8) -> int:
    """How many leading layers keep every kind of layer a per-layer type list names (hybrid
    models: the first attention layer may come after several linear ones), at least
    ``layers``, at most ``most``."""
    counts = {v for k, v in values.items() if "layers" in k and is_int(v)}
    needed = layers
    for value in values.values():
        if (isinstance(value, list) and value and len(value) in counts
                and all(isinstance(v, str) for v in value)):
            kinds = set(value)
            seen: set[str] = set()
            for index, kind in enumerate(value):
                seen.add(kind)
                if seen == kinds:
                    needed = max(needed, index + 1)
                    break
    return min(needed, max(most, layers))


# --------------------------------------------------------------------------------------------
# Tensors (torch imported inside: the pure parts run without it)
# --------------------------------------------------------------------------------------------

def token_ids(avoid: set[int], vocab: int = VOCAB, length: int = SEQ) -> Any:
    """Seeded token ids (BATCH, length) in [2, vocab) avoiding the special ids."""
    import torch

    pool = torch.tensor([i for i in range(2, vocab) if i not in avoid])
    gen = torch.Generator().manual_seed(1234)
    return pool[torch.randint(0, len(pool), (BATCH, length), generator=gen)]


def randn(*shape: int) -> Any:
    """Seeded standard normal values."""
    import torch

    return torch.randn(*shape, generator=torch.Generator().manual_seed(1234))


def field(config: Any, name: str, default: int) -> int:
    """``config.name``, else the same field of its vision/audio/encoder sub-config, else
    ``default``."""
    for owner in (config, *(getattr(config, sub, None) for sub in _SUB_CONFIGS)):
        value = getattr(owner, name, None)
        if is_int(value):
            return int(value)
        if isinstance(value, (list, tuple)) and value and all(is_int(v) for v in value):
            return int(value[0])
    return default


def _image_side(config: Any) -> int:
    """The image side the config expects (``image_size``, an int or a pair)."""
    return field(config, "image_size", IMAGE)


def image_candidates(config: Any, params: Iterable[str], name: str = "pixel_values"
                     ) -> list[dict]:
    """Pixel inputs for ``name``: flattened patches with their grid where the forward takes
    a grid (``image_grid_thw``, ``grid_thw``, ``video_grid_thw``), else one NCHW image per
    sample, then frames or tiles (B, N, C, H, W); with ``image_sizes`` and ``pixel_mask``
    where the forward takes them."""
    import torch

    params = set(params)
    grid = next((p for p in (("video_grid_thw",) if "video" in name else ())
                 + ("image_grid_thw", "grid_thw") if p in params), None)
    side, channels = _image_side(config), field(config, "num_channels",
                                                field(config, "in_channels", 3))
    found = []
    if grid is not None:
        patch = field(config, "patch_size", 14)
        temporal = field(config, "temporal_patch_size", 1)
        merge = field(config, "spatial_merge_size", field(config, "merge_size", 1))
        cells = 2 * merge  # a 2 x 2 grid of merged tokens per image
        # A video holds as many temporal patches as the tower merges (ERNIE-VL merges 2).
        steps = field(config, "temporal_merge_size", 1) if "video" in name else 1
        patches = BATCH * steps * cells * cells
        flat = {name: randn(patches, channels * temporal * patch * patch),
                grid: torch.tensor([[steps, cells, cells]] * BATCH)}
        for sizes in ("merge_sizes", f"{'video' if 'video' in name else 'image'}_merge_sizes"):
            if sizes in params:  # VideoLLaMA-3 names the two apart
                flat[sizes] = torch.tensor([merge] * BATCH)
        for seconds in ("second_per_grid_ts", "video_second_per_grid"):
            if "video" in name and seconds in params:  # a temporal patch a second apart
                flat[seconds] = torch.ones(BATCH)
        # The same patches as small images, (patches, C, P, P) (PaddleOCR-VL's tower).
        found += [flat, {**flat, name: randn(patches, channels, patch, patch)}]
    frames = field(config, "num_frames", 2)
    found += [{name: randn(BATCH, channels, side, side)},
              {name: randn(BATCH, 1, channels, side, side)},
              {name: randn(BATCH, frames, channels, side, side)}]
    for candidate in found[2 if grid else 0:]:
        if "pixel_mask" in params:
            candidate["pixel_mask"] = torch.ones(BATCH, side, side, dtype=torch.long)
    if "image_sizes" in params and "video" not in name:  # the same images, sizes given
        found += [{**candidate, "image_sizes": torch.tensor([[side, side]] * BATCH)}
                  for candidate in found[2 if grid else 0:]]
    return found


def audio_candidates(config: Any, params: Iterable[str], name: str) -> list[dict]:
    """Audio inputs for ``name``: log-mel features (B, mels, frames), or (B, frames, features),
    or raw audio (B, samples) with and without a channel axis, with the mask the forward
    takes."""
    import torch

    params = set(params)
    found: list[dict] = []
    if name in ("input_features", "audio_mel"):
        mels = field(config, "num_mel_bins", 0) or field(config, "feature_size", 0)
        frames = 2 * field(config, "max_source_positions", 64)
        if mels:
            found.append({name: randn(BATCH, mels, frames)})
        found.append({name: randn(BATCH, 4 * SEQ, field(config, "input_feat_per_channel",
                                                        mels or 80))})
    else:
        hop = field(config, "hop_length", 0) or field(config, "downsample_factor", 0) or 320
        samples = hop * ((4000 + hop - 1) // hop)  # a whole number of hops, as extractors pad
        found += [{name: randn(BATCH, samples)}, {name: randn(BATCH, 1, samples)}]
    for candidate in found:
        length = candidate[name].shape[-1]
        for mask in ("input_features_mask", "feature_attention_mask"):
            if mask in params:
                candidate[mask] = torch.ones(BATCH, length, dtype=torch.long)
        if "padding_mask" in params and name in ("input_features", "audio_mel"):
            # beside log-mels, the raw audio's samples (MOSS): a hop per feature frame
            samples = length * field(config, "hop_length", 160)
            candidate["padding_mask"] = torch.ones(BATCH, samples, dtype=torch.long)
    return found


def layout_boxes() -> Any:
    """Seeded word boxes (BATCH, SEQ, 4) in LayoutLM's 0..1000 page coordinates, x0 <= x1 and
    y0 <= y1."""
    import torch

    gen = torch.Generator().manual_seed(1234)
    corners = torch.randint(0, 1000, (BATCH, SEQ, 2, 2), generator=gen)
    low, high = corners.min(dim=2).values, corners.max(dim=2).values
    return torch.stack([low[..., 0], low[..., 1], high[..., 0], high[..., 1]], dim=-1)


def series_candidates(config: Any, name: str) -> list[dict]:
    """Time series and state inputs: (B, context, channels) values with their observed mask
    where the config names a context length, else (B, SEQ, features)."""
    import torch

    context = field(config, "context_length", 0) or field(config, "context_len", 0) or 4 * SEQ
    channels = (field(config, "num_input_channels", 0) or field(config, "input_size", 0)
                or field(config, "state_dim", 0) or field(config, "hidden_size", 16))
    values = randn(BATCH, context, channels)
    if name == "past_values":
        return [{name: values}, {name: values[..., 0]},
                {name: values, "past_observed_mask": torch.ones_like(values)}]
    return [{name: values}, {name: randn(BATCH, channels)}]


def main_candidates(name: str, config: Any, params: Iterable[str]) -> list[dict]:
    """Candidate values of the main input ``name``; ValueError if none is known."""
    import torch

    if name == "input_ids":  # within a vocabulary smaller than the tiny one (ESM's 33)
        ids = token_ids(special_ids(config.to_dict()), min(VOCAB, field(config, "vocab_size",
                                                                      VOCAB)))
        return [{"input_ids": ids, "attention_mask": torch.ones(BATCH, SEQ, dtype=torch.long)}]
    if name in ("pixel_values", "pixel_values_videos", "pixel_values_images") or (
            name == "hidden_states" and params & {"grid_thw", "image_grid_thw"}):
        return image_candidates(config, params, name)
    if name in ("input_features", "input_values", "audio_values", "audio_mel"):
        return audio_candidates(config, params, name)
    if name in ("past_values", "states", "state", "inputs", "inputs_embeds", "noise_embeds"):
        return series_candidates(config, name)
    raise ValueError(f"main input {name!r}: no generic shape")


# --------------------------------------------------------------------------------------------
# Modalities beside the token ids, with their placeholder tokens
# --------------------------------------------------------------------------------------------

# The forward's parameter of each modality, and how its candidates are made.
MODALITIES = (("image", "pixel_values"), ("video", "pixel_values_videos"),
              ("audio", "input_features"), ("audio", "input_values"), ("layout", "bbox"))


def modalities_taken(model: Any) -> list[str]:
    """The modalities the forward takes beside its main input (image, video, audio, layout)."""
    params = set(inspect.signature(model.forward).parameters) - set(_main_names(model))
    return sorted({modality for modality, name in MODALITIES if name in params})


def modalities_given(model: Any, kwargs: Mapping[str, Any]) -> list[str]:
    """The modalities the forward takes beside its main input that ``kwargs`` hold."""
    held = {modality for modality, name in MODALITIES if name in kwargs}
    return sorted(held & set(modalities_taken(model)))


def _main_names(model: Any) -> list[str]:
    """The model's main input names (OneFormer names two: pixel values and task inputs)."""
    main = model.main_input_name
    return list(main) if isinstance(main, (list, tuple)) else [main]


def _modality_candidates(modality: str, name: str, config: Any, params: set[str]
                         ) -> list[dict]:
    """The candidates of one modality's input ``name``."""
    if modality in ("image", "video"):
        return image_candidates(config, params, name)
    if modality == "audio":
        return audio_candidates(config, params, name)
    return [{name: layout_boxes()}]


def _config_id(config: Any, keys: Iterable[str]) -> int | None:
    """The first of ``keys`` the config (or its text sub-config) sets to an int."""
    for owner in (config, getattr(config, "text_config", None)):
        for key in keys:
            value = getattr(owner, key, None)
            if is_int(value):
                return int(value)
    return None


def feature_count(model: Any, modality: str, kwargs: dict) -> int | None:
    """How many placeholder tokens the model's ``get_<modality>_features`` fills with these
    inputs: its feature vectors, one per token (or its inner model's, for a head that does
    not forward the method: Gemma-4's video, or its encoder's, for an encoder-decoder). A
    model with no such method that runs its ``<modality>_tower`` inline in ``forward``
    (Qwen2-Audio 5.x) fills one token per row of that tower's output; None if it has
    neither."""
    import torch

    method = next((found for owner in (model, getattr(model, "model", None), _encoder(model))
                   if (found := getattr(owner, f"get_{modality}_features", None))), None)
    tower = getattr(model, f"{modality}_tower", None) if method is None else None
    if method is None and tower is None:
        return None
    takes = inspect.signature(method or tower.forward).parameters
    accepts_any = any(p.kind is p.VAR_KEYWORD for p in takes.values())
    chosen = {k: v for k, v in kwargs.items() if k in takes or accepts_any}
    with torch.no_grad():
        found = (method or tower)(**chosen)
    if tower is not None:  # every row of its last hidden state, never a pooled summary
        found = getattr(found, "last_hidden_state", found)
    return sum(t.numel() // t.shape[-1] for t in _feature_tensors(found))


def _encoder(model: Any) -> Any:
    """An encoder-decoder's encoder, which holds the feature methods the model lacks
    (T5Gemma-2); None for a model without one."""
    get_encoder = getattr(model, "get_encoder", None)
    try:
        encoder = get_encoder() if callable(get_encoder) else None
    except (AttributeError, NotImplementedError, ValueError):
        return None
    return None if encoder is model else encoder


def _feature_tensors(found: Any) -> list[Any]:
    """The feature tensors of what a ``get_*_features`` returned: a tensor, a list or tuple of
    them, or a model output (its pooler output where set, else its last hidden state)."""
    import torch

    if isinstance(found, torch.Tensor):
        return [found]
    if isinstance(found, (list, tuple)):
        return [t for item in found for t in _feature_tensors(item)]
    for name in ("pooler_output", "last_hidden_state"):
        value = getattr(found, name, None)
        if value is not None:
            return _feature_tensors(value)
    raise TypeError(f"features of type {type(found).__name__}: no tensors found")


def with_placeholders(model: Any, config: Any, modality: str, extra: dict, ids: dict,
                      framed: tuple[int, int | None, int | None] | None = None) -> dict:
    """The token inputs ``ids`` with the modality's placeholder tokens where the config names
    one, as many as its features (unchanged where it names none); ``framed`` gives the
    placeholder, start and end ids where a processor does not use the config's own (GLM-5's
    video frames are image tokens between the video's start and end)."""
    import torch

    tokens, starts, ends = PLACEHOLDERS.get(modality, ((), (), ()))
    token, start, end = framed or (_config_id(config, tokens), _config_id(config, starts),
                                   _config_id(config, ends))
    if token is None:
        return ids
    count = feature_count(model, modality, extra)
    if count is None:
        raise ValueError(f"{modality} placeholder token {token} but no get_{modality}_features")
    rows = placeholder_rows(ids["input_ids"].tolist(), count, token, start, end,
                            avoid=special_ids(config.to_dict()))
    input_ids = torch.tensor(rows)
    found = {**ids, "input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}
    if "mm_token_type_ids" in inspect.signature(model.forward).parameters:
        # What processors return: 0 text, 1 image, 2 video, 3 audio tokens, over every
        # modality placed so far (a video's placeholders beside an image's).
        kinds = torch.zeros_like(input_ids)
        for kind, (tokens, _, _) in enumerate(PLACEHOLDERS.values(), start=1):
            placed = _config_id(config, tokens)
            if placed is not None:
                kinds = torch.where(input_ids == placed, kind, kinds)
        found["mm_token_type_ids"] = kinds
    return found


def candidates(model: Any, config: Any) -> list[tuple[str, Callable[[], dict]]]:
    """``(label, make)`` pairs, the richest first; ``make()`` returns the keyword inputs or
    raises (the builder then tries the next): the token ids with each modality the forward
    takes beside them, placeholders included, then the main input alone ("text only" where
    it is token ids); the main input's candidates when it is not token ids."""
    signature = inspect.signature(model.forward).parameters
    params = set(signature)
    main = _main_names(model)[0]
    if main not in params and signature:  # e.g. a vision tower: (hidden_states, grid_thw)
        main = next(iter(signature))
    alone = main_candidates(main, config, params)
    found: list[tuple[str, Callable[[], dict]]] = []
    if main == "input_ids":
        each = {(modality, name): _modality_candidates(modality, name, config, params)
                for modality, name in MODALITIES if name in params}
        found += _together(model, config, each, alone[0])
        for (modality, _), extras in each.items():
            found += [(f"{main}+{modality}", partial(with_modalities, model, config,
                                                     [(modality, extra)], alone[0]))
                      for extra in extras]
    elif "input_ids" in params:  # image-text models whose main input is the image
        ids = main_candidates("input_ids", config, params)[0]
        found += [(f"{main}+input_ids", partial(dict, candidate, **ids)) for candidate in alone]
    label = "text only" if main == "input_ids" else main
    found += [(label, partial(dict, candidate)) for candidate in alone]
    return [(name, partial(_completed, model, config, make)) for name, make in found]


def _completed(model: Any, config: Any, make: Callable[[], dict]) -> dict:
    """A candidate's inputs plus the token ids (and their mask) a forward requires under
    another name (InstructBLIP's ``qformer_input_ids``)."""
    import torch

    kwargs = make()
    for name, param in inspect.signature(model.forward).parameters.items():
        if name in kwargs or param.default is not param.empty or param.kind in (
                param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if name.endswith("input_ids"):
            kwargs[name] = token_ids(special_ids(config.to_dict()))
            mask = name.replace("input_ids", "attention_mask")
            kwargs.setdefault(mask, torch.ones(BATCH, SEQ, dtype=torch.long))
    return kwargs


# Combinations of several modalities' candidates tried at most (a product grows fast; the
# first candidates of each are the likely ones).
MOST_COMBINED = 16


def _together(model: Any, config: Any, each: Mapping[tuple[str, str], list[dict]], ids: dict
              ) -> list[tuple[str, Callable[[], dict]]]:
    """Candidates holding every modality the forward takes at once (images beside a video,
    audio beside both, a page's image beside its word boxes): a processor's prompt mixing
    them, so that each modality's code path runs; none where it takes fewer than two."""
    if len(each) < 2:
        return []
    label = "input_ids+" + "+".join(modality for modality, _ in each)
    combos = itertools.islice(itertools.product(*each.values()), MOST_COMBINED)
    return [(label, partial(with_modalities, model, config, list(zip(
        (modality for modality, _ in each), extras)), ids)) for extras in combos]


def with_modalities(model: Any, config: Any, given: Iterable[tuple[str, dict]], ids: dict
                    ) -> dict:
    """The token inputs with each given modality's input and its placeholder tokens."""
    kwargs: dict = {}
    for modality, extra in given:
        ids = with_placeholders(model, config, modality, extra, ids)
        kwargs.update(extra)
    return {**ids, **kwargs}
