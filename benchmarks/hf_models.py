"""The hand-written tiny transformers models of ``hf_graph_breaks.py`` and their variants.

Each model family has a tiny config (random weights, no download) and the classes it is
measured through (``MODELS``); each case is one of its variants (``VARIANTS``): ``forward``,
the head with ``labels``, ``attn`` / ``attn_eager`` (``output_attentions=True`` with the
default sdpa and with eager attention), Longformer's ``global`` attention, and ``decode`` /
``decode_legacy``: one cached decoding step after an eager prefill (``_decode_step``, which
``hf_generality.py`` uses for any causal LM too). ``CASES`` maps "model:variant" to a
builder; everything runs inside a worker process (transformers is imported lazily, from
whichever tree the worker put first).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

BATCH, SEQ = 2, 16


def _ids(vocab: int, low: int = 2) -> Any:
    """Seeded token ids of shape (BATCH, SEQ) in [low, vocab)."""
    import torch

    gen = torch.Generator().manual_seed(1234)
    return torch.randint(low, vocab, (BATCH, SEQ), generator=gen)


def _ones() -> Any:
    """An all-ones attention mask of shape (BATCH, SEQ)."""
    import torch

    return torch.ones(BATCH, SEQ, dtype=torch.long)


def _t5_config(attention: str | None) -> Any:
    """A tiny T5Config."""
    import transformers as tf

    return tf.T5Config(vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                       num_decoder_layers=2, num_heads=4, relative_attention_num_buckets=8,
                       relative_attention_max_distance=16, dropout_rate=0.0, pad_token_id=0,
                       eos_token_id=1, decoder_start_token_id=0,
                       **_attention(attention))


def _whisper_config(attention: str | None) -> Any:
    """A tiny WhisperConfig (8 mel bins, 32 frames)."""
    import transformers as tf

    return tf.WhisperConfig(vocab_size=128, num_mel_bins=8, encoder_layers=2, decoder_layers=2,
                            d_model=32, encoder_attention_heads=4, decoder_attention_heads=4,
                            encoder_ffn_dim=64, decoder_ffn_dim=64, max_source_positions=16,
                            max_target_positions=32, pad_token_id=0, bos_token_id=1,
                            eos_token_id=1, decoder_start_token_id=1, suppress_tokens=None,
                            begin_suppress_tokens=None, **_attention(attention))


def _longformer_config(attention: str | None) -> Any:
    """A tiny LongformerConfig (attention window 4)."""
    import transformers as tf

    return tf.LongformerConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2,
                               num_attention_heads=4, intermediate_size=64, attention_window=4,
                               max_position_embeddings=64, pad_token_id=1,
                               hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def _biogpt_config(attention: str | None) -> Any:
    """A tiny BioGptConfig."""
    import transformers as tf

    return tf.BioGptConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2,
                           num_attention_heads=4, intermediate_size=64,
                           max_position_embeddings=64, hidden_dropout_prob=0.0,
                           attention_probs_dropout_prob=0.0, layerdrop=0.0,
                           **_attention(attention))


def _llama_config(attention: str | None) -> Any:
    """A tiny LlamaConfig (grouped-query attention)."""
    import transformers as tf

    return tf.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64,
                          num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                          max_position_embeddings=64, **_attention(attention))


def _mixtral_config(attention: str | None) -> Any:
    """A tiny MixtralConfig: 4 experts, top-2 routing."""
    import transformers as tf

    return tf.MixtralConfig(vocab_size=128, hidden_size=32, intermediate_size=64,
                            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                            num_local_experts=4, num_experts_per_tok=2,
                            max_position_embeddings=64, **_attention(attention))


def _qwen2_moe_config(attention: str | None) -> Any:
    """A tiny Qwen2MoeConfig: 4 experts, top-2 routing, a shared expert."""
    import transformers as tf

    return tf.Qwen2MoeConfig(vocab_size=128, hidden_size=32, intermediate_size=64,
                             moe_intermediate_size=32, shared_expert_intermediate_size=64,
                             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                             num_experts=4, num_experts_per_tok=2, decoder_sparse_step=1,
                             max_position_embeddings=64, **_attention(attention))


def _bert_config(attention: str | None) -> Any:
    """A tiny BertConfig."""
    import transformers as tf

    return tf.BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=4, intermediate_size=64, max_position_embeddings=64,
                         **_attention(attention))


def _gpt2_config(attention: str | None) -> Any:
    """A tiny GPT2Config."""
    import transformers as tf

    return tf.GPT2Config(vocab_size=128, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                         **_attention(attention))


def _phi3_config(attention: str | None, longrope: bool = False) -> Any:
    """A tiny Phi3Config; with ``longrope``, LongRoPE scaling past 32 positions (Phi-3
    128k's rotary embedding, which picks its factors from the positions' maximum)."""
    import transformers as tf

    scaling = ({"rope_scaling": {"type": "longrope", "short_factor": [1.0] * 4,
                                 "long_factor": [2.0] * 4},
                "original_max_position_embeddings": 32} if longrope else {})
    return tf.Phi3Config(vocab_size=128, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=64, pad_token_id=0, bos_token_id=1,
                         eos_token_id=1, **scaling, **_attention(attention))


def _bart_like_config(cls: str, attention: str | None) -> Any:
    """A tiny BART-family config (BART, Blenderbot, Pegasus share its fields)."""
    import transformers as tf

    return getattr(tf, cls)(vocab_size=128, d_model=32, encoder_layers=2, decoder_layers=2,
                            encoder_attention_heads=4, decoder_attention_heads=4,
                            encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
                            pad_token_id=0, bos_token_id=1, eos_token_id=1,
                            decoder_start_token_id=1, forced_eos_token_id=None,
                            **_attention(attention))


AUDIO_TOKEN = 127  # Qwen2-Audio's placeholder token in the tiny vocabulary


def _qwen2_audio_config(attention: str | None) -> Any:
    """A tiny Qwen2AudioConfig: 8 mel bins, 32 frames (8 audio features per clip)."""
    import transformers as tf

    audio = {"num_mel_bins": 8, "encoder_layers": 2, "encoder_attention_heads": 4,
             "encoder_ffn_dim": 64, "d_model": 32, "max_source_positions": 16}
    text = {"model_type": "qwen2", "vocab_size": 128, "hidden_size": 32,
            "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "max_position_embeddings": 128}
    return tf.Qwen2AudioConfig(audio_config=audio, text_config=text,
                               audio_token_index=AUDIO_TOKEN, ignore_index=-100,
                               **_attention(attention))


def _attention(attention: str | None) -> dict:
    """Config keyword choosing the attention implementation (none: the model's default)."""
    return {"attn_implementation": attention} if attention else {}


@dataclass(frozen=True)
class Model:
    """One model family: a tiny config, its classes and the transformers folders it uses."""

    config: Callable[[str | None], Any]
    base: str  # e.g. "LlamaModel"
    head: str  # the class that takes labels, e.g. "LlamaForCausalLM"
    folders: tuple[str, ...]  # under transformers/models/, for --rewrite-scope cases
    inputs: str = "text"  # text | seq2seq | speech | audio_text
    decoder: bool = False  # has a decode step with a key/value cache
    eager_variant: bool = True  # has a separate eager-attention implementation
    control: bool = False  # expected to have no break in its plain forward


MODELS: dict[str, Model] = {
    "t5": Model(_t5_config, "T5Model", "T5ForConditionalGeneration", ("t5",), "seq2seq",
                decoder=True, eager_variant=False),
    "whisper": Model(_whisper_config, "WhisperModel", "WhisperForConditionalGeneration",
                     ("whisper",), "speech", decoder=True),
    "longformer": Model(_longformer_config, "LongformerModel", "LongformerForMaskedLM",
                        ("longformer",), eager_variant=False),
    "biogpt": Model(_biogpt_config, "BioGptModel", "BioGptForCausalLM", ("biogpt",),
                    decoder=True),
    "llama": Model(_llama_config, "LlamaModel", "LlamaForCausalLM", ("llama",), decoder=True),
    "mixtral": Model(_mixtral_config, "MixtralModel", "MixtralForCausalLM", ("mixtral",),
                     decoder=True),
    "qwen2_moe": Model(_qwen2_moe_config, "Qwen2MoeModel", "Qwen2MoeForCausalLM",
                       ("qwen2_moe",), decoder=True),
    "phi3": Model(_phi3_config, "Phi3Model", "Phi3ForCausalLM", ("phi3",), decoder=True),
    "phi3_longrope": Model(partial(_phi3_config, longrope=True), "Phi3Model",
                           "Phi3ForCausalLM", ("phi3",), decoder=True),
    "bart": Model(partial(_bart_like_config, "BartConfig"), "BartModel",
                  "BartForConditionalGeneration", ("bart",), "seq2seq", decoder=True),
    "blenderbot": Model(partial(_bart_like_config, "BlenderbotConfig"), "BlenderbotModel",
                        "BlenderbotForConditionalGeneration", ("blenderbot",), "seq2seq",
                        decoder=True),
    "pegasus": Model(partial(_bart_like_config, "PegasusConfig"), "PegasusModel",
                     "PegasusForConditionalGeneration", ("pegasus",), "seq2seq", decoder=True),
    "qwen2_audio": Model(_qwen2_audio_config, "Qwen2AudioForConditionalGeneration",
                         "Qwen2AudioForConditionalGeneration", ("qwen2_audio", "qwen2"),
                         "audio_text"),
    "bert": Model(_bert_config, "BertModel", "BertForMaskedLM", ("bert",), control=True),
    "gpt2": Model(_gpt2_config, "GPT2Model", "GPT2LMHeadModel", ("gpt2",), decoder=True,
                  control=True),
}
# forward: the base model; labels: the head with labels (loss); attn / attn_eager:
# output_attentions=True with the default (sdpa) and the eager attention implementation;
# global: Longformer's global attention; decode: one cached decoding step after a prefill.
VARIANTS = ("forward", "labels", "attn", "attn_eager", "global", "decode", "decode_legacy")


class NotApplicable(Exception):
    """A variant the installed release does not have (legacy cache tuples in 5.x)."""


def _model_inputs(model: Model) -> dict:
    """The seeded inputs of one forward pass (batch 2 x 16 tokens)."""
    import torch

    if model.inputs == "speech":
        gen = torch.Generator().manual_seed(1234)
        return {"input_features": torch.randn(BATCH, 8, 2 * 16, generator=gen),
                "decoder_input_ids": _ids(128)}
    if model.inputs == "audio_text":  # one placeholder per clip, expanded by the model
        gen = torch.Generator().manual_seed(1234)
        ids = _ids(AUDIO_TOKEN)
        ids[:, 1] = AUDIO_TOKEN
        return {"input_ids": ids, "attention_mask": _ones(),
                "input_features": torch.randn(BATCH, 8, 32, generator=gen),
                "feature_attention_mask": torch.ones(BATCH, 32, dtype=torch.long)}
    if model.inputs == "seq2seq":
        ids = _ids(128)
        return {"input_ids": ids, "attention_mask": _ones(), "decoder_input_ids": ids.flip(1)}
    return {"input_ids": _ids(128), "attention_mask": _ones()}


def _build_variant(name: str, variant: str, device: str = "cpu") -> tuple[Any, dict]:
    """``(callable, keyword arguments)`` of one case on ``device``; the callable is a module
    or a closure. Weights and inputs are drawn on the CPU (the same on every device)."""
    import torch
    import transformers as tf

    model = MODELS[name]
    config = model.config("eager" if variant == "attn_eager" else None)
    kwargs = {key: value.to(device) for key, value in _model_inputs(model).items()}
    if variant in ("forward", "attn", "attn_eager", "global"):
        module = getattr(tf, model.base)(config).to(device)
        if variant.startswith("attn"):
            kwargs["output_attentions"] = True
        if variant == "global":
            glob = torch.zeros(BATCH, SEQ, dtype=torch.long)
            glob[:, 0] = 1
            glob[:, 5] = 1
            glob[1, 9] = 1
            kwargs["global_attention_mask"] = glob.to(device)
        return module.eval(), kwargs
    module = getattr(tf, model.head)(config).to(device).eval()
    if variant == "labels":
        target = kwargs.get("decoder_input_ids", kwargs.get("input_ids"))
        kwargs.pop("decoder_input_ids", None)
        return module, {**kwargs, "labels": target}
    return _decode_step(module, model.inputs == "text", kwargs, device,
                        legacy=variant == "decode_legacy")


def _decode_step(module: Any, text: bool, kwargs: dict, device: str = "cpu",
                 legacy: bool = False) -> tuple[Any, dict]:
    """A prefill run eagerly, then one cached decoding step. The step crops the cache back to
    the prefill length first, so every call (counting, timing) starts from the same cache;
    with ``legacy`` the cache is passed as legacy tuples, which no call mutates."""
    import torch

    with torch.no_grad():
        prefill = module(**kwargs, use_cache=True)
    try:
        past = prefill.past_key_values
    except AttributeError:  # 5.x names the field ``cache``; models without one have neither
        past = None
    if past is None:
        raise NotApplicable("the model returns no key/value cache: a decode step would be "
                            "its forward again")
    cache = _cache_form(module, past, legacy)
    crop = _rewinder(cache)

    def rewind() -> None:
        # A negative crop removes that many tokens in every release (5.x refuses positive ones).
        extra = cache.get_seq_length() - SEQ if crop is not None else 0
        if extra > 0:
            crop(-extra)

    # One token per row of the prefill's ids (MusicGen's rows are batch x codebooks).
    rows = kwargs["input_ids"].shape[0] if "input_ids" in kwargs else BATCH
    token = torch.randint(2, 128, (rows, 1), generator=torch.Generator().manual_seed(7)
                          ).to(device)
    if text:
        def step(input_ids, attention_mask):
            rewind()
            return module(input_ids=input_ids, attention_mask=attention_mask,
                          past_key_values=cache, use_cache=True)

        return _taken(step, {"input_ids": token,
                             "attention_mask": torch.ones(BATCH, SEQ + 1, dtype=torch.long,
                                                          device=device)}, legacy)
    encoder = prefill.encoder_last_hidden_state

    def seq2seq_step(encoder_hidden, decoder_input_ids):
        rewind()
        return module(encoder_outputs=(encoder_hidden,), decoder_input_ids=decoder_input_ids,
                      past_key_values=cache, use_cache=True)

    return _taken(seq2seq_step, {"encoder_hidden": encoder, "decoder_input_ids": token},
                  legacy)


def _rewinder(cache: Any) -> Any:
    """The cache's ``crop``, where a step can rewind it by length; None where it cannot (no
    ``crop``, or recurrent layers only: they have no length, and each call then goes on from
    the state the last one left, the same sequence in both trees). 5.x's linear-attention
    layers crop only once told to keep their past (``activate_past_recording``)."""
    crop = getattr(cache, "crop", None)
    if crop is None:
        return None
    if any(hasattr(layer, "recurrent_states") for layer in getattr(cache, "layers", ())):
        cache.activate_past_recording()
    try:
        cache.get_seq_length()
    except ValueError:  # "can only be called on Attention layers"
        return None
    return crop


def _taken(step: Any, kwargs: dict, legacy: bool) -> tuple[Any, dict]:
    """``(step, kwargs)``, once a legacy step has run eagerly: 4.5x models return a ``Cache``
    and many no longer take tuples back (``'tuple' object has no attribute
    'get_seq_length'``), so the variant does not exist for them. Only the original tree's
    verdict counts (``_row``): a rewritten tree that rejects what the original took fails."""
    import torch

    if legacy:
        try:
            with torch.no_grad():
                step(**kwargs)
        except (AttributeError, TypeError, ValueError) as error:
            raise NotApplicable(f"legacy cache tuples not taken back: {error}") from error
    return step, kwargs


def _cache_form(module: Any, cache: Any, legacy: bool) -> Any:
    """The prefill's cache in the form a variant passes back: a ``Cache`` object
    (``decode``) or legacy tuples (``decode_legacy``). 4.4x models return tuples unless given
    a ``Cache``; those without ``Cache`` support have no ``decode`` variant, and 5.x has no
    legacy tuples."""
    import transformers

    if legacy:
        if isinstance(cache, tuple):
            return cache
        if not hasattr(cache, "to_legacy_cache"):
            raise NotApplicable("no legacy cache tuples in this release")
        return cache.to_legacy_cache()
    if not isinstance(cache, tuple):
        return cache
    if not getattr(module, "_supports_cache_class", False):
        raise NotApplicable("this model takes no Cache object in this release")
    if len(cache[0]) == 4:  # self-attention and cross-attention keys and values per layer
        return transformers.EncoderDecoderCache.from_legacy_cache(cache)
    return transformers.DynamicCache.from_legacy_cache(cache)


def case_names() -> list[str]:
    """Every "model:variant" case, in table order."""
    names = []
    for name, model in MODELS.items():
        for variant in VARIANTS:
            if variant == "global" and name != "longformer":
                continue
            if variant == "attn_eager" and not model.eager_variant:
                continue
            if variant.startswith("decode") and not model.decoder:
                continue
            names.append(f"{name}:{variant}")
    return names


@dataclass(frozen=True)
class Case:
    """One benchmark case: a builder and the transformers model folders it uses."""

    build: Callable[..., tuple[Any, dict]]  # build(device="cpu")
    folders: tuple[str, ...]
    control: bool = False  # expected to have no break


CASES: dict[str, Case] = {
    case: Case(lambda device="cpu", case=case: _build_variant(*case.split(":"), device),
               MODELS[case.split(":")[0]].folders,
               control=MODELS[case.split(":")[0]].control and case.endswith(":forward"))
    for case in case_names()}

