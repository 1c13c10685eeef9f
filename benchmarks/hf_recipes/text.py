"""Recipes of the text families (see ``hf_recipes``): what their config does not say."""

from __future__ import annotations

from typing import Any

from hf_inputs import randn, special_ids, token_ids, with_modalities
from hf_models import BATCH, SEQ

from hf_recipes import Recipe

# Qwen4-Exp's indexed attention: its default leaves the indexer unset (a checkpoint sets it);
# one key/value head as the config requires, a budget of two 4-token blocks of the 16 tokens,
# the attention heads as small as the index head (their rotary part must fit in it).
_QSA = {"head_dim": 16, "indexer_n_heads": 4, "indexer_kv_heads": 1, "indexer_head_dim": 16,
        "indexer_budget": 8, "indexer_compress_ratio": 4}

# Cohere-Compass names its rotary parameters per layer type; the default names none.
_COMPASS_ROPE = {"rope_parameters": {"full_attention": {"rope_type": "default",
                                                       "rope_theta": 10000.0}}}
# Mixture-of-experts sizes a default leaves unset (a checkpoint sets them).
_EXPERTS = {"num_experts": 4, "top_k_experts": 2, "moe_intermediate_size": 64}

# Apertus 1.5 reads images and audio as codes of its vocabulary: 32 visual codes from 64, 32
# audio codes from 96 (a range each, as its config requires), text and placeholders below them;
# a small vision tokenizer (its 16-fold downsampling kept: the processor's spatial factor).
_APERTUS = {"image_token_offset": 64,
            "audio_token_offset": 96, "image_token_id": 60, "audio_token_id": 61,
            "vision_config": {"codebook_size": 32, "base_channels": 32, "num_res_blocks": 1},
            "audio_config": {"codebook_size": 32}}


def _apertus1p5(model: Any, config: Any) -> dict:
    """Apertus1p5Processor's text, one 128 px image (its minimum: 8 x 8 codes) and 0.25 s of
    24 kHz audio (10 codes of 600 samples) per sample, a placeholder token per code."""
    import torch

    avoid = special_ids(config.to_dict())
    ids = {"input_ids": token_ids(avoid, config.image_token_offset),
           "attention_mask": torch.ones(BATCH, SEQ, dtype=torch.long)}
    image = {"pixel_values": randn(BATCH, 3, 128, 128),
             "image_sizes": torch.tensor([[128, 128]] * BATCH)}
    audio = {"input_values": randn(BATCH, 1, 6000),
             "padding_mask": torch.ones(BATCH, 6000, dtype=torch.long)}
    return with_modalities(model, config, [("image", image), ("audio", audio)], ids)


# A forecaster's horizon and context (a dataset's; the default leaves them unset), with the
# covariates of a typical series: two time features (month, age) and one categorical id.
_FORECAST = {"prediction_length": 8, "context_length": SEQ, "num_time_features": 2,
             "num_static_categorical_features": 1, "cardinality": [4],
             "embedding_dimension": [2]}


def _forecast(model: Any, config: Any) -> dict:
    """A training batch of the forecasters' data loader: the past (context and the largest
    lag) and future values, their time features, observed mask, and a series id."""
    import torch

    past = config.context_length + max(config.lags_sequence)
    future, features = config.prediction_length, config.num_time_features
    return {"past_values": randn(BATCH, past),
            "past_time_features": randn(BATCH, past, features),
            "past_observed_mask": torch.ones(BATCH, past),
            "static_categorical_features": torch.arange(BATCH)[:, None] % config.cardinality[0],
            "future_values": randn(BATCH, future),
            "future_time_features": randn(BATCH, future, features)}


def _timesfm(model: Any, config: Any) -> dict:
    """What TimesFmModelForPrediction feeds its decoder: a full context of values, none of
    them padding, and a frequency index per series (B, 1)."""
    import torch

    return {"past_values": randn(BATCH, config.context_length),
            "past_values_padding": torch.zeros(BATCH, config.context_length),
            "freq": (torch.arange(BATCH, dtype=torch.int32) % config.freq_size)[:, None]}


