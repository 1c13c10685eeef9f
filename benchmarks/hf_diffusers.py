"""diffusers for ``hf_generality.py``: every model class ``diffusers.models`` exports, built
from its default configuration made tiny, fed inputs planned from its ``forward`` signature.

A diffusers model is a ``ModelMixin`` whose ``__init__`` arguments are its configuration
(``register_to_config`` records them, defaults included), so a family's default config is its
``__init__`` defaults; ``hf_configs.shrink_diffusers`` makes it tiny. The inputs are planned
from the names of the ``forward`` parameters and the config alone (``plan_inputs``, pure: a
plan is a dict of tensor specs, made into tensors by ``make_inputs``):

* the main input (the first parameter: ``sample``, ``hidden_states``, ``x``, ``z``...) at the
  config's input channels in one of the layouts of ``LAYOUTS``: an image (B, C, H, W), a
  video (B, C, F, H, W) with 2 or 9 frames or (B, F, C, H, W), a sequence of latent tokens
  (B, N, C) (Flux, Qwen-Image), or a signal (B, C, L) (``signal_length``); a parameter typed
  as a list gets one tensor per sample;
* the timestep (``timestep``, ``t``, ``sigma``...): (B,) steps;
* text (``encoder_hidden_states*``, ``cap_feats``...): (B, T, D), D the first conditioning
  width the config names (``cross_attention_dim``, ``joint_attention_dim``,
  ``caption_channels``, ``text_embed_dim``...; ``encoder_hidden_states_t5`` the width named
  with ``t5``), with its mask where the forward takes one; pooled text (``*pooled*``) at the
  pooled width; rotary position ids (``img_ids``, ``txt_ids``) with one column per rotary
  axis; ``guidance``; a control image (``controlnet_cond``) like the main input or at 8 times
  its side; class labels; added time ids; image shapes (``img_shapes``); micro-conditioning
  sizes; text lengths; embeddings; the others ``role`` names.

Candidates (``candidate_plans``): per layout (``layout_order``), every optional input it
knows how to make, then less the extras, then the required inputs alone (``LEVELS``), with
float steps; then all again with integer steps (a step table), then with RGB images; the
builder keeps the first that runs and records its label. The configs (``configs``): tiny,
tiny with an unset patch size set, tiny with its layer counts kept, default widths with the
layers shrunk, the default, each built only under ``DEFAULT_SIZED_LIMIT`` parameters (counted
on the meta device). A family none of which runs is skipped with the most telling error:
of the first config that built, in the config's own channels with float steps, the one that
got the deepest into the model. ``python hf_diffusers.py OUT.jsonl FAMILY...`` is the
build-only pass (one JSON line per family).
"""

from __future__ import annotations

import inspect
import re
import sys
import traceback
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import hf_configs as cfg
from hf_models import BATCH

TEXT = cfg.TEXT  # text tokens
FRAMES = 2  # video frames (latent)
SIGNAL = 64  # a 1-D signal's length
STEPS = (10, 20)  # one timestep per sample
DEFAULT_SIZED_LIMIT = 250_000_000

# Parameters never given: outputs, hooks, switches whose default is the plain forward.
_LEAVE = {"return_dict", "attention_kwargs", "joint_attention_kwargs", "cross_attention_kwargs",
          "generator", "sample_posterior", "kv_cache", "kv_cache_mode", "kv_caches",
          "kv_cache_flag", "guess_mode", "image_rotary_emb", "rotary_embedding",
          "controlnet_block_samples", "controlnet_single_block_samples",
          "block_controlnet_hidden_states", "down_block_additional_residuals",
          "mid_block_additional_residual", "down_intrablock_additional_residuals",
          "controlnet_blocks_repeat", "skip_layers", "apply_control", "from_multi",
          "enable_temporal_attentions", "encoder_mode", "force_pad", "num_inference_steps",
          "timestep_cond", "added_cond_kwargs", "attention_mask", "encoder_causal",
          "decoder_causal", "sparse_params", "shape_list", "patch_size", "f_patch_size",
          "motion_encode_batch_size", "data_info", "temb"}
