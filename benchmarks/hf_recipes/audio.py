"""Recipes of the audio families (see hf_recipes): what their config does not say."""

from __future__ import annotations

import math
from typing import Any

from hf_configs import WIDTH
from hf_inputs import (
    audio_candidates,
    field,
    placeholder_rows,
    randn,
    special_ids,
    token_ids,
    with_placeholders,
)
from hf_models import BATCH, SEQ

from hf_recipes import Recipe


def _text(config: Any) -> dict:
    """Token ids avoiding the config's special ids, with their mask."""
    import torch

    return {"input_ids": token_ids(special_ids(config.to_dict())),
            "attention_mask": torch.ones(BATCH, SEQ, dtype=torch.long)}


def _ast(model: Any, config: Any) -> dict:
    """ASTFeatureExtractor's fbank: (B, max_length frames, mel bins)."""
    return {"input_values": randn(BATCH, config.max_length, config.num_mel_bins)}


def _clap(model: Any, config: Any) -> dict:
    """ClapProcessor's text ids and log-mels: (B, 1, 10 s at 48 kHz / hop 480 + 1, 64 mels)."""
    import torch

    return {**_text(config),
            "input_features": randn(BATCH, 1, 1001, config.audio_config.num_mel_bins),
            "is_longer": torch.zeros(BATCH, 1, dtype=torch.bool)}


def _clvp(model: Any, config: Any) -> dict:
    """ClvpProcessor's text ids and log-mels: (B, 80 mels, 6 s at 22.05 kHz / hop 256 + 1)."""
    return {**_text(config),
            "input_features": randn(BATCH, config.decoder_config.feature_size, 517)}


def _codec_latents(model: Any, config: Any) -> dict:
    """The continuous latents the codec's decode() feeds its decoder: (B, hidden_size, frames)."""
    return {"latents": randn(BATCH, config.hidden_size, SEQ)}


def _dia(model: Any, config: Any) -> dict:
    """DiaProcessor's inputs with an audio prompt: byte ids, and a bos frame then SEQ frames of
    codes, (B, T, channels), each channel delayed by its delay_pattern entry (bos before, pad
    after)."""
    import torch

    decoder = config.decoder_config
    codes = token_ids(special_ids(config.to_dict()), decoder.vocab_size,
                      SEQ * decoder.num_channels).view(BATCH, SEQ, -1)
    bos = torch.full((BATCH, 1, decoder.num_channels), decoder.bos_token_id)
    audio = torch.cat([bos, codes], dim=1)
    delays = torch.tensor(config.delay_pattern)
    source = torch.arange(audio.shape[1] + max(config.delay_pattern))[:, None] - delays
    delayed = audio.gather(1, source.clamp(0, audio.shape[1] - 1).expand(BATCH, -1, -1))
    ids = torch.where(source < 0, decoder.bos_token_id,
                      torch.where(source >= audio.shape[1], decoder.pad_token_id, delayed))
    return {**_text(config), "decoder_input_ids": ids,
            "decoder_attention_mask": torch.ones(BATCH, ids.shape[1], dtype=torch.long)}


def _fastspeech2_hifigan(model: Any, config: Any) -> dict:
    """Phoneme ids within the acoustic model's vocabulary (78 phonemes), with their mask."""
    import torch

    ids = token_ids(special_ids(config.to_dict()), config.model_config.vocab_size)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def _fun_asr_nano(model: Any, config: Any) -> dict:
    """FunAsrNanoFeatureExtractor's low-frame-rate fbank: 7 stacked 80-mel frames per step,
    (B, frames, 560), with its frame mask."""
    import torch

    width = config.num_mel_bins * config.num_stacked_frames
    return {"input_features": randn(BATCH, 4 * SEQ, width),
            "input_features_mask": torch.ones(BATCH, 4 * SEQ, dtype=torch.long)}


def _gemma3n_audio(model: Any, config: Any) -> dict:
    """Gemma3nAudioFeatureExtractor's log-mels (B, frames padded to 128, mels) and the
    encoder's mask, True at padding (the model inverts the extractor's)."""
    import torch

    return {"audio_mel": randn(BATCH, 128, config.input_feat_size),
            "audio_mel_mask": torch.zeros(BATCH, 128, dtype=torch.bool)}


