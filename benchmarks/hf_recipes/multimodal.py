"""Recipes of the multimodal families (see hf_recipes): what their config does not say."""

from __future__ import annotations

import inspect
import math
from typing import Any

from hf_configs import FFN, HEAD_DIM, HEADS, IMAGE, LAYERS, WIDTH
from hf_inputs import (
    feature_count,
    image_candidates,
    layout_boxes,
    placeholder_rows,
    randn,
    special_ids,
    token_ids,
    with_modalities,
    with_placeholders,
)
from hf_models import BATCH, SEQ

from hf_recipes import Recipe
from hf_recipes.audio import gemma4_audio
from hf_recipes.vision import gemma4_image

# The id a BLIP processor's tokenizer adds for its <image> / <video> token: the tiny
# vocabulary's last (the default config leaves it unset; a checkpoint sets it).
_QUERY_TOKEN = 127


def _text(config: Any) -> dict:
    """Token ids avoiding the config's special ids, with their mask."""
    import torch

    return {"input_ids": token_ids(special_ids(config.to_dict())),
            "attention_mask": torch.ones(BATCH, SEQ, dtype=torch.long)}


def _queried(config: Any, token: int, per_sample: int) -> dict:
    """Token ids led by ``per_sample`` placeholder tokens each (where BLIP and LLaVA-style
    processors put an image's tokens: before the text), with their mask."""
    import torch

    rows = placeholder_rows(_text(config)["input_ids"].tolist(), BATCH * per_sample, token,
                            None, None)
    ids = torch.tensor(rows)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def _blip_2(model: Any, config: Any) -> dict:
    """Blip2Processor's image (B, C, H, W) and text led by num_query_tokens image tokens."""
    side = config.vision_config.image_size
    return {"pixel_values": randn(BATCH, 3, side, side),
            **_queried(config, config.image_token_index, config.num_query_tokens)}


def _blip_2_qformer(model: Any, config: Any) -> dict:
    """What Blip2Model feeds its Q-Former: the 32 learned queries (B, 32, width) and the
    vision tower's states of a 64 px image (4 x 4 patches of 14 px and a class token)."""
    import torch

    patches = (64 // 14) ** 2 + 1
    return {"query_embeds": randn(BATCH, 32, config.hidden_size),
            "encoder_hidden_states": randn(BATCH, patches, config.encoder_hidden_size),
            "encoder_attention_mask": torch.ones(BATCH, patches, dtype=torch.long)}


def _chameleon_vocabulary(codes: int) -> dict[str, int]:
    """A Chameleon tokenizer's vocabulary map in small: <image> and the image start and end
    tokens at 3-5, the VQ codes' IMGIMG<code in letters>Z tokens at the top of the tiny
    vocabulary (the codes' digits as letters, A for 0)."""
    names = {f"IMGIMG{''.join(chr(ord('A') + int(d)) for d in str(code))}Z": 128 - codes + code
             for code in range(codes)}
    return {"<image>": 3, "<racm3:break>": 4, "<eoss>": 5, **names}


_CHAMELEON_CODES = 64


def _chameleon(model: Any, config: Any) -> dict:
    """ChameleonProcessor's image and text: each sample's image tokens (one per VQ code of
    its 16 x downsampled image) framed by <racm3:break> and <eoss>, before text below the
    image codes."""
    import torch

    vocabulary = config.vocabulary_map
    side = config.vq_config.resolution
    count = (side // 2 ** (len(config.vq_config.channel_multiplier) - 1)) ** 2
    text = token_ids(special_ids(config.to_dict()) | set(vocabulary.values()),
                     128 - _CHAMELEON_CODES)
    ids = torch.tensor(placeholder_rows(text.tolist(), BATCH * count, vocabulary["<image>"],
                                        vocabulary["<racm3:break>"], vocabulary["<eoss>"]))
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids),
            "pixel_values": randn(BATCH, 3, side, side)}


def _deepseek_ocr2(model: Any, config: Any) -> dict:
    """DeepseekOcr2Processor's global view at 768 px (the smaller size its learned queries
    cover: 12 x 12), no local tiles, and 144 image tokens plus the view separator's."""
    image = {"pixel_values": randn(BATCH, 3, 768, 768)}
    return {**image, **with_placeholders(model, config, "image", image, _text(config))}