# Config keys naming the main input's channels, in order (a decoder's latent ones first).
_CHANNEL_KEYS = ("in_channels", "in_dim", "in_visual_dim", "input_channels", "io_channels",
                 "num_channels", "channels", "audio_channels", "latent_channels", "out_channels")
_LATENT_KEYS = ("num_mels", "mel_bins", "latent_channels", "z_channels", "z_dim", "latent_dim",
                "latent_channel", "in_channels")
_DECODER_INPUTS = ("z", "latents", "mel", "z_latent")
# Config keys of the text conditioning width, in order; then any key naming text.
_TEXT_KEYS = ("encoder_hid_dim", "cross_attention_dim", "joint_attention_dim", "caption_channels",
              "text_embed_dim", "text_dim", "context_in_dim", "cap_feat_dim", "text_in_dim",
              "in_text_dim", "text_hidden_dim", "cond_token_dim", "encoder_hidden_size",
              "text_encoder_dim", "text_emb_dim", "condition_dim", "conditioning_dim",
              "cross_attention_input_dim", "encoder_hidden_states_channels")


# --------------------------------------------------------------------------------------------
# Pure parts: families, default configs, input plans
# --------------------------------------------------------------------------------------------

def model_classes(namespace: Mapping[str, Any], base: type) -> dict[str, type]:
    """The classes of ``namespace`` (a module's exports) that subclass ``base``, by exported
    name, ``base`` itself left out."""
    return {name: value for name, value in sorted(namespace.items())
            if inspect.isclass(value) and issubclass(value, base) and value is not base
            and not name.startswith("_")}


def init_defaults(cls: type) -> tuple[dict[str, Any], list[str]]:
    """``(defaults, required)`` of a class's ``__init__``: the default of every argument that
    has one (its default config), and the names of those without one."""
    defaults, required = {}, []
    for name, param in list(inspect.signature(cls.__init__).parameters.items())[1:]:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if param.default is param.empty:
            required.append(name)
        else:
            defaults[name] = param.default
    return defaults, required


def _first_int(config: Mapping[str, Any], keys: tuple[str, ...]) -> int | None:
    """The first of ``keys`` the config sets to an int (an int list: its first)."""
    for key in keys:
        value = config.get(key)
        if cfg.hfi.is_int(value):
            return int(value)
        if cfg._int_list(value):
            return int(value[0])
    return None


def main_channels(config: Mapping[str, Any], name: str) -> int:
    """The channels of the main input ``name`` (a decoder's latent channels for ``z``)."""
    keys = _LATENT_KEYS + _CHANNEL_KEYS if name in _DECODER_INPUTS else _CHANNEL_KEYS
    return _first_int(config, keys) or 4


def text_width(config: Mapping[str, Any], name: str = "encoder_hidden_states") -> int:
    """The width of a text input: for ``encoder_hidden_states_X`` (``_t5``, ``_2``,
    ``_image``) a width key naming X, else the first of ``_TEXT_KEYS``, else any
    ``*text*``/``*cond*`` width, else cfg.WIDTH."""
    suffix = name[len("encoder_hidden_states_"):] if name.startswith(
        "encoder_hidden_states_") else ""
    if suffix:
        found = _named_width(config, name, "encoder_hidden_states")
        if found:
            return found
    found = _first_int(config, _TEXT_KEYS)
    if found:
        return found
    loose = tuple(k for k in config if cfg._is_width(k) and ("text" in k or "cond" in k))
    return _first_int(config, loose) or cfg.WIDTH


def pooled_width(config: Mapping[str, Any]) -> int:
    """The width of pooled text: a ``*pooled*`` width key, else the text width."""
    keys = tuple(k for k in config if "pooled" in k and cfg._is_width(k))
    return _first_int(config, keys) or text_width(config)