def gemma4_audio(model: Any, config: Any) -> dict:
    """Gemma4AudioFeatureExtractor's 128-bin log-mels (B, frames, 128), mask True where valid."""
    import torch

    return {"input_features": randn(BATCH, 4 * SEQ, 128),
            "attention_mask": torch.ones(BATCH, 4 * SEQ, dtype=torch.bool)}


def _musicflamingo(model: Any, config: Any) -> dict:
    """MusicFlamingoProcessor's log-mels with their frame mask, and in the text one audio
    token per encoder output row the mask leaves (its get_audio_features reads the text's
    placeholder runs for their timestamps, so they cannot be counted through it)."""
    import torch

    audio = audio_candidates(config, ("input_features", "input_features_mask"),
                             "input_features")[0]
    tower = getattr(model, "audio_tower", None) or model.model.audio_tower
    _, rows = tower._get_feat_extract_output_lengths(audio["input_features_mask"].sum(-1))
    ids = torch.tensor(placeholder_rows(_text(config)["input_ids"].tolist(), int(rows.sum()),
                                        config.audio_token_id, None, None))
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), **audio}


def _granite_speech(model: Any, config: Any) -> dict:
    """GraniteSpeechFeatureExtractor's stacked log-mels (B, frames, input_dim), the text with
    an audio token per projected feature, and the mask over those features (True: valid;
    the projector's outputs, not the frames)."""
    import torch

    audio = {"input_features": randn(BATCH, 4 * SEQ, config.encoder_config.input_dim)}
    ids = with_placeholders(model, config, "audio", audio, _text(config))
    per_sample = int((ids["input_ids"] == config.audio_token_id).sum()) // BATCH
    return {**ids, **audio,
            "input_features_mask": torch.ones(BATCH, per_sample, dtype=torch.bool)}


def _granite_speech5(model: Any, config: Any) -> dict:
    """GraniteSpeech5FeatureExtractor's features: each mel frame with its delta, pairs of frames
    stacked, (B, frames, mels x 4), with the frame mask (bool)."""
    import torch

    return {"input_features": randn(BATCH, 4 * SEQ, 4 * field(config, "num_mel_bins", 80)),
            "attention_mask": torch.ones(BATCH, 4 * SEQ, dtype=torch.bool)}


def _kyutai_stt(model: Any, config: Any) -> dict:
    """Per frame a text token and the codec's num_codebooks audio codes, (B, T, 1 + codebooks),
    as generate() assembles them from Mimi's codes."""
    import torch

    avoid = special_ids(config.to_dict())
    codes = token_ids(avoid, config.codebook_vocab_size - 1, SEQ * config.num_codebooks)
    ids = torch.cat([token_ids(avoid)[..., None], codes.view(BATCH, SEQ, -1)], dim=-1)
    return {"input_ids": ids, "attention_mask": torch.ones(BATCH, SEQ, dtype=torch.long)}


def _musicgen(model: Any, config: Any) -> dict:
    """The decoder's audio codes, one row per sample and codebook, (B x codebooks, T), with
    the samples' mask (the model is built from the decoder config)."""
    import torch

    codes = token_ids(special_ids(config.to_dict()), config.vocab_size,
                      config.num_codebooks * SEQ).view(-1, SEQ)
    return {"input_ids": codes, "attention_mask": torch.ones(BATCH, SEQ, dtype=torch.long)}


def _muse_spark_audio(model: Any, config: Any) -> dict:
    """MuseSparkFeatureExtractor's raw audio, padded to whole tokens: SEQ x samples_per_token."""
    return {"input_values": randn(BATCH, SEQ * config.samples_per_token)}


def _nemotron_transcribe_audio(model: Any, config: Any) -> dict:
    """The processor's log-mels (B, frames, mels), frames padded to whole subsampled frames,
    with their frame mask."""
    import torch

    frames = SEQ * config.subsampling_factor
    return {"input_features": randn(BATCH, frames, config.asr_config.num_mel_bins),
            "input_features_mask": torch.ones(BATCH, frames, dtype=torch.long)}