def _emu3_vocabulary(codes: int) -> dict[str, int]:
    """An Emu3 tokenizer's vocabulary map in small: <image>, the image start, end and wrapper
    tokens, the end-of-row (extra_200) and end-of-frame (extra_201) tokens at 3-8, the VQ
    codes' <|visual token NNNNNN|> tokens from 32 (below the config's special ids)."""
    specials = ("<image>", "<|image start|>", "<|image end|>", "<|image token|>",
                "<|extra_200|>", "<|extra_201|>")
    return {**{name: 3 + index for index, name in enumerate(specials)},
            **{f"<|visual token {code:06d}|>": 32 + code for code in range(codes)}}


def _emu3(model: Any, config: Any) -> dict:
    """Emu3Processor's image with its size and text: <|image start|>, the size as text
    ("8*8"), <|image token|>, one image token per VQ code plus one per row's end, then
    <|extra_201|> <|image end|>, before the text."""
    import torch

    vocabulary = config.vocabulary_map
    side = 64
    rows = side // 2 ** (len(config.vq_config.channel_multiplier) - 1)
    text = token_ids(special_ids(config.to_dict()) | set(vocabulary.values())).tolist()
    size = text[0][:3]  # the "h*w" the tokenizer writes as text
    image = ([vocabulary["<|image start|>"], *size, vocabulary["<|image token|>"]]
             + [vocabulary["<image>"]] * rows * (rows + 1)
             + [vocabulary["<|extra_201|>"], vocabulary["<|image end|>"]])
    ids = torch.tensor([image + row for row in text])
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids),
            "pixel_values": randn(BATCH, 3, side, side),
            "image_sizes": torch.tensor([[side, side]] * BATCH)}


def _evolla(model: Any, config: Any) -> dict:
    """EvollaProcessor's text and protein: the SaProt tokenizer's structure-aware tokens
    (past its 5 specials) between <cls> (0) and <eos> (2), with their mask."""
    import torch

    protein = token_ids({0, 1, 2, 3, 4}, config.protein_encoder_config.vocab_size, SEQ - 2)
    ids = torch.cat([torch.zeros(BATCH, 1, dtype=torch.long), protein,
                     torch.full((BATCH, 1), 2)], dim=1)
    return {**_text(config), "protein_input_ids": ids,
            "protein_attention_mask": torch.ones_like(ids)}


def _granite4_vision(model: Any, config: Any) -> dict:
    """Granite4VisionProcessor's any-resolution image at the one pinpoint (the base view and
    one tile, (B, 2, C, H, W)) with its size, and the text led by as many image tokens as the
    Q-Former downsampler's packed features (newlines included)."""
    import torch

    side = config.vision_config.image_size
    image = {"pixel_values": randn(BATCH, 2, 3, side, side),
             "image_sizes": torch.tensor([[side, side]] * BATCH)}
    with torch.no_grad():
        packed = model.get_image_features(**image).deepstack_features[0][1]
    return {**image, **_queried(config, config.image_token_index, len(packed[0]))}


def _tiles(config: Any) -> dict:
    """An any-resolution image at the one pinpoint: the base view and one tile,
    (B, 2, C, H, W), with its size."""
    import torch

    side = config.vision_config.image_size
    return {"pixel_values": randn(BATCH, 2, 3, side, side),
            "image_sizes": torch.tensor([[side, side]] * BATCH)}


def _tiles_and_video(model: Any, config: Any) -> dict:
    """LlavaNextVideoProcessor's (LlavaOnevisionProcessor's) any-resolution image and a
    two-frame video per sample, each run of placeholders as long as its features."""
    side = config.vision_config.image_size
    video = {"pixel_values_videos": randn(BATCH, 2, 3, side, side)}
    return with_modalities(model, config, [("image", _tiles(config)), ("video", video)],
                           _text(config))