def rotary_axes(config: Mapping[str, Any]) -> int:
    """Columns of rotary position ids: the axes of the config's per-axis rotary sizes (an
    int list named ``*axes*``), else 3."""
    for key, value in config.items():
        if "axes" in key and cfg._int_list(value) and 2 <= len(value) <= 4:
            return len(value)
    return 3


def _side(config: Mapping[str, Any]) -> int:
    """The side of a latent image: the config's ``sample_size`` when small, else cfg.SIDE."""
    side = _first_int(config, ("sample_size", "sample_height"))
    return side if side and side <= cfg.SIDE else cfg.SIDE


def signal_length(config: Mapping[str, Any]) -> int:
    """A 1-D signal's length: twice the config's total downsampling (the product of an int
    list named ``*ratios``/``*rates``/``*strides``, or an int ``*ratio``), at least SIGNAL."""
    total = 1
    for key, value in config.items():
        if key.startswith(("down", "enc")) or key == "strides":
            if cfg._int_list(value) and key.endswith(("ratios", "rates", "strides")):
                product = 1
                for v in value:
                    product *= max(v, 1)
                total = max(total, product)
            elif cfg.hfi.is_int(value) and key.endswith("ratio"):
                total = max(total, value)
    return max(SIGNAL, 2 * total)


def role(name: str) -> str | None:
    """What a forward parameter is, from its name (None: never given)."""
    if name in _LEAVE:
        return None
    if name == "guidance":
        return "guidance"
    if "pooled" in name or name in ("global_hidden_states", "clip_text_pooled"):
        return "pooled"
    if name.endswith("mask") and ("encoder" in name or "text" in name):
        return "text_mask"
    if name.endswith("mask") and "cond" in name:
        return "condition_mask"
    if name in ("num_frames", "height", "width"):
        return "grid_size"
    if name in ("img_ids", "image_cond_ids"):
        return "image_ids"
    if name == "txt_ids":
        return "text_ids"
    if name.endswith("time_ids"):
        return "time_ids"
    if name.startswith("encoder_hidden_states") or name in ("cap_feats", "text_bth",
                                                            "clip_text", "context"):
        return "text"
    if "timestep" in name or name in ("t", "sigma", "audio_sigma", "decoder_noise_time",
                                      "r_timestep", "timestep_r"):
        return "timestep"
    if name == "controlnet_cond":
        return "control"
    if name == "conditioning_scale":
        return "scale"
    if name == "class_labels":
        return "label"
    if name == "img_shapes":
        return "shapes"
    if name.endswith("latents") or name == "control_context":
        return "latent"
    if name == "fps":
        return "fps"
    if name.endswith("_size") or name.startswith("crop"):
        return "size"
    if name.endswith(("_lens", "_lengths")):
        return "lengths"
    if name.endswith(("_embeds", "_embedding", "_embeddings")):
        return "embedding"
    return None


def _is_list(annotation: Any) -> bool:
    """Whether a parameter's annotation is a list (of tensors): ``list[torch.Tensor]``, also
    as text (``from __future__ import annotations``) or first of a union."""
    if not isinstance(annotation, str):
        if typing.get_origin(annotation) is list:
            return True
        annotation = repr(annotation)
    return bool(re.match(r"\s*(typing\.)?[Ll]ist\[", annotation))


# Layouts of the main input: (name, frames); see main_shape.
LAYOUTS = (("image", 0), ("video", FRAMES), ("video", 9), ("frames", FRAMES), ("tokens", 0),
           ("signal", 0))


def layout_order(family: str) -> list[tuple[str, int]]:
    """LAYOUTS in the order tried for a family: video ones first for a class named for
    video (``3D``, ``Video``, ``Temporal``, ``Motion``), the signal first for one named for
    sound or 1-D (``1D``, ``Audio``, ``Music``), else as listed."""
    if any(word in family for word in ("3D", "Video", "Temporal", "Motion")):
        first = ("video", "frames")
    elif any(word in family for word in ("1D", "Audio", "Music")):
        first = ("signal",)
    else:
        return list(LAYOUTS)
    return ([layout for layout in LAYOUTS if layout[0] in first]
            + [layout for layout in LAYOUTS if layout[0] not in first])