def _perceiver(model: Any, config: Any) -> dict:
    """The embedded inputs a bare PerceiverModel (no preprocessor) takes, (B, SEQ, d_model),
    with their mask."""
    import torch

    return {"inputs": randn(BATCH, SEQ, config.d_model),
            "attention_mask": torch.ones(BATCH, SEQ, dtype=torch.long)}


def _decision_transformer(model: Any, config: Any) -> dict:
    """A trajectory of SEQ steps, as its offline-RL loader batches them: states, actions in
    [-1, 1], rewards, returns to go, episode timesteps and their mask."""
    import torch

    return {"states": randn(BATCH, SEQ, config.state_dim),
            "actions": randn(BATCH, SEQ, config.act_dim).tanh(),
            "rewards": randn(BATCH, SEQ, 1), "returns_to_go": randn(BATCH, SEQ, 1).abs(),
            "timesteps": torch.arange(SEQ).expand(BATCH, SEQ),
            "attention_mask": torch.ones(BATCH, SEQ, dtype=torch.long)}


# Dots 3 Note's text layers: indexed attention (the indexer's heads, a top-8 of the 16 tokens)
# and sliding attention (layer 2 of the 3 kept, its own heads and latent rank per
# ``per_layer_config``, its head of nope + rope as the config requires), sizes the shrinker
# leaves at their defaults.
_DOTS3_TEXT = {"head_dim": 16, "index_head_dim": 16, "index_n_heads": 4, "index_topk": 8,
               "shared_experts_intermediate_size": 64,
               "per_layer_config": {"02": {"num_attention_heads": 4, "num_key_value_heads": 4,
                                           "kv_lora_rank": 32, "qk_nope_head_dim": 8}}}