def _any_resolution(model: Any, config: Any) -> dict:
    """LlavaNextProcessor's any-resolution image at the one pinpoint (the base view and one
    tile, (B, 2, C, H, W)) with its size, and the text led by as many image tokens as the
    image's features (its newline tokens included)."""
    image = _tiles(config)
    count = feature_count(model, "image", image)
    assert count is not None and count % BATCH == 0, count
    return {**image, **_queried(config, config.image_token_index, count // BATCH)}


def _two_resolutions(model: Any, config: Any) -> dict:
    """DeepseekVLHybridProcessor's image at both resolutions (the low-resolution tower's size
    and the SAM tower's), and the text with as many image tokens as the aligned features."""
    high = config.high_res_vision_config.image_size
    image = {"pixel_values": randn(BATCH, 3, config.vision_config.image_size,
                                   config.vision_config.image_size),
             "high_res_pixel_values": randn(BATCH, 3, high, high)}
    return {**with_placeholders(model, config, "image", image, _text(config)), **image}


def _video_frames_as_image_tokens(model: Any, config: Any) -> dict:
    """Glm5NextProcessor's image and video: the image's tokens framed by its start and end,
    and the video's frames as image tokens between the video's start and end (the code tells
    them apart by that span; the config's video token id is never placed)."""
    params = inspect.signature(model.forward).parameters
    image = image_candidates(config, params)[0]
    video = image_candidates(config, params, "pixel_values_videos")[0]
    ids = with_placeholders(model, config, "image", image, _text(config))
    span = (config.image_token_id, config.video_start_token_id, config.video_end_token_id)
    return {**with_placeholders(model, config, "video", video, ids, framed=span), **image,
            **video}


def _molmo2(model: Any, config: Any) -> dict:
    """Molmo2Processor's image as one low-resolution crop per sample (B, patches, patch
    pixels), each 2 x 2 block of patches pooled into one token (indices into the flattened
    patches, -1 past an odd edge), its grid (rows, columns, and no high-resolution crops),
    and the text with the pooled tokens framed by the image's start and end."""
    import torch

    vision = config.vision_config
    side = math.isqrt(vision.num_position_embeddings)  # patches per crop: the whole grid
    rows = (side + 1) // 2
    pooled = [[crop * side * side + r * side + c if r < side and c < side else -1
               for r in (2 * row, 2 * row + 1) for c in (2 * col, 2 * col + 1)]
              for crop in range(BATCH) for row in range(rows) for col in range(rows)]
    image = {"pixel_values": randn(BATCH, side * side,
                                   vision.patch_size ** 2 * vision.num_channels),
             "image_token_pooling": torch.tensor(pooled),
             "image_grids": torch.tensor([[rows, rows, 0, 0]] * BATCH),
             "image_num_crops": torch.ones(BATCH, dtype=torch.long)}
    framed = (config.image_token_id, config.image_start_token_id, config.image_end_token_id)
    return {**with_placeholders(model, config, "image", image, _text(config), framed=framed),
            **image}


def _gemma4(model: Any, config: Any) -> dict:
    """Gemma4Processor's image, a two-frame video and audio per sample (the towers' own
    recipes' inputs under the names the model takes), and the text with each one's soft
    tokens framed by its start and end tokens."""
    import torch

    image = gemma4_image(config.vision_config)  # each sample's video: its image twice
    audio = gemma4_audio(model, config.audio_config)
    given = [("image", {"pixel_values": image["pixel_values"],
                        "image_position_ids": image["pixel_position_ids"]}),
             ("video", {"pixel_values_videos": image["pixel_values"].repeat_interleave(2, 0),
                        "video_position_ids": image["pixel_position_ids"].repeat_interleave(
                            2, 0),
                        "num_frames_per_video": torch.full((BATCH,), 2)}),
             ("audio", {"input_features": audio["input_features"],
                        "input_features_mask": audio["attention_mask"]})]
    return with_modalities(model, config, given, _text(config))


def _fuyu(model: Any, config: Any) -> dict:
    """FuyuProcessor's image as a sequence of flattened patches, (B, 4, C x P x P) (a
    linear layer embeds them; there is no vision tower), with an image token per patch."""
    width = config.num_channels * config.patch_size ** 2
    return {"pixel_values": randn(BATCH, 4, width), **_queried(config, config.image_token_id, 4)}


def _granite_docling(model: Any, config: Any) -> dict:
    """GraniteDoclingProcessor's page as two tiles per sample, (B, 2, C, H, W), both real
    (its pixel_attention_mask is per tile, not per pixel), and the text with as many image
    tokens as the tiles' features."""
    import torch

    side = config.vision_config.image_size
    image = {"pixel_values": randn(BATCH, 2, config.vision_config.num_channels, side, side),
             "pixel_attention_mask": torch.ones(BATCH, 2, dtype=torch.bool)}
    return {**with_placeholders(model, config, "image", image, _text(config)), **image}


def _mllama(model: Any, config: Any) -> dict:
    """MllamaProcessor's one image per sample as one tile of max_num_tiles (aspect ratio 1 x 1:
    id 1, only the first tile valid), the text led by one <|image|> token, and the
    cross-attention mask letting every token from it on see that tile."""
    import torch

    vision = config.vision_config
    tiles, side = vision.max_num_tiles, vision.image_size
    ids = _queried(config, config.image_token_index, 1)
    seq = ids["input_ids"].shape[1]
    valid = torch.zeros(BATCH, 1, tiles, dtype=torch.long)
    valid[..., 0] = 1
    cross = torch.zeros(BATCH, seq, 1, tiles, dtype=torch.long)
    cross[..., 0] = 1
    return {**ids, "pixel_values": randn(BATCH, 1, tiles, vision.num_channels, side, side),
            "aspect_ratio_ids": torch.ones(BATCH, 1, dtype=torch.long),
            "aspect_ratio_mask": valid, "cross_attention_mask": cross}


def _idefics(model: Any, config: Any) -> dict:
    """IdeficsProcessor's one image per sample (B, 1, C, H, W) and its text: <s>, the image
    between <fake_token_around_image>s (the two added tokens, after the vocabulary), the
    prompt; the image attention mask (B, tokens, 1) is 1 from the image token on."""
    import torch

    fake, image = config.vocab_size, config.vocab_size + 1
    text = _text(config)["input_ids"]
    lead = torch.tensor([[config.bos_token_id, fake, image, fake]] * BATCH)
    ids = torch.cat([lead, text], dim=1)
    seen = (ids == image).long().cumsum(dim=1)
    side = config.vision_config.image_size
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids),
            "pixel_values": randn(BATCH, 1, 3, side, side),
            "image_attention_mask": seen[..., None]}