def _semantic_codec(config: Any, edge: int) -> dict:
    """The codec extractor's outputs for SEQ codes of audio: the waveform (B, 1, samples, a
    whole number of hops) with its mask, and Kaldi fbank frames (400-sample window, 160 hop,
    after ``edge`` samples of padding) in stacked pairs, (B, frames / 2, 2 x 80), with theirs."""
    import torch

    samples = SEQ * math.prod(config.downsampling_ratios)  # the encoder's hop, at 16 kHz
    frames = (1 + (samples + edge - 400) // 160) // 2
    return {"input_values": randn(BATCH, 1, samples),
            "padding_mask": torch.ones(BATCH, samples, dtype=torch.long),
            "input_features": randn(BATCH, frames,
                                    config.semantic_model_config.feature_projection_input_dim),
            "input_features_mask": torch.ones(BATCH, frames, dtype=torch.long)}


def _neucodec(model: Any, config: Any) -> dict:
    """NeuCodecFeatureExtractor's outputs: the fbank of the hop-padded waveform as it is."""
    return _semantic_codec(config, 0)


def _xcodec2(model: Any, config: Any) -> dict:
    """Xcodec2FeatureExtractor's outputs: the fbank of the waveform padded by a hop in all."""
    return _semantic_codec(config, math.prod(config.downsampling_ratios))


def _qwen3_asr_encoder(model: Any, config: Any) -> dict:
    """Qwen3ASRFeatureExtractor's log-mels (B, mels, frames) padded to whole 2 x n_window
    chunks (two here), with their frame mask."""
    import torch

    frames = 2 * 2 * config.n_window
    return {"input_features": randn(BATCH, config.num_mel_bins, frames),
            "input_features_mask": torch.ones(BATCH, frames, dtype=torch.long)}


def _speecht5(model: Any, config: Any) -> dict:
    """The bare model has no pre-nets (a task head adds them): the encoder and decoder take
    hidden states (B, T, hidden_size), as its tests feed them."""
    import torch

    return {"input_values": randn(BATCH, 4 * SEQ, config.hidden_size),
            "attention_mask": torch.ones(BATCH, 4 * SEQ, dtype=torch.long),
            "decoder_input_values": randn(BATCH, SEQ, config.hidden_size)}


def _vibevoice_encoder(model: Any, config: Any) -> dict:
    """The feature extractor's waveform (B, channels, samples) padded to whole hops (4 here)."""
    return {"hidden_states": randn(BATCH, config.channels, 4 * config.hop_length)}


def _vibevoice_decoder(model: Any, config: Any) -> dict:
    """The latents decode() hands the decoder, channels first: (B, hidden_size, frames)."""
    return {"hidden_states": randn(BATCH, config.hidden_size, SEQ)}


def _wav2vec2_bert(model: Any, config: Any) -> dict:
    """SeamlessM4TFeatureExtractor's fbank, 80 mels in stacked pairs: (B, frames, 160)."""
    import torch

    return {"input_features": randn(BATCH, 4 * SEQ, config.feature_projection_input_dim),
            "attention_mask": torch.ones(BATCH, 4 * SEQ, dtype=torch.long)}


_CODEC_WHY = ("the forward takes the waveform and the semantic encoder's stacked fbank together, "
              "and the quantizer is as wide as both encoders (64 + 64 when tiny)")
_GRANITE_WHY = "a feature is a mel frame and its delta, two frames stacked: 4 x num_mel_bins wide"
_GRANITE_PROJECTOR_WHY = ("the Q-Former projector reads the speech encoder's states at a width "
                          "(1408) the default states apart from the encoder's own, and the "
                          "feature mask is over the projector's outputs, not the frames")
_GRANITE_PROJECTOR = {"projector_config": {"encoder_hidden_size": WIDTH}}
_SEAMLESS_WHY = ("the forward takes speech or text, not both: the speech path's features are "
                 "stacked mel pairs (feature_projection_input_dim) with a mask over their frames")
_LATENTS_WHY = "a codec decoder's main input, latents (B, hidden_size, frames), has no shape rule"

RECIPES: dict[str, Recipe] = {
    "audio-spectrogram-transformer": Recipe(
        "the fbank is (B, frames, mels), and its frame count is max_length (1024: shrunk to 64)",
        config={"max_length": 64}, inputs=_ast),
    "clap": Recipe("the audio tower takes 4D log-mels (B, 1, frames, mels), and its Swin's last "
                   "stage (patch width x 2 per merge) must equal hidden_size",
                   config={"audio_config": {"patch_embeds_hidden_size": 32}}, inputs=_clap),
    "clvp": Recipe("the mel count is the decoder config's feature_size, a sub-config the generic "
                   "builder does not read; the encoders' rotary part is at least 32 wide, so "
                   "their heads must be too", inputs=_clvp,
                   config={"text_config": {"num_attention_heads": 2},
                           "speech_config": {"num_attention_heads": 2}}),
    "dia": Recipe("the decoder takes delayed audio codes per channel, (B, T, channels), not "
                  "token ids", inputs=_dia),
    "fastspeech2_conformer_with_hifigan": Recipe(
        "the phoneme vocabulary (78, under the tiny 128) is in model_config, a sub-config the "
        "generic builder does not read", inputs=_fastspeech2_hifigan),
    "fun_asr_nano_encoder": Recipe(
        "a step stacks num_stacked_frames mel frames (80 x 7 features), which no field states "
        "whole", inputs=_fun_asr_nano),
    "gemma3n_audio": Recipe("the encoder's main input is audio_mel, (B, frames, mels), with a "
                            "padding mask no generic name covers", inputs=_gemma3n_audio),
    "gemma4_audio": Recipe("the extractor's mel count (128) is in no config field; the "
                           "subsampler's projection assumes it", inputs=gemma4_audio),
    "granite_speech": Recipe(_GRANITE_PROJECTOR_WHY, config=_GRANITE_PROJECTOR,
                             inputs=_granite_speech),
    "granite_speech_plus": Recipe(_GRANITE_PROJECTOR_WHY, config=_GRANITE_PROJECTOR,
                                  inputs=_granite_speech),
    "granite_speech5_ctc": Recipe(_GRANITE_WHY, inputs=_granite_speech5),
    "granite_speech5_encoder": Recipe(_GRANITE_WHY, inputs=_granite_speech5),
    "kyutai_speech_to_text": Recipe("input_ids carry a text token and the audio codes per "
                                    "frame, (B, T, 1 + num_codebooks)", inputs=_kyutai_stt),
    "mimi_decoder": Recipe(_LATENTS_WHY, inputs=_codec_latents),
    "moonshine_streaming": Recipe("the decoder reads num_key_value_heads, which the config "
                                  "does not declare (checkpoints and tests set it)",
                                  config={"num_key_value_heads": 4}),
    "musicgen": Recipe("the decoder's codes are one row per sample and codebook",
                       inputs=_musicgen),
    "musicgen_melody": Recipe("the decoder's codes are one row per sample and codebook",
                              inputs=_musicgen),
    "muse_spark_audio": Recipe("the audio length must be a multiple of samples_per_token (the "
                               "product of the patch sizes), a property no field names",
                               inputs=_muse_spark_audio),
    "musicflamingo": Recipe("its audio features are placed by reading the text's audio "
                            "token runs, so the runs are sized from the mask's encoder rows",
                            inputs=_musicflamingo),
    "nemotron3_5_transcribe_audio": Recipe(
        "the mel count is in asr_config, a sub-config the generic builder does not read, and the "
        "frames must be a multiple of subsampling_factor", inputs=_nemotron_transcribe_audio),
    "neucodec": Recipe(_CODEC_WHY, config={"quantization_dim": 128}, inputs=_neucodec),
    "pocket_tts_audio_tokenizer_decoder": Recipe(_LATENTS_WHY, inputs=_codec_latents),
    "qwen3_asr": Recipe("the projector's output width is the text model's, which the audio "
                        "config states (3584) apart from it",
                        config={"audio_config": {"output_dim": WIDTH}}),
    "qwen3_asr_encoder": Recipe("the frames must be whole chunks of 2 x n_window, which no "
                                "length field states", inputs=_qwen3_asr_encoder),
    "seamless_m4t": Recipe(_SEAMLESS_WHY, inputs=_wav2vec2_bert),
    "seamless_m4t_v2": Recipe(_SEAMLESS_WHY, inputs=_wav2vec2_bert),
    "speecht5": Recipe("the bare model has no speech or text pre-net: its input_values and "
                       "decoder_input_values are hidden states, not audio", inputs=_speecht5),
    "vibevoice_acoustic_tokenizer_decoder": Recipe(
        "the forward names the latents hidden_states, (B, hidden_size, frames), which has no "
        "generic shape", inputs=_vibevoice_decoder),
    "vibevoice_acoustic_tokenizer_encoder": Recipe(
        "the forward names the waveform hidden_states, and it must be whole hops (the product of "
        "the downsampling ratios)", inputs=_vibevoice_encoder),
    "wav2vec2-bert": Recipe("a feature is two stacked 80-mel frames, feature_projection_input_dim "
                            "wide, a name the generic builder does not read",
                            inputs=_wav2vec2_bert),
    "xcodec2": Recipe(_CODEC_WHY, config={"quantization_dim": 128}, inputs=_xcodec2),
}
