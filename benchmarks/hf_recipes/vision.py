"""Recipes of the vision families (see hf_recipes): what their config does not say."""

from __future__ import annotations

from typing import Any

from hf_configs import HEAD_DIM, KV_HEADS, WIDTH
from hf_inputs import feature_count, randn, special_ids, token_ids
from hf_models import BATCH, SEQ

from hf_recipes import Recipe

# --------------------------------------------------------------------------------------------
# Shared parts
# --------------------------------------------------------------------------------------------


def _unit(*shape: int) -> Any:
    """Seeded uniform values in [0, 1): pixels a processor rescales but does not normalize."""
    import torch

    return torch.rand(*shape, generator=torch.Generator().manual_seed(1234))


def _text(config: Any) -> dict:
    """Token ids avoiding the config's special ids, with their mask."""
    import torch

    return {"input_ids": token_ids(special_ids(config.to_dict())),
            "attention_mask": torch.ones(BATCH, SEQ, dtype=torch.long)}


def _clip_texts(config: Any, rows: int, words: int) -> tuple[Any, Any]:
    """CLIP-tokenized texts as a processor pads them to 77: ``rows`` texts of ``words``
    tokens between the text config's start and end tokens, then padding, with their mask."""
    import torch

    text, length = config.text_config, 77
    ids = torch.full((rows, length), text.pad_token_id)
    body = token_ids(special_ids(config.to_dict()), length=rows * words // BATCH)
    ids[:, 1:words + 1] = body.reshape(rows, words)
    ids[:, 0], ids[:, words + 1] = text.bos_token_id, text.eos_token_id
    mask = (torch.arange(length) < words + 2).long().expand(rows, length)
    return ids, mask


# --------------------------------------------------------------------------------------------
# Families
# --------------------------------------------------------------------------------------------

# DepthPro's 16 px patches of 4 px tokens (its tests' sizes): the tiny 64 px image holds the
# 0.25-scaled one (the processor's 1536 px over the default 384 px patches, scaled alike).
_DEPTH_PRO_PATCH = {"patch_size": 4}


def gemma4_image(config: Any) -> dict:
    """Gemma4ImageProcessor's output for a square image at its smallest budget (70 soft
    tokens: 630 patches of 16 px): a 24 x 24 grid (384 px, the largest multiple of pooling
    x patch within it), rescaled to [0, 1], padded to 630, with (x, y) positions, -1 padding
    (``config``: the vision tower's)."""
    import torch

    patch, budget, side = config.patch_size, 70 * config.pooling_kernel_size ** 2, 24
    pixels = _unit(BATCH, budget, 3 * patch * patch)
    pixels[:, side * side:] = 0
    ys, xs = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij")
    grid = torch.stack([xs, ys], dim=-1).reshape(side * side, 2)
    positions = torch.cat([grid, torch.full((budget - side * side, 2), -1)])
    return {"pixel_values": pixels,
            "pixel_position_ids": positions.expand(BATCH, budget, 2).clone()}


def inkling2_image(config: Any) -> dict:
    """Inkling2ImageProcessor's output for a 64 px image: one 40 px patch (2 x 2 merged
    20 px patches, channels last, in [-1, 1]) per language model token, a 2 x 2 grid each
    (``config``: the vision tower's)."""
    import torch

    side = config.patch_size * config.spatial_merge_size
    return {"pixel_values": _unit(BATCH * 4, side, side, config.num_channels) * 2 - 1,
            "image_grid_thw": torch.tensor([[1, 2, 2]] * BATCH)}


def _mgp_str(model: Any, config: Any) -> dict:
    """MgpstrProcessor's normalized 32 x 128 text-line images."""
    height, width = config.image_size
    return {"pixel_values": randn(BATCH, config.num_channels, height, width)}


def _minicpm_vision(model: Any, config: Any) -> dict:
    """MiniCPM's image processor output for BATCH 64 px images (a multiple of 4 patches:
    both 2 x 2 merges divide the grid): every image's patches side by side in one
    (1, C, P, patches x P) row, with each image's patch grid."""
    import torch

    patch, grid = config.patch_size, config.image_size // config.patch_size
    return {"pixel_values": randn(1, config.num_channels, patch, BATCH * grid * grid * patch),
            "target_sizes": torch.tensor([[grid, grid]] * BATCH, dtype=torch.int32)}


# MiniCPM's ViT merger runs after layer insert_layer_id: the default (6) is past the tiny
# tower's layers, which would skip it; after the first, the second runs on merged tokens.
_MINICPM = Recipe("the processor packs all images' patches into one row with their grids "
                  "(target_sizes); the merger's layer is past the tiny tower's",
                  config={"insert_layer_id": 0}, inputs=_minicpm_vision)


def _muse_vision(model: Any, config: Any) -> dict:
    """MuseGlimmerImageProcessor's output for BATCH 64 px images (resized to 56 px: a 4 x 4
    grid of 14 px patches, 2 x 2 merged), each patch flattened (temporal, C, P, P), a still
    image's patch repeated over the temporal patch."""
    import torch

    grid, width = 4, 3 * config.patch_size ** 2
    patches = randn(BATCH * grid * grid, width).repeat(1, config.patch_temporal)
    return {"pixel_values": patches, "grid_thw": torch.tensor([[1, grid, grid]] * BATCH)}


_MUSE = Recipe("the temporal patch is `patch_temporal` (2), a name the generic builder does "
               "not read: each flattened patch holds both frames", inputs=_muse_vision)


def _omdet_turbo(model: Any, config: Any) -> dict:
    """OmDetTurboProcessor's output: the images, 3 class names per image (flattened, their
    count per image) and one "Detect a, b, c." task per image, each padded to 77 tokens."""
    import torch

    classes, class_mask = _clip_texts(config, 3 * BATCH, 2)
    tasks, task_mask = _clip_texts(config, BATCH, 10)
    side = config.image_size
    return {"pixel_values": randn(BATCH, 3, side, side), "classes_input_ids": classes,
            "classes_attention_mask": class_mask, "tasks_input_ids": tasks,
            "tasks_attention_mask": task_mask, "classes_structure": torch.tensor([3] * BATCH)}


# OmDet-Turbo's text width, which its class embeddings and task features share: twice the
# decoder's, as by default (512 and 256).
_OMDET_TEXT_WIDTHS = dict.fromkeys(("text_projection_in_dim", "text_projection_out_dim",
                                    "class_embed_dim"), 2 * WIDTH)


def _oneformer(model: Any, config: Any) -> dict:
    """OneFormerProcessor's images with their mask and the task text ("the task is
    semantic") CLIP-tokenized, padded to task_seq_len; the tiny vocabulary's last two ids
    stand for CLIP's start and end of text (its last two)."""
    import torch

    side, vocab = config.backbone_config.image_size, config.text_encoder_vocab_size
    task = torch.zeros(BATCH, config.task_seq_len, dtype=torch.long)
    words = token_ids(special_ids(config.to_dict()), vocab - 2, 4)
    task[:, :6] = torch.cat([torch.full((BATCH, 1), vocab - 2), words,
                             torch.full((BATCH, 1), vocab - 1)], dim=1)
    return {"pixel_values": randn(BATCH, 3, side, side), "task_inputs": task,
            "pixel_mask": torch.ones(BATCH, side, side, dtype=torch.long)}


def _pi0(model: Any, config: Any) -> dict:
    """PI0Processor's 2 camera images per sample (B, cameras, C, H, W) with their mask, the
    prompt "<image> x features per camera x cameras, <bos>, text", and the action expert's
    input: the state token and chunk_size noisy-action tokens, embedded (what
    PI0ForConditionalGeneration's embed_action_time hands PI0Model)."""
    import torch

    vlm, cameras = config.vlm_config, 2
    side = vlm.vision_config.image_size
    pixels = randn(BATCH, cameras, 3, side, side)
    per_camera = feature_count(model.vlm, "image", {"pixel_values": pixels[0]}) // cameras
    ids = torch.cat([torch.full((BATCH, cameras * per_camera), vlm.image_token_index),
                     torch.full((BATCH, 1), vlm.text_config.bos_token_id),
                     _text(config)["input_ids"]], dim=1)
    return {"action_embeds": randn(BATCH, 1 + config.chunk_size, config.dit_config.hidden_size),
            "input_ids": ids, "attention_mask": torch.ones_like(ids), "pixel_values": pixels,
            "pixel_attention_mask": torch.ones(BATCH, cameras, dtype=torch.bool)}


def _ocr_line(model: Any, config: Any) -> dict:
    """PP-OCR's recognition processor's output: a text line resized and padded to 48 x 320,
    normalized."""
    return {"pixel_values": randn(BATCH, 3, 48, 320)}


# PP-LCNetV3's recognition stages (PaddleOCR's NET_CONFIG_rec, as its tests have them):
# (kernel, in, out, stride, squeeze-excitation), strides (2, 1) halving the height only.
_LCNET_V3_REC = [
    [[3, 16, 32, 1, False]],
    [[3, 32, 64, 1, False], [3, 64, 64, 1, False]],
    [[3, 64, 128, [2, 1], False], [3, 128, 128, 1, False]],
    [[3, 128, 256, [1, 2], False]] + [[5, 256, 256, 1, False]] * 4,
    [[5, 256, 512, [2, 1], True], [5, 512, 512, 1, True], [5, 512, 512, [2, 1], False],
     [5, 512, 512, 1, False]],
]

# PP-LCNetV4 as a text detector's backbone (its tests' 16-channel one): square stride-2
# stages, all four output; the default config's is the recognizer's, which keeps the
# width and outputs its last stage only.
_LCNET_V4_DET = {
    "out_features": ["stage1", "stage2", "stage3", "stage4"], "out_indices": [1, 2, 3, 4],
    "stem_channels": [3, 16, 16], "stem_type": "large",
    "block_configs": [
        [[3, 16, 16, 1, False]],
        [[3, 16, 16, 2, False], [3, 16, 16, 1, False]],
        [[3, 16, 16, 2, False], [3, 16, 16, 1, False]],
        [[3, 16, 16, 2, False]] + [[5, 16, 16, 1, False]] * 4,
    ],
    # Derived from the blocks, but the default's values in the shrunk dict would win.
    "depths": [1, 2, 2, 5], "stage_out_channels": [16] * 4,
}
_DET_WHY = ("the default backbone is the recognizer's (height-only strides, last stage out); "
            "a detector's outputs every stage")

# PP-OCRv6 medium's intraclass blocks (its tests' config; the default leaves them unset):
# (kernel, stride, padding) of each convolution.
_INTRACLASS_BLOCK = {
    "reduce_channel": [1, 1, 0],
    "return_channel": [1, 1, 0],
    "vertical_long_to_small_conv_longratio": [[7, 1], [1, 1], [3, 0]],
    "vertical_long_to_small_conv_midratio": [[5, 1], [1, 1], [2, 0]],
    "vertical_long_to_small_conv_shortratio": [[3, 1], [1, 1], [1, 0]],
    "horizontal_small_to_long_conv_longratio": [[1, 7], [1, 1], [0, 3]],
    "horizontal_small_to_long_conv_midratio": [[1, 5], [1, 1], [0, 2]],
    "horizontal_small_to_long_conv_shortratio": [[1, 3], [1, 1], [0, 1]],
    "symmetric_conv_long_longratio": [[7, 7], [1, 1], [3, 3]],
    "symmetric_conv_long_midratio": [[5, 5], [1, 1], [2, 2]],
    "symmetric_conv_long_shortratio": [[3, 3], [1, 1], [1, 1]],
}


def _sam2(model: Any, config: Any) -> dict:
    """Sam2Processor's output: the images and one foreground point prompt per image (one
    object), in the resized image's pixel coordinates."""
    import torch

    side = config.vision_config.backbone_config.image_size[0]
    points = _unit(BATCH, 1, 1, 2) * side
    return {"pixel_values": randn(BATCH, 3, side, side), "input_points": points,
            "input_labels": torch.ones(BATCH, 1, 1, dtype=torch.long)}


# SAM 2's Hiera image encoder, small (its tests' layout at width 16) on a 64 px image: the
# stage widths double from the first, the neck reads them last first, and the feature
# maps of the first three stages (stride 4, 8, 16) are named, as nothing derives them.
_SAM2_VISION = {
    "backbone_config": {"hidden_size": 16, "embed_dim_per_stage": [16, 32, 64, 128],
                        "image_size": [64, 64]},
    "backbone_channel_list": [128, 64, 32, 16],
    "backbone_feature_sizes": [[16, 16], [8, 8], [4, 4]],
}


def _seggpt(model: Any, config: Any) -> dict:
    """SegGptImageProcessor's output: the image, a prompt image and its mask (a binary
    segmentation map as black and white RGB), each half the model's height, normalized
    with ImageNet's statistics."""
    import torch

    height, width = config.image_size[0] // 2, config.image_size[1]
    mean = torch.tensor([0.485, 0.456, 0.406])[:, None, None]
    std = torch.tensor([0.229, 0.224, 0.225])[:, None, None]
    mask = (randn(BATCH, 1, height, width) > 0).float().expand(BATCH, 3, height, width)
    return {"pixel_values": randn(BATCH, 3, height, width),
            "prompt_pixel_values": randn(BATCH, 3, height, width),
            "prompt_masks": (mask - mean) / std}


def siglip2_pixels(config: Any) -> dict:
    """Siglip2ImageProcessor's output for a square image: its 256-patch budget filled by a
    16 x 16 grid of patches (flattened, normalized), their mask and grid shape."""
    import torch

    patch, grid = config.patch_size, 16
    return {"pixel_values": randn(BATCH, grid * grid, config.num_channels * patch * patch),
            "pixel_attention_mask": torch.ones(BATCH, grid * grid, dtype=torch.int32),
            "spatial_shapes": torch.tensor([[grid, grid]] * BATCH)}


def _siglip2(model: Any, config: Any) -> dict:
    """Siglip2Processor's text ids and image patches."""
    return {**_text(config), **siglip2_pixels(config.vision_config)}


def _siglip2_vision(model: Any, config: Any) -> dict:
    """Siglip2ImageProcessor's patches, mask and grid shapes."""
    return siglip2_pixels(config)


def _tvp(model: Any, config: Any) -> dict:
    """TvpProcessor's output for one video (batch 1: see the recipe): num_frames frames
    padded to max_img_size, and its query text."""
    return {**{name: ids[:1] for name, ids in _text(config).items()},
            "pixel_values": randn(1, config.num_frames, 3, config.max_img_size,
                                  config.max_img_size)}


RECIPES: dict[str, Recipe] = {
    "depth_pro": Recipe(
        "the default 384 px patch exceeds the tiny image at its 0.25 scale; the encoders' "
        "image size follows the patch",
        config={"patch_size": 16, "image_model_config": _DEPTH_PRO_PATCH,
                "patch_model_config": _DEPTH_PRO_PATCH, "fov_model_config": _DEPTH_PRO_PATCH}),
    "gemma4_vision": Recipe(
        "the tower takes flattened patches padded to the processor's budget, with their "
        "(x, y) positions (-1: padding), not NCHW images",
        inputs=lambda model, config: gemma4_image(config)),
    "inkling2_vision": Recipe(
        "the processor cuts images into one merged patch per language model token, channels "
        "last, with a grid counted in those tokens; the projector's widths are no width the "
        "shrinker knows", config={"projection_hidden_dim": WIDTH, "text_hidden_size": WIDTH},
        inputs=lambda model, config: inkling2_image(config)),
    "lw_detr": Recipe(
        "the default names no projector scale (a checkpoint does: the tiny one's single 1.0), "
        "so no feature level reaches the decoder", config={"projector_scale_factors": [1.0]}),
    "mgp-str": Recipe("the image is 32 x 128 (a text line), not square", inputs=_mgp_str),
    "minicpm_ocr_vision": _MINICPM,
    "minicpmv4_7_vision": _MINICPM,
    "muse_glimmer_vision": _MUSE,
    "muse_spark_vision": _MUSE,
    "omdet-turbo": Recipe(
        "the processor flattens class names over the batch (classes_structure counts them) "
        "beside a task text; the neck's input widths are the stages of the ResNet standing in "
        "for timm's Swin (channels first: no channels-last norm, as in its tests), and the "
        "text width must differ from the decoder's, as by default (else task_project is unset)",
        config={"encoder_in_channels": [32, 64, 128], "vision_features_channels": [WIDTH] * 3,
                "apply_layernorm_after_vision_backbone": False, **_OMDET_TEXT_WIDTHS,
                "text_config": {"hidden_size": 2 * WIDTH}},
        inputs=_omdet_turbo),
    "oneformer": Recipe(
        "the main input names two inputs (pixel_values, task_inputs): the images and the "
        "processor's tokenized task text", inputs=_oneformer),
    "pi0": Recipe(
        "PI0Model's main input is the action expert's embedded state and noisy actions; the "
        "processor sends several camera images per sample, each its run of image tokens; the "
        "expert's head size (not width / heads) must match the VLM's, whose cache it reads",
        config={"dit_config": {"head_dim": HEAD_DIM}}, inputs=_pi0),
    "pp_ocrv5_mobile_rec": Recipe(
        "the processor sends a 48 x 320 text line, in no config field; the default backbone "
        "is the detector's (square strides), the recognizer's halves the height only",
        config={"backbone_config": {"block_configs": _LCNET_V3_REC}}, inputs=_ocr_line),
    "pp_ocrv6_medium_det": Recipe(
        _DET_WHY + "; the intraclass blocks and per-level scale factors are unset by default",
        config={"backbone_config": _LCNET_V4_DET, "intraclass_block_config": _INTRACLASS_BLOCK,
                "scale_factor_list": [1, 2, 4, 8]}),
    "pp_ocrv6_small_det": Recipe(
        _DET_WHY + ", whose widths the neck's inputs name",
        config={"backbone_config": _LCNET_V4_DET, "layer_list_out_channels": [16] * 4}),
    "sam2": Recipe(
        "the Hiera stage widths, the neck's channel list and the feature map sizes are "
        "tied lists the shrinker leaves at their defaults (1024 px); the processor sends "
        "point prompts with their labels", config={"vision_config": _SAM2_VISION},
        inputs=_sam2),
    "sapiens2": Recipe(
        "the key/value heads per layer are a list derived from the default's heads (8 in the "
        "middle layers, more than the tiny 4 query heads): derived again from the tiny ones",
        config={"num_key_value_heads_per_layer": None,
                "num_key_value_attention_heads": KV_HEADS}),
    "seggpt": Recipe(
        "the processor sends a prompt image and its mask beside the image, stacked into one "
        "canvas twice as high (image_size, left at 896 x 448); the merge layer and the "
        "decoder's feature layers are indices past the tiny encoder's",
        config={"image_size": [128, 64], "merge_index": 0,
                "intermediate_hidden_state_indices": [0, 1]}, inputs=_seggpt),
    "siglip2": Recipe(
        "the text projection_size (768) is no width the shrinker knows; the processor sends "
        "flattened patches with their mask and grid shape",
        config={"text_config": {"projection_size": WIDTH}}, inputs=_siglip2),
    "siglip2_vision_model": Recipe(
        "the tower takes flattened patches with their mask and grid shape, not NCHW images",
        inputs=_siglip2_vision),
    "tvp": Recipe(
        "the frame side is max_img_size (448), a name the shrinker does not cap (the visual "
        "prompt, a frame border, shrinks with it); the 2D position embeddings run at batch 1 "
        "only (a view by the batch size of one row), as in its tests",
        config={"max_img_size": 64, "visual_prompt_size": 8}, inputs=_tvp),
    "uvdoc": Recipe(
        "the head concatenates every bridge stage's map, which the default backbone config "
        "does not output (a checkpoint names all six)",
        config={"backbone_config": {"out_features": [f"stage{i}" for i in range(1, 7)],
                                    "out_indices": list(range(1, 7))}}),
}