RECIPES: dict[str, Recipe] = {
    "qwen4_exp_text": Recipe("the indexed attention's sizes are unset in the default config",
                             config=_QSA),
    "qwen4_exp": Recipe("the indexed attention's sizes are unset in the default config",
                        config={"text_config": _QSA}),
    "cohere_compass_text": Recipe("rotary parameters per layer type, none in the default",
                                  config=_COMPASS_ROPE),
    "cohere_compass": Recipe("rotary parameters per layer type, none in the default",
                             config={"text_config": _COMPASS_ROPE}),
    "dbrx": Recipe("the attention reads a rotary base its attention config no longer has, "
                   "and clamps to a bound the default leaves unset (DBRX's is 8)",
                   config={"attn_config": {"rope_theta": 10000.0, "clip_qkv": 8.0}}),
    "lfm2_moe": Recipe("its layer types are unset in the default (a convolution, then attention)",
                       config={"layer_types": ["conv", "full_attention"]}),
    "diffusion_gemma": Recipe("its experts are unset in the default config",
                              config={"text_config": _EXPERTS}),
    "dots1": Recipe("its experts are unset in the default config",
                    config={"n_routed_experts": 4, "num_experts_per_tok": 2,
                            "n_shared_experts": 1}),
    "esm": Recipe("no vocabulary in the default config (ESM-2's 33 tokens)",
                  config={"vocab_size": 33, "pad_token_id": 1, "mask_token_id": 32}),
    "apertus1p5": Recipe("its code ranges must fit the vocabulary, which the shrunk one does not; "
                         "audio takes a padding mask", config=_APERTUS, inputs=_apertus1p5),
    **dict.fromkeys(("time_series_transformer", "informer", "autoformer"), Recipe(
        "the forecast horizon is unset in the default config, and the forward takes a series "
        "with its time features, which no parameter name sizes", config=_FORECAST,
        inputs=_forecast)),
    "timesfm": Recipe("the forward takes a padding indicator and frequencies, which no generic "
                      "input names", inputs=_timesfm),
    "perceiver": Recipe("without a preprocessor its inputs are d_model wide, a width no generic "
                        "input reads; its latents have sizes the shrinker does not know",
                        config={"num_latents": 32, "d_latents": 64, "num_self_attention_heads": 4,
                                "num_cross_attention_heads": 4,
                                "num_self_attends_per_block": 2},
                        inputs=_perceiver),
    "step3p7": Recipe("its text model masks a sliding window the default leaves unset, and no "
                      "layer slides (a checkpoint mixes sliding and full layers)",
                      config={"text_config": {"sliding_window": 8, "num_sliding_attention_heads": 4,
                                              "layer_types": ["full_attention"]
                                              + ["sliding_attention"] * 3}}),
    "t5gemma2_encoder": Recipe("its text layers read a dropout rate only the encoder-decoder "
                               "config sets on them (T5Gemma2Config's default, 0)",
                               config={"text_config": {"dropout_rate": 0.0}}),
    "funnel": Recipe("AutoModel maps it to two classes and picks by the architectures, which "
                     "the default leaves unset (None, which it cannot iterate)",
                     config={"architectures": ["FunnelModel"]}),
    "decision_transformer": Recipe("the forward takes a trajectory (states, actions, rewards, "
                                   "returns, timesteps), which no generic input builds",
                                   inputs=_decision_transformer),
    "xmod": Recipe("its language adapters need the input's language, which the default leaves "
                   "unset (set_default_language's field)", config={"default_language": "en_XX"}),
    "reformer": Recipe("its axial position sizes must sum to the width and multiply to the "
                       "positions, which the shrinker does not know; a checkpoint is a decoder "
                       "(its causal LM requires it)",
                       config={"is_decoder": True, "axial_pos_shape": [8, 16],
                               "axial_pos_embds_dim": [16, 48], "attention_head_size": 16,
                               "feed_forward_size": 64, "local_attn_chunk_length": 4,
                               "lsh_attn_chunk_length": 4}),
    "longcat_flash": Recipe("its rotary head size (head_dim) and query/key head size (nope + rope) "
                            "are stored derived, and stay at their default sizes when the parts "
                            "shrink; its zero experts (half the routed ones) and expert width too",
                            config={"head_dim": 8, "qk_head_dim": 16, "zero_expert_num": 2,
                                    "expert_ffn_hidden_size": 64}),
    "blt": Recipe("its local models' global width (hidden_size_global) must be the global "
                  "model's, which the shrinker does not tie; a small byte-group hash table",
                  config={"encoder_hash_byte_group_vocab": 512,
                          "encoder_config": {"hidden_size_global": 64},
                          "decoder_config": {"hidden_size_global": 64}}),
    "bamba": Recipe("its attention layers are unset in the default (all Mamba); a checkpoint "
                    "interleaves some, and a decode step's cache needs one",
                    config={"attn_layer_indices": [1]}),
    "granitemoehybrid": Recipe("its layer types are all Mamba in the default; a checkpoint "
                               "interleaves attention, and a decode step's cache needs one",
                               config={"layer_types": ["linear_attention", "full_attention"]}),
    "xlstm": Recipe("its cache rounds the query/key width (half the width) up to a multiple "
                    "of 64 and its layers do not: a width of 128 keeps them equal, as the "
                    "checkpoints' widths do",
                    config={"hidden_size": 128, "embedding_dim": 128, "num_blocks": 2}),
    "dots3_note": Recipe("its sliding layers' head size must be their nope + rope parts, and its "
                         "indexer, shared experts and audio adapter have sizes the shrinker "
                         "does not know (the adapter's input is the audio width)",
                         config={"text_config": _DOTS3_TEXT,
                                 "audio_config": {"adapter_input_size": 64,
                                                  "downsample_hidden_size": 32}}),
}