def _inkling(model: Any, config: Any) -> dict:
    """InklingProcessor's image and audio per sample: a patch_size-square image cut into its
    patches (one row, and the always-added padded column: 2), each repeated over 2 frames,
    (patches, 2, P, P, C); 8 frames of dMel bin ids (16 bins) per mel channel; in the text
    an image token per patch and an audio token per frame, each run after its bos token."""
    import torch

    side, frames = config.vision_config.patch_size, 8
    gen = torch.Generator().manual_seed(1234)
    audio = torch.randint(0, 16, (BATCH, frames, config.audio_config.n_mel_bins), generator=gen)
    lead = ([config.image_bos_token_id] + [config.image_token_id] * 2
            + [config.audio_bos_token_id] + [config.audio_token_id] * frames)
    ids = torch.cat([torch.tensor([lead] * BATCH), _text(config)["input_ids"]], dim=1)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids),
            "pixel_values": randn(BATCH * 2, 2, side, side, 3), "audio_input_ids": audio,
            "audio_input_ids_mask": torch.ones(BATCH, frames, dtype=torch.long)}


def _instructblip(model: Any, config: Any) -> dict:
    """InstructBlipProcessor's image, its Q-Former instruction ids and the text led by
    num_query_tokens image tokens."""
    import torch

    return {**_blip_2(model, config), "qformer_input_ids": _text(config)["input_ids"],
            "qformer_attention_mask": torch.ones(BATCH, SEQ, dtype=torch.long)}


def _instructblipvideo(model: Any, config: Any) -> dict:
    """InstructBlipVideoProcessor's 4 frames (B, 4, C, H, W), the Q-Former instruction ids
    and the text led by num_query_tokens x 4 video tokens."""
    import torch

    side = config.vision_config.image_size
    return {"pixel_values": randn(BATCH, 4, 3, side, side),
            **_queried(config, config.video_token_index, 4 * config.num_query_tokens),
            "qformer_input_ids": _text(config)["input_ids"],
            "qformer_attention_mask": torch.ones(BATCH, SEQ, dtype=torch.long)}