def main_shape(layout: str, channels: int, side: int, frames: int = FRAMES,
               length: int = SIGNAL) -> tuple[int, ...]:
    """The main input's shape in ``layout`` (batch first)."""
    shapes = {"image": (BATCH, channels, side, side),
              "video": (BATCH, channels, frames, side, side),
              "frames": (BATCH, frames, channels, side, side),
              "tokens": (BATCH, (side // 2) ** 2, channels),
              "signal": (BATCH, channels, length)}
    return shapes[layout]


def _named_width(config: Mapping[str, Any], name: str, prefix: str) -> int | None:
    """The width the config names for a parameter ``prefix + X``: a width key with X."""
    suffix = name[len(prefix):].strip("_")
    named = tuple(k for k in config if suffix and suffix in k.split("_") and _width_like(k))
    return _first_int(config, named)


def _width_like(key: str) -> bool:
    """A width key, or one with a ``dim``/``channels`` word before a suffix
    (``cross_attention_dim_t5``)."""
    return cfg._is_width(key) or bool({"dim", "channels"} & set(key.split("_")))


def _extra(name: str, kind: str, required: bool, config: Mapping[str, Any]) -> bool:
    """An optional input given only at the richest level: guidance and class labels (models
    without their embedding reject them), optional latents (inpainting, control), and a
    second text whose width the config does not name (its projection is off by default)."""
    return not required and (kind in ("guidance", "label", "latent", "embedding", "fps")
                             or (kind == "text" and name.startswith("encoder_hidden_states_")
                                 and _named_width(config, name, "encoder_hidden_states")
                                 is None))


def embedding_width(config: Mapping[str, Any], name: str) -> int:
    """The width of an embedding input (``image_embeds``, ``proj_embedding``): a width key
    naming its first word, else ``embedding_dim``/``embed_dim``, else the text width."""
    first = name.split("_")[0]
    named = tuple(k for k in config if first in k.split("_") and cfg._is_width(k))
    return (_first_int(config, named) or _first_int(config, ("embedding_dim", "embed_dim"))
            or text_width(config))


def time_ids(config: Mapping[str, Any]) -> int:
    """How many added time ids (SVD's fps, motion, noise): the projection's input width over
    the width of one id's embedding, else 3."""
    total = config.get("projection_class_embeddings_input_dim")
    one = config.get("addition_time_embed_dim")
    if cfg.hfi.is_int(total) and cfg.hfi.is_int(one) and one and total % one == 0:
        return total // one
    return 3


LEVELS = ("all", "core", "required")


def plan_inputs(params: Mapping[str, Any], config: Mapping[str, Any], layout: str,
                level: str = "all", steps: str = "float", frames: int = FRAMES,
                channels: int | None = None) -> dict[str, tuple]:
    """The inputs of a forward whose parameters are ``params`` (name -> inspect.Parameter,
    ``self`` left out) as specs: ``("randn", shape)``, ``("ones", shape)``, ``("steps",
    dtype)``, ``("grid", rows, columns, side)``, ``("zeros", shape)``, ``("labels",)``,
    ``("full", shape, value, dtype)``, ``("value", obj)``, each wrapped as ``("list", spec)``
    for a list parameter. ``level`` (``LEVELS``): "all" optional inputs known too, "core"
    those less the extras (``_extra``), "required" the required ones alone. ``channels``: the
    main input's (default: the config's). Raises ValueError for a required input with no
    generic value."""
    names = list(params)
    if not names:
        raise ValueError("forward takes no named input")
    main = names[0]
    channels = channels or main_channels(config, main)
    side = _side(config)
    shape = main_shape(layout, channels, side, frames, signal_length(config))
    tokens = shape[1] if layout == "tokens" else (side // max(_first_int(
        config, ("patch_size",)) or 1, 1)) ** 2
    plan: dict[str, tuple] = {main: ("randn", shape)}
    for name in names[1:]:
        param = params[name]
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        required = param.default is param.empty
        if not required and level == "required":
            continue
        kind = role(name)
        if kind is None:
            if required:
                raise ValueError(f"required input {name!r}: no generic value")
            continue
        if level == "core" and _extra(name, kind, required, config):
            continue
        if kind == "timestep":
            if not required and name not in ("timestep", "timesteps", "t"):
                continue  # a second timestep (target, history) stays at its default
            plan[name] = ("steps", steps)
        elif kind == "text":
            plan[name] = ("randn", (BATCH, TEXT, text_width(config, name)))
        elif kind == "text_mask":
            plan[name] = ("ones", (BATCH, TEXT))
        elif kind == "pooled":
            plan[name] = ("randn", (BATCH, pooled_width(config)))
        elif kind == "image_ids":
            plan[name] = ("grid", tokens, rotary_axes(config), int(tokens ** 0.5))
        elif kind == "text_ids":
            plan[name] = ("zeros", (TEXT, rotary_axes(config)))
        elif kind == "time_ids":
            plan[name] = ("randn", (BATCH, time_ids(config)))
        elif kind == "guidance":
            plan[name] = ("full", (BATCH,), 3.5, "float")
        elif kind == "fps":
            plan[name] = ("full", (BATCH,), 8, "long")
        elif kind == "size":
            plan[name] = ("full", (BATCH, 2), 8 * side, "float")
        elif kind == "lengths":
            plan[name] = ("full", (BATCH,), TEXT, "long")
        elif kind in ("control", "latent"):
            plan[name] = ("randn", shape)
        elif kind == "condition_mask":
            mask = shape[:1] + (1,) + shape[2:] if layout in ("image", "video") else (
                shape[:-1] + (1,))
            plan[name] = ("full", mask, 1.0, "float")
        elif kind == "grid_size":
            if layout != "tokens":
                continue  # the main input carries its own sizes
            plan[name] = ("value", 1 if name == "num_frames" else side // 2)
        elif kind == "embedding":
            plan[name] = ("randn", (BATCH, embedding_width(config, name)))
        elif kind == "scale":
            plan[name] = ("value", 1.0)
        elif kind == "label":
            plan[name] = ("labels",)
        elif kind == "shapes":
            grid = int(tokens ** 0.5)
            plan[name] = ("value", [[(1, grid, grid)]] * BATCH)
    for name, spec in list(plan.items()):
        if spec[0] == "randn" and _is_list(params[name].annotation):
            plan[name] = ("list", spec)
    return plan


def control_at_pixels(plan: dict[str, tuple], factor: int = 8) -> dict[str, tuple] | None:
    """The plan with its control image at ``factor`` times the main input's side (a UNet
    ControlNet conditions on pixels, 8x its latent), None if it has no image control."""
    spec = plan.get("controlnet_cond")
    if not spec or spec[0] != "randn" or len(spec[1]) != 4:
        return None
    batch, _, height, width = spec[1]
    return {**plan, "controlnet_cond": ("randn", (batch, 3, height * factor, width * factor))}


def _layout_label(layout: str, frames: int, level: str, steps: str, channels: int | None
                  ) -> str:
    """A candidate's label: ``video (9 frames), core, integer steps, 3 channels``."""
    parts = [layout + (f" ({frames} frames)" if layout in ("video", "frames") else "")]
    parts += [level] if level != "all" else []
    parts += ["integer steps"] if steps == "long" else []
    parts += [f"{channels} channels"] if channels else []
    return ", ".join(parts)


def candidate_plans(params: Mapping[str, Any], config: Mapping[str, Any],
                    family: str = "") -> list[tuple[str, dict[str, tuple]]]:
    """``(label, plan)`` pairs in the order tried: per layout (``layout_order``), each level of
    ``LEVELS`` with float steps (a pixel-sized control image after a latent one); then the
    same with integer steps (a step table looked up); then RGB images and videos where the
    config's channels are not 3 (an autoencoder whose ``in_channels`` counts features it
    adds). A plan that cannot be made is left out (ValueError: the last one is raised if none
    can); duplicates are dropped."""
    order = layout_order(family)
    rgb = main_channels(config, next(iter(params), "")) != 3
    rounds = [("float", None, order), ("long", None, order)] + (
        [("float", 3, [lay for lay in order if lay[0] in ("image", "video")])] if rgb else [])
    found: list[tuple[str, dict[str, tuple]]] = []
    error: ValueError | None = None
    for steps, channels, layouts in rounds:
        for layout, frames in layouts:
            for level in LEVELS:
                try:
                    plan = plan_inputs(params, config, layout, level, steps, frames or FRAMES,
                                       channels)
                except ValueError as why:
                    error = why
                    continue
                more = [(_layout_label(layout, frames, level, steps, channels), plan)]
                pixels = control_at_pixels(plan)
                if pixels is not None:
                    more.append((more[0][0] + ", control at pixels", pixels))
                found += [(label, p) for label, p in more if all(p != seen for _, seen in found)]
    if not found and error is not None:
        raise error
    return found


# --------------------------------------------------------------------------------------------
# Tensors and the builder (torch and diffusers imported inside)
# --------------------------------------------------------------------------------------------

def _tensor(spec: tuple) -> Any:
    """One spec made into a value (seeded)."""
    import torch

    gen = torch.Generator().manual_seed(1234)
    kind = spec[0]
    if kind == "randn":
        return torch.randn(*spec[1], generator=gen)
    if kind == "list":
        return list(_tensor(spec[1]).unbind(0))
    if kind == "ones":
        return torch.ones(*spec[1], dtype=torch.long)
    if kind == "zeros":
        return torch.zeros(*spec[1])
    if kind == "steps":
        return torch.tensor(STEPS, dtype=torch.float32 if spec[1] == "float" else torch.long)
    if kind == "grid":
        tokens, columns, side = spec[1:]
        ids = torch.zeros(tokens, columns)
        index = torch.arange(tokens)
        ids[:, -2], ids[:, -1] = index // max(side, 1), index % max(side, 1)
        return ids
    if kind == "full":
        return torch.full(spec[1], spec[2], dtype=torch.long if spec[3] == "long"
                          else torch.float32)
    if kind == "labels":
        return torch.tensor([1, 2][:BATCH])
    return spec[1]


def make_inputs(plan: Mapping[str, tuple]) -> dict[str, Any]:
    """The keyword inputs of a plan."""
    return {name: _tensor(spec) for name, spec in plan.items()}


def families(diffusers: Any) -> dict[str, tuple[str, ...]]:
    """Every model class ``diffusers.models`` exports (a ``ModelMixin``), variant forward."""
    import diffusers.models as models
    from diffusers.models.modeling_utils import ModelMixin

    exported = {}
    for name in dir(models):
        try:
            exported[name] = getattr(models, name)
        except Exception:  # an optional dependency missing: the class is not there
            continue
    return {name: ("forward",) for name in model_classes(exported, ModelMixin)}


def code(diffusers: Any, family: str) -> str:
    """The module file of a family's class, relative to the package (an --exclude glob)."""
    import diffusers.models as models

    module = sys.modules[getattr(models, family).__module__]
    return str(Path(module.__file__).relative_to(Path(diffusers.__file__).parent))


def _parameters(model: Any) -> int:
    """A model's parameter count."""
    return sum(p.numel() for p in model.parameters())


def _depth(error: BaseException) -> int:
    """How many frames deep an error was raised (the candidate that got furthest)."""
    return len(traceback.extract_tb(error.__traceback__))


def configs(cls: type) -> list[tuple[str, dict[str, Any], bool]]:
    """``(label, changes, sized)`` configs in the order tried: tiny, tiny with an unset patch
    size set, tiny with its layer counts kept, default widths with the layers shrunk, the
    default; ``sized``: at its default widths. Every one is built only under
    DEFAULT_SIZED_LIMIT parameters (counted on the meta device first)."""
    defaults, _ = init_defaults(cls)
    tiny = cfg.shrink_diffusers(defaults)
    layers_only = {k: v for k, v in tiny.items() if cfg._is_layer_count(k)
                   or cfg._is_layer_index_list(k, defaults.get(k))}
    found: list[tuple[str, dict[str, Any], bool]] = []
    for label, changes, sized in (
            ("tiny", tiny, False),
            ("tiny, patch size set", cfg.shrink_diffusers(defaults, patch=True), False),
            ("tiny, layers kept", cfg.shrink_diffusers(defaults, layers=False), False),
            ("default widths", layers_only, True), ("default", {}, True)):
        if all(changes != seen for _, seen, _ in found):
            found.append((label, changes, sized))
    return found


def build(diffusers: Any, family: str, variant: str, device: str = "cpu"
          ) -> tuple[Any, dict, dict]:
    """``(model, kwargs, notes)`` of one diffusers case that runs eagerly on ``device``: the
    first config of ``configs`` and the first input plan of ``candidate_plans`` that run
    (twice, without gradients). Raises the most telling error if none does."""
    import diffusers.models as models
    import torch

    cls = getattr(models, family)
    defaults, required = init_defaults(cls)
    if required:
        raise ValueError(f"__init__ needs {', '.join(required)} (no default config)")
    params = dict(list(inspect.signature(cls.forward).parameters.items())[1:])
    plans = candidate_plans(params, defaults, family)
    # (telling, error): the first config that builds, tried with plans in the config's own
    # channels and float steps, says best why a family fails; later tries fail on the shapes
    # they change. The telling error that got the deepest is raised.
    errors: list[tuple[bool, BaseException]] = []
    built = 0
    for label, changes, _ in configs(cls):
        try:
            with torch.device("meta"):
                count = _parameters(cls(**changes))
            if count > DEFAULT_SIZED_LIMIT:
                raise ValueError(f"{label}: {count / 1e6:.0f}M parameters, over the "
                                 f"{DEFAULT_SIZED_LIMIT / 1e6:.0f}M a case may build")
            torch.manual_seed(0)
            model = cls(**changes).eval().to(device)
        except Exception as error:  # the next config may build
            errors.append((False, error))
            continue
        built += 1
        config = {**defaults, **changes}
        for inputs, plan in candidate_plans(params, config, family) or plans:
            try:
                kwargs = {k: v.to(device) if isinstance(v, torch.Tensor) else v
                          for k, v in make_inputs(plan).items()}
                with torch.no_grad():
                    model(**kwargs)
                    model(**kwargs)
            except Exception as error:  # the next candidate may fit
                errors.append((built == 1 and "integer steps" not in inputs
                               and "3 channels" not in inputs, error))
                continue
            return model, kwargs, {"config": label, "inputs": inputs,
                                   "parameters": _parameters(model),
                                   "changes": {k: repr(v) for k, v in changes.items()}}
        del model
    raise max(errors, key=lambda pair: (pair[0], _depth(pair[1])))[1]


def scan(names: list[str], out: Path) -> None:
    """Build-only pass: each family built and run eagerly, one JSON line each (in this
    process; run it per family to keep memory flat)."""
    import json

    import diffusers

    for name in names:
        try:
            _, _, notes = build(diffusers, name, "forward")
            record = {"family": name, "ok": True, **notes}
        except Exception as error:
            text = str(error).strip()
            record = {"family": name, "ok": False, "error": f"{type(error).__name__}: "
                      f"{text.splitlines()[0][:300] if text else ''}"}
        with out.open("a") as handle:
            handle.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    scan(sys.argv[2:], Path(sys.argv[1]))