def _kosmos_2(model: Any, config: Any) -> dict:
    """Kosmos2Processor's image and text: <s> <image>, latent_query_num image tokens (the
    ids after <unk>, 4 on), </image> (the tokenizer's added tokens: the tiny vocabulary's
    last two), the prompt; the image position mask marks the image tokens."""
    import torch

    queries = config.latent_query_num
    text = token_ids(special_ids(config.to_dict()) | {126, 127}, 126)
    lead = [config.text_config.bos_token_id, 126, *range(4, 4 + queries), 127]
    ids = torch.cat([torch.tensor([lead] * BATCH), text], dim=1)
    mask = torch.zeros_like(ids)
    mask[:, 2:2 + queries] = 1
    side = config.vision_config.image_size
    return {"pixel_values": randn(BATCH, 3, side, side), "input_ids": ids,
            "attention_mask": torch.ones_like(ids), "image_embeds_position_mask": mask}


def _lxmert(model: Any, config: Any) -> dict:
    """What LXMERT's Faster R-CNN feeds it beside the text: per region (SEQ of them) its pooled
    ROI feature (post-ReLU, non-negative) and its box normalised by the image size."""
    import torch

    return {**_text(config), "visual_feats": randn(BATCH, SEQ, config.visual_feat_dim).abs(),
            "visual_pos": layout_boxes().float() / 1000,
            "visual_attention_mask": torch.ones(BATCH, SEQ, dtype=torch.long)}


def _muse_glimmer_assistant(model: Any, config: Any) -> dict:
    """What the DFlash drafter gets from its target model: the embeddings of one block of
    tokens to denoise (B, block_size, width), and the target's hidden states at its
    target_layer_ids for the SEQ accepted tokens, concatenated (B, SEQ, width x layers)."""
    width = config.hidden_size
    return {"noise_embeds": randn(BATCH, config.block_size, width),
            "context_hidden_states": randn(BATCH, SEQ, width * len(config.target_layer_ids))}


def _udop(model: Any, config: Any) -> dict:
    """UdopProcessor's document image, its OCR words' ids and their boxes (0..1000)."""
    side = config.image_size
    return {**_text(config), "bbox": layout_boxes(), "pixel_values": randn(BATCH, 3, side, side)}


_BLIP_WHY = ("the image token is unset in the default, and the text holds one per Q-Former "
             "query (num_query_tokens), not one per vision feature")

_TILES_AND_VIDEO_WHY = ("images come as any-resolution tiles with their sizes (the default "
                        "pinpoints do not tile the tiny image) beside the video's frames")
_GEMMA4 = Recipe(
    "the default config has no vision or audio tower (a checkpoint's has both); each is the "
    "tiny tower its own family is measured with",
    config={"vision_config": {"model_type": "gemma4_vision", "hidden_size": WIDTH,
                              "intermediate_size": FFN, "num_hidden_layers": LAYERS,
                              "num_attention_heads": HEADS, "num_key_value_heads": HEADS,
                              "head_dim": HEAD_DIM},
            "audio_config": {"model_type": "gemma4_audio", "hidden_size": WIDTH,
                             "num_hidden_layers": LAYERS, "num_attention_heads": HEADS}},
    inputs=_gemma4)

RECIPES: dict[str, Recipe] = {
    "blip-2": Recipe(_BLIP_WHY, config={"image_token_index": _QUERY_TOKEN}, inputs=_blip_2),
    "blip_2_qformer": Recipe("the Q-Former's inputs are Blip2Model's queries and image states, "
                             "which no config field sizes", inputs=_blip_2_qformer),
    "chameleon": Recipe(
        "the tokenizer's vocabulary map (image token, VQ code tokens) is unset in the default; "
        "the VQ codebook must fit the tiny vocabulary", inputs=_chameleon,
        config={"vocabulary_map": _chameleon_vocabulary(_CHAMELEON_CODES),
                "vq_config": {"num_embeddings": _CHAMELEON_CODES, "resolution": 64,
                              "base_channels": 32, "latent_channels": 64}}),
    "deepseek_ocr2": Recipe(
        "the MLP kind per layer is unset in the default (DeepSeek-OCR-2's first layer dense, "
        "the rest experts); SAM's last channels must be the encoder's width; its learned "
        "queries fit 768 or 1024 px views only",
        config={"text_config": {"mlp_layer_types": ["dense", "sparse"]},
                "vision_config": {"sam_config": {"downsample_channels": [64, 64]}}},
        inputs=_deepseek_ocr2),
    "emu3": Recipe(
        "the tokenizer's vocabulary map (image, row-end and VQ code tokens) is unset in the "
        "default; the VQ codebook must fit the tiny vocabulary, and the VQ attention's width "
        "is its last level's (base_channels x 4)", inputs=_emu3,
        config={"vocabulary_map": _emu3_vocabulary(64),
                "vq_config": {"codebook_size": 64, "base_channels": 32, "hidden_size": 128}}),
    "ernie4_5_vl_moe": Recipe(
        "the code's rotary sections (22, 22, 20 of a 128 head) pair height with width, so "
        "their first two must be equal; the default config names none",
        config={"text_config": {"rope_parameters": {"mrope_section": [3, 3, 2]}}}),
    "evolla": Recipe("the protein comes as a second token sequence (SaProt's), an input no "
                     "generic name covers", inputs=_evolla),
    "glm5_next": Recipe(
        "a video's frames are image tokens inside the video's start and end tokens (the "
        "config's video token id is unused), which no config field says",
        inputs=_video_frames_as_image_tokens),
    "molmo2": Recipe(
        "the image comes as crops of patches with the indices of the patches each token "
        "pools (a processor's plan), the default vision tower is 25 layers wide of a feature "
        "layer list naming layers 24 and 18 and 729 positions, and the adapter projects to "
        "the default text width; the forward refuses images and video together (a video "
        "runs the same crops path, frames stacked as rows)",
        config={"vision_config": {"image_size": [56, 56], "num_position_embeddings": 16},
                "adapter_config": {"vision_feature_layer": [-1, -2], "text_hidden_size": 64}},
        inputs=_molmo2),
    "inkling2_loop": Recipe(
        "the projector's widths are no width the shrinker knows (the image is its tower's "
        "recipe's)",
        config={"vision_config": {"projection_hidden_dim": WIDTH, "text_hidden_size": WIDTH}}),
    "gemma4": _GEMMA4,
    "embedding_gemma2": _GEMMA4,  # the same towers (its sub-configs are Gemma-4's)
    "aria": Recipe(
        "its projector maps an image's patch count to a query count for 490 and 980 px "
        "images only (1225, 4900 patches); the tiny image's 2 x 2 patches get 4 queries",
        config={"projector_patch_to_query_dict": {4: 4}}),
    "vipllava": Recipe(
        "the projector reads five tower layers (-2, -5, -8, -11, 6), past the tiny tower's "
        "depth; the five are kept, within it",
        config={"vision_feature_layers": [-1, -2, -3, 0, 1]}),
    "fuyu": Recipe("the image comes as flattened patches, (B, patches, C x P x P), which a "
                   "linear layer embeds", inputs=_fuyu),
    "granite_docling": Recipe(
        "its pixel_attention_mask marks real tiles, (B, tiles), where the Idefics family's "
        "marks pixels", inputs=_granite_docling),
    "layoutlmv3": Recipe(
        "the box embeddings (4 coordinates and 2 sizes) must add up to the width, and the "
        "image patches' positions are sized by input_size, not image_size",
        config={"coordinate_size": 10, "shape_size": 12, "input_size": IMAGE}),
    "mllama": Recipe(
        "the image reaches the text by cross-attention layers the default config places "
        "past the tiny depth (3, 8, ...), as do the tower's intermediate and global layers; "
        "its tiles, aspect-ratio ids and cross-attention mask are a processor's plan",
        config={"vision_config": {"image_size": 56, "num_global_layers": 1,
                                  "intermediate_layers_indices": [0, 1],
                                  "vision_output_dim": 3 * WIDTH},
                "text_config": {"cross_attention_layers": [1]}},
        inputs=_mllama),
    "unlimited_ocr": Recipe(
        "SAM's last neck channels must be the CLIP encoder's width (they are its patch "
        "embeddings), and its global-attention layers lie past the tiny tower (2, 5, ...)",
        config={"vision_config": {"sam_config": {"downsample_channels": [64, 64],
                                                 "global_attn_indexes": [1]}}}),
    "granite4_vision": Recipe(
        "the Q-Former downsampling rate and the deepstack layer map are unset in the default; "
        "the pinpoints must tile the tiny image (values of the family's tests)",
        config={"downsample_rate": "1/2", "deepstack_layer_map": [[1, 0]],
                "image_grid_pinpoints": [[64, 64]]}, inputs=_granite4_vision),
    "idefics": Recipe(
        "images come per sample (B, images, C, H, W) with an image attention mask per token; "
        "the processor's two image tokens are added past the vocabulary (additional_vocab_size "
        "2, as the checkpoints have)", config={"additional_vocab_size": 2}, inputs=_idefics),
    "inkling_mm_model": Recipe(
        "images come as square patches with frames, (patches, T, P, P, C), and audio as dMel "
        "bin ids per mel channel, layouts no generic input has", inputs=_inkling),
    "deepseek_vl_hybrid": Recipe(
        "each image comes twice, at the low-resolution tower's size and at the SAM tower's "
        "(high_res_pixel_values), an input no generic name covers; the SAM tower's global "
        "attention layers (2, 5, 8, 11 by default) must lie within the tiny one's layers",
        config={"high_res_vision_config": {"global_attn_indexes": [1]}},
        inputs=_two_resolutions),
    "llava_next": Recipe(
        "images come as the base view and any-resolution tiles (B, tiles, C, H, W) with their "
        "sizes; the default pinpoints (336 to 1008 px) do not tile the tiny image",
        config={"image_grid_pinpoints": [[IMAGE, IMAGE]]}, inputs=_any_resolution),
    "llava_next_video": Recipe(_TILES_AND_VIDEO_WHY, config={"image_grid_pinpoints": [
        [IMAGE, IMAGE]]}, inputs=_tiles_and_video),
    "llava_onevision": Recipe(_TILES_AND_VIDEO_WHY, config={"image_grid_pinpoints": [
        [IMAGE, IMAGE]]}, inputs=_tiles_and_video),
    "instructblip": Recipe(_BLIP_WHY, config={"image_token_index": _QUERY_TOKEN},
                           inputs=_instructblip),
    "instructblipvideo": Recipe(
        "the video token is unset in the default; the processor sends 4 frames and the text "
        "holds num_query_tokens per frame (8 queries: 4 x 32 would pass the tiny 128 positions)",
        config={"video_token_index": _QUERY_TOKEN, "num_query_tokens": 8},
        inputs=_instructblipvideo),
    "kimi_k25": Recipe(
        "its DeepSeek-V3 text config stores the head sizes its own config derives (head_dim "
        "is the rotary part, qk_head_dim nope + rotary), which a sub-config dict does not "
        "re-derive once shrunk", config={"text_config": {"head_dim": 8, "qk_head_dim": 16}}),
    "kosmos-2": Recipe(
        "the image's place in the text is given by image_embeds_position_mask, a processor "
        "output no generic input names", inputs=_kosmos_2),
    "lxmert": Recipe("the image comes as detector regions (features and boxes), inputs no "
                     "generic name covers", inputs=_lxmert),
    "muse_glimmer_assistant": Recipe(
        "a speculative drafter: it takes its target model's hidden states beside the noised "
        "block, an input no generic name covers", inputs=_muse_glimmer_assistant),
    "qwen2_5_omni_thinker": Recipe(
        "the rotary index reads the vision start token, which the thinker's config class "
        "does not declare (a checkpoint's config sets it: 151652, its end 151653)",
        config={"vision_start_token_id": 121, "vision_end_token_id": 120}),
    "qwen3_omni_moe_thinker": Recipe(
        "the rotary index reads the vision start token, which the thinker's config class "
        "does not declare (a checkpoint's config sets it: 151652, its end 151653)",
        config={"vision_start_token_id": 122, "vision_end_token_id": 121}),
    "udop": Recipe("the image and the word boxes go together (each word takes its image "
                   "patch); the generic builder tries them apart", inputs=_udop),
}
