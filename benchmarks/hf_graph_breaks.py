"""Graph breaks in Hugging Face transformers before and after an eqrewrite rule pack.

The benchmark copies the installed ``transformers`` package to ``WORKDIR/orig/transformers``,
rewrites it with ``eqrewrite orig/transformers --rules PACK --out rew/transformers`` (the
whole package by default) and then, for every case (a model and a variant: ``forward``, the
head with ``labels``, ``attn`` / ``attn_eager`` = ``output_attentions=True`` with the default
sdpa and with the eager attention implementation, Longformer's ``global`` attention, and
``decode``: one cached decoding step after an eager prefill) and for each of the two trees,
starts a fresh Python process that

* imports ``transformers`` from that tree (and checks ``transformers.__file__``),
* builds the model from a tiny config with random weights (``torch.manual_seed(0)``, eval
  mode, no downloads) and fixed seeded inputs (batch 2 x 16 tokens),
* computes the eager output and counts graph breaks with
  ``oracle.graphbreaks.count_graph_breaks(..., backend="eager")``,
* writes a JSON record and the output tensors (``torch.save``) for the parent.

Then, unless ``--skip-latency``, every case whose breaks dropped is timed on ``--device``
(``cpu`` by default, ``cuda`` on a GPU machine, unchanged otherwise): steady state in one
more process that imports both trees, compiles both models with ``--backend`` (Inductor by
default) and times them in alternation (two warm-up calls, then the median of
``--repeats``); cold start (the first call, compilation included, GraphMend's other figure)
``--cold-repeats`` times per tree, each in a fresh process with an empty Inductor cache.

The parent prints one row per case (breaks before/after, fullgraph before/after, whether the
eager outputs of the two trees match, compiled latency ratio after/before), totals compared
with GraphMend's 72 % (122 -> 34 breaks), and every break reason (gb_type and the frame in
transformers, with its source line). ``--json`` saves everything.

Examples::

    python benchmarks/hf_graph_breaks.py                      # rules/graphbreaks.yaml
    python benchmarks/hf_graph_breaks.py --rules default --models t5,bert --skip-latency
    python benchmarks/hf_graph_breaks.py --backend aot_eager --json /tmp/hf.json
    python benchmarks/hf_graph_breaks.py --device cuda --models mixtral,llama --cold-repeats 3
    python benchmarks/hf_graph_breaks.py --record-profile traced.txt --skip-latency
    python benchmarks/hf_graph_breaks.py --eqrewrite-args "--scope traced:traced.txt"

Models live in ``MODELS`` (a tiny config and the classes), variants in ``_build_variant``.
"""

from __future__ import annotations

import argparse
import filecmp
import importlib.util
import json
import logging
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

GRAPHMEND = (122, 34)  # GraphMend's total breaks before -> after on its benchmark (72 % removed)
BATCH, SEQ = 2, 16
RTOL, ATOL = 1e-6, 1e-7  # "allclose" tolerance when the outputs are not bitwise equal
COMPILED_RTOL, COMPILED_ATOL = 1e-4, 1e-5  # compiled vs eager (Inductor reorders float ops)
WARMUP, REPEATS = 2, 10


# --------------------------------------------------------------------------------------------
# Model cases (run inside the worker process; transformers is imported lazily)
# --------------------------------------------------------------------------------------------

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

    token = torch.randint(2, 128, (BATCH, 1), generator=torch.Generator().manual_seed(7)
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


# --------------------------------------------------------------------------------------------
# Worker: one (tree, case) pair in a fresh process
# --------------------------------------------------------------------------------------------

def _tensors(obj: Any) -> list[Any]:
    """Every tensor in a (nested) model output, in a deterministic order."""
    import torch

    if isinstance(obj, torch.Tensor):
        return [obj.detach()]
    if isinstance(obj, (tuple, list)):
        return [t for item in obj for t in _tensors(item)]
    if isinstance(obj, dict):  # ModelOutput is an OrderedDict
        return [t for value in obj.values() for t in _tensors(value)]
    if hasattr(obj, "to_legacy_cache"):  # transformers Cache objects
        return _tensors(obj.to_legacy_cache())
    if hasattr(obj, "__dict__"):
        return [t for _, value in sorted(vars(obj).items()) for t in _tensors(value)]
    return []


def _relative_frame(frame: str | None, tree_parent: str) -> str | None:
    """A frame "path:line" relative to the tree's parent ("transformers/...:N") when inside."""
    if not frame:
        return frame
    prefix = tree_parent.rstrip(os.sep) + os.sep
    return frame[len(prefix):] if frame.startswith(prefix) else frame


def _source_line(frame: str | None) -> str:
    """The stripped source line a "path:line" frame points at ("" if unknown)."""
    import linecache

    if not frame or ":" not in frame:
        return ""
    path, _, line = frame.rpartition(":")
    return linecache.getline(path, int(line)).strip() if line.isdigit() else ""


def _reasons(report: Any, tree_parent: str, suppressed: list[dict]) -> list[dict]:
    """Break reasons deduplicated by (gb_type or reason, frame), most frequent first."""
    merged: dict[tuple[str, str | None], dict] = {}
    for s in suppressed:
        key = ("Dynamo internal error (frame run eagerly)", s["frame"])
        if key in merged:
            merged[key]["count"] += 1
            continue
        merged[key] = {"gb_id": None, "gb_type": key[0], "reason": s["message"],
                       "detail": s["message"], "frame": _relative_frame(s["frame"], tree_parent),
                       "source": _source_line(s["frame"]), "count": 1}
    for r in report.reasons:
        key = (r.gb_type or r.reason, r.frame)
        if key in merged:
            merged[key]["count"] += r.count
            continue
        merged[key] = {"gb_id": r.gb_id, "gb_type": r.gb_type, "reason": r.reason,
                       "detail": r.detail, "frame": _relative_frame(r.frame, tree_parent),
                       "source": _source_line(r.frame), "count": r.count}
    return sorted(merged.values(), key=lambda d: -d["count"])


class _Records(logging.Handler):
    """Keeps the WARNING records Dynamo logs when it suppresses an error in a frame."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _user_frame(text: str) -> str | None:
    """The innermost ``File "...", line N`` frame after "from user code:" in an error text."""
    _, _, user = text.partition("from user code:")
    frames = re.findall(r'File "([^"]+)", line (\d+)', user)
    return f"{frames[-1][0]}:{frames[-1][1]}" if frames else None


def _count(count_graph_breaks: Callable, model: Any, kwargs: dict
           ) -> tuple[Any, str | None, list[dict]]:
    """count_graph_breaks under no_grad; if Dynamo crashes, again with suppress_errors.

    Returns (report, the crash "Type: message" or None, one dict per suppressed error).
    """
    import torch
    import torch._dynamo

    with torch.no_grad():
        try:
            return count_graph_breaks(model, (), kwargs, backend="eager"), None, []
        except Exception as error:
            crash = f"{type(error).__name__}: {str(error).strip().splitlines()[0][:300]}"
        torch._dynamo.config.suppress_errors = True
        handler = _Records()
        logger = logging.getLogger("torch._dynamo.convert_frame")
        logger.addHandler(handler)
        try:
            report = count_graph_breaks(model, (), kwargs, backend="eager")
        finally:
            logger.removeHandler(handler)
    suppressed = []
    for record in handler.records:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += "\n" + str(record.exc_info[1])
        if "from user code:" in text:
            first = next((ln.strip() for ln in text.splitlines() if "Error" in ln), "")
            suppressed.append({"frame": _user_frame(text), "message": first[:300]})
    return report, crash, suppressed


def _import_tree(tree_parent: str, package: str = "transformers") -> Any:
    """Import ``package`` from ``tree_parent`` (forgetting any copy imported before)."""
    import importlib

    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]
    sys.path.insert(0, tree_parent)
    try:
        module = importlib.import_module(package)
    finally:
        sys.path.remove(tree_parent)
    module_file = os.path.abspath(module.__file__ or "")
    if not module_file.startswith(os.path.join(tree_parent, package) + os.sep):
        raise RuntimeError(f"imported {module_file}, expected a copy under {tree_parent}")
    return module


def run_worker(spec: dict) -> dict:
    """Build one case from one tree and count its breaks; the JSON-able result."""
    import torch

    transformers = _import_tree(spec["tree_parent"])
    torch.set_num_threads(spec["threads"])
    torch.manual_seed(0)
    try:
        model, kwargs = CASES[spec["case"]].build(spec.get("device", "cpu"))
    except NotApplicable as reason:
        return {"not_applicable": str(reason)}
    return measure(model, kwargs, spec, transformers)


def measure(model: Any, kwargs: dict, spec: dict, package: Any) -> dict:
    """Eager outputs (saved to ``spec["outputs_file"]``) and graph breaks of ``model(**kwargs)``
    built from the tree ``spec["tree_parent"]`` of ``package``; the JSON-able result."""
    import torch
    from eqrewrite.oracle.core.graphbreaks import count_graph_breaks

    tree_parent, name = spec["tree_parent"], package.__name__
    with torch.no_grad():
        eager = _tensors(model(**kwargs))
    traced = None
    if spec.get("record"):
        from eqrewrite.oracle.traced import record_traced

        with record_traced() as traced:
            report, crash, suppressed = _count(count_graph_breaks, model, kwargs)
    else:
        report, crash, suppressed = _count(count_graph_breaks, model, kwargs)
    result: dict[str, Any] = {
        "case": spec["case"], "tree": spec["tree"],
        f"{name}_file": os.path.abspath(package.__file__),
        f"{name}_version": package.__version__, "torch_version": torch.__version__,
        # A frame on which Dynamo crashes runs eagerly (suppress_errors): one more break.
        "breaks": report.breaks + len(suppressed), "graph_count": report.graph_count,
        "explain_breaks": report.explain_breaks, "break_events": report.break_events,
        "fullgraph_ok": report.fullgraph_ok, "fullgraph_error": report.fullgraph_error,
        "skipped_frames": report.skipped_frames, "dynamo_crash": crash,
        "reasons": _reasons(report, tree_parent, suppressed),
        "outputs_file": spec["outputs_file"], "n_outputs": len(eager),
        "dynamo_config": spec.get("dynamo_config", {}),
    }
    if traced is not None:
        result["traced"] = traced.entries()
    torch.save(eager, spec["outputs_file"])
    return result


def _timer(device: str) -> Callable[[Callable[[], Any]], tuple[float, Any]]:
    """``time(call) -> (seconds, result)``, waiting for the device's queued work."""
    import torch

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    def time_call(call: Callable[[], Any]) -> tuple[float, Any]:
        sync()
        start = time.perf_counter()
        result = call()
        sync()
        return time.perf_counter() - start, result

    return time_call


def _build_case(package: Any, case: str, device: str) -> tuple[Any, dict]:
    """``(callable, keyword arguments)`` of one of ``CASES`` on ``device`` (the latency
    workers' default builder; ``package`` is the tree's transformers, imported already)."""
    return CASES[case].build(device)


def run_latency_worker(spec: dict, build: Callable[[Any, str, str], tuple[Any, dict]]
                       = _build_case) -> dict:
    """Steady-state compiled latency of one case from both trees in this one process.

    Both trees are imported (one after the other, as distinct module objects), both models
    are compiled with the same backend, warmed up, then timed in alternation (before, after,
    before, ...) so that load on the machine hits both alike; medians are reported. ``build``
    makes the case: ``build(package, case, device) -> (callable, kwargs)``, ``package`` being
    ``spec["package"]`` (transformers by default) imported from the tree.
    """
    import torch
    import torch._dynamo

    torch.set_num_threads(spec["threads"])
    _apply_dynamo_settings(spec)
    device = spec.get("device", "cpu")
    time_call = _timer(device)
    callables = {}
    for tree, parent in (("orig", spec["orig_parent"]), ("rew", spec["rew_parent"])):
        package = _import_tree(parent, spec.get("package", "transformers"))
        torch.manual_seed(0)
        callables[tree] = build(package, spec["case"], device)
    torch._dynamo.reset()
    times: dict[str, list[float]] = {"orig": [], "rew": []}
    agree = {}
    with torch.no_grad():
        compiled = {tree: torch.compile(fn, backend=spec["backend"])
                    for tree, (fn, _) in callables.items()}
        for tree, fn in compiled.items():
            kwargs = callables[tree][1]
            eager = _tensors(callables[tree][0](**kwargs))
            agree[tree] = _compare([t.cpu() for t in eager],
                                   [t.cpu() for t in _tensors(fn(**kwargs))],
                                   COMPILED_RTOL, COMPILED_ATOL)
            for _ in range(WARMUP - 1):
                fn(**kwargs)
        for _ in range(spec["repeats"]):
            for tree, fn in compiled.items():
                kwargs = callables[tree][1]
                times[tree].append(time_call(lambda fn=fn, kwargs=kwargs: fn(**kwargs))[0])
    return {tree: {"backend": spec["backend"], "device": device,
                   "median_s": statistics.median(times[tree]), "min_s": min(times[tree]),
                   "times_s": times[tree], "compiled_vs_eager": agree[tree]}
            for tree in times}


def run_cold_worker(spec: dict, build: Callable[[Any, str, str], tuple[Any, dict]]
                    = _build_case) -> dict:
    """Cold start of one case from one tree: the first compiled call, compilation included,
    in a fresh process whose Inductor cache folder is empty (``spec["cache_dir"]``);
    ``build`` as for run_latency_worker."""
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = spec["cache_dir"]
    os.environ["TRITON_CACHE_DIR"] = os.path.join(spec["cache_dir"], "triton")
    import torch

    torch.set_num_threads(spec["threads"])
    _apply_dynamo_settings(spec)
    package = _import_tree(spec["tree_parent"], spec.get("package", "transformers"))
    torch.manual_seed(0)
    fn, kwargs = build(package, spec["case"], spec.get("device", "cpu"))
    compiled = torch.compile(fn, backend=spec["backend"])
    with torch.no_grad():
        seconds, _ = _timer(spec.get("device", "cpu"))(lambda: compiled(**kwargs))
    return {"first_call_s": seconds, "backend": spec["backend"]}


# --------------------------------------------------------------------------------------------
# Parent
# --------------------------------------------------------------------------------------------

def _compare(a: list[Any], b: list[Any], rtol: float = RTOL, atol: float = ATOL) -> dict:
    """"equal" (bitwise, NaN == NaN), "allclose" (rtol/atol) or "DIFFERENT", with max |a-b|."""
    import torch

    if len(a) != len(b) or any(x.shape != y.shape or x.dtype != y.dtype for x, y in zip(a, b)):
        return {"verdict": "DIFFERENT", "max_abs": None, "why": "tensor count/shape/dtype"}
    diffs = [(x.double() - y.double()).abs().nan_to_num(0.0).max().item() if x.numel() else 0.0
             for x, y in zip(a, b)]
    max_abs = max(diffs, default=0.0)
    if all(torch.equal(x, y) or (torch.equal(x.isnan(), y.isnan())
                                 and torch.equal(x.nan_to_num(), y.nan_to_num()))
           for x, y in zip(a, b)):
        return {"verdict": "equal", "max_abs": max_abs}
    if all(torch.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True) for x, y in zip(a, b)):
        return {"verdict": "allclose", "max_abs": max_abs}
    return {"verdict": "DIFFERENT", "max_abs": max_abs}


def _fail(message: str) -> None:
    """Print an error and exit with status 2."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def _check_pack(spec: str) -> str:
    """The pack file for ``spec`` (path or packaged name); exit with a clear message if none."""
    from eqrewrite.rewriter.api import RuleError, resolve_pack

    try:
        return str(resolve_pack(spec))
    except RuleError as error:
        hint = (" (the graph-break pack rules/graphbreaks.yaml is not written yet)"
                if spec in ("graphbreaks", "graphbreaks.yaml") else "")
        _fail(f"rule pack {spec!r} not found{hint}: {error}. Pass --rules PATH, or "
              "--rules default to check the plumbing.")
    return ""


def _copy_if_missing(src: str, dst: str) -> str:
    """shutil.copy2 unless ``dst`` exists (keeps eqrewrite's output)."""
    return dst if os.path.exists(dst) else shutil.copy2(src, dst)


def _exclude_globs(orig: Path, cases: list[str]) -> list[str]:
    """--exclude globs that skip model folders no selected case uses, and TF/Flax files."""
    keep = {folder for name in cases for folder in CASES[name].folders}
    globs = [f"models/{d.name}/" for d in sorted((orig / "models").iterdir())
             if d.is_dir() and d.name not in keep]
    return globs + ["*_tf_*.py", "*_flax_*.py", "*tf_utils.py", "*flax_utils.py"]


def copy_original(workdir: Path, package: str, reuse: bool) -> Path:
    """Copy the installed ``package`` to ``workdir/orig/`` (unless ``reuse`` and it is there)."""
    spec = importlib.util.find_spec(package)  # the installed copy, not imported
    if spec is None or not spec.origin:
        _fail(f"{package} is not installed (e.g. pip install transformers==4.46.3)")
    src, orig = Path(spec.origin).parent, workdir / "orig" / package
    if reuse and (orig / "__init__.py").is_file() and filecmp.cmp(
            src / "__init__.py", orig / "__init__.py", shallow=False):  # same release
        return orig
    if orig.exists():
        shutil.rmtree(orig)
    shutil.copytree(src, orig,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return orig


def prepare_trees(workdir: Path, pack: str, scope: str, cases: list[str], reuse: bool,
                  extra: list[str], package: str = "transformers") -> dict:
    """Copy the installed ``package`` to orig/, rewrite it into rew/; a summary of the rewrite."""
    orig, rew = workdir / "orig" / package, workdir / "rew" / package
    if reuse and orig.is_dir() and rew.is_dir():
        print(f"reusing {orig} and {rew}", file=sys.stderr)
        return {"reused": True}
    if rew.exists():
        shutil.rmtree(rew)
    # The same release already copied stays (a scan may be importing it right now).
    copy_original(workdir, package, True)
    cmd = [shutil.which("eqrewrite") or "eqrewrite", str(orig), "--rules", pack,
           "--out", str(rew), "--no-cache", "--quiet", "--format", "json", *extra]
    if scope == "cases":
        for glob in _exclude_globs(orig, cases):
            cmd += ["--exclude", glob]
    print(f"rewriting {orig} with {pack} (scope {scope}) ...", file=sys.stderr)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode not in (0, 123):  # 123: some files failed, the others were written
        _fail(f"eqrewrite exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    try:
        document = json.loads(proc.stdout)
    except ValueError:
        document = {}
    # --out writes only the Python files it processed: add everything else unchanged.
    shutil.copytree(orig, rew, dirs_exist_ok=True, copy_function=_copy_if_missing)
    edits = document.get("edits", [])
    by_rule: dict[str, int] = {}
    for edit in edits:
        by_rule[edit.get("rule", "?")] = by_rule.get(edit.get("rule", "?"), 0) + 1
    summary = {"command": cmd, "seconds": round(seconds, 1), "exit_code": proc.returncode,
               "summary": document.get("summary"), "errors": document.get("errors", []),
               "files_changed": len({e["file"] for e in edits}), "edits": len(edits),
               "edits_by_rule": dict(sorted(by_rule.items(), key=lambda kv: -kv[1]))}
    print(f"rewrite done in {seconds:.0f} s: {summary['edits']} edits in "
          f"{summary['files_changed']} files, {len(summary['errors'])} file errors",
          file=sys.stderr)
    return summary


def _run_worker_process(spec: dict, result_file: Path, tree_parents: list[str],
                        args: argparse.Namespace, script: str = __file__) -> dict:
    """Run ``script`` (this one by default) as a worker on ``spec`` in a fresh interpreter; its
    result or an error."""
    result_file.unlink(missing_ok=True)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               OMP_NUM_THREADS=str(args.threads))
    cmd = [sys.executable, os.path.abspath(script), "--worker", json.dumps(spec),
           "--worker-out", str(result_file)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                              timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout} s"}
    seconds = time.perf_counter() - start
    if proc.returncode != 0 or not result_file.exists():
        return {"error": f"worker exited {proc.returncode}", "stderr_tail": proc.stderr[-3000:]}
    result = json.loads(result_file.read_text())
    result["worker_seconds"] = round(seconds, 1)
    return result


def run_case(tree: str, tree_parent: Path, case: str, workdir: Path, args: argparse.Namespace,
             script: str = __file__, package: str = "transformers") -> dict:
    """Count one (tree, case) pair's breaks in a fresh interpreter running ``script`` (or take
    the record an earlier run left in the workdir: ``--reuse-original``, ``--reuse-records``)."""
    reuse = (args.reuse_records and args.reuse_trees) or (tree == "orig" and args.reuse_original)
    if reuse and not (tree == "orig" and args.record_profile):
        kept = _kept_record(workdir, tree, case, package, dynamo_settings(args))
        if kept is not None:
            return {"case": case, "tree": tree, **kept}
    spec = {"job": "count", "tree": tree, "tree_parent": str(tree_parent.resolve()),
            "case": case, "package": package, "threads": args.threads,
            "device": getattr(args, "device", "cpu"),
            "record": bool(args.record_profile) and tree == "orig",
            "dynamo_config": dynamo_settings(args),
            "outputs_file": str(outputs_dir(workdir, args) / f"{tree}_{case}.pt")}
    result = _run_worker_process(spec, outputs_dir(workdir, args) / f"{tree}_{case}.json",
                                 [spec["tree_parent"]], args, script)
    return {"case": case, "tree": tree, **result}


def _totals(results: dict, cases: list[str]) -> dict[str, float]:
    """Breaks of ``cases`` summed over each tree, and the share removed."""
    before = sum(results[c]["orig"]["breaks"] for c in cases)
    after = sum(results[c]["rew"]["breaks"] for c in cases)
    return {"breaks_before": before, "breaks_after": after,
            "percent_removed": 100.0 * (before - after) / before if before else 0.0}


def add_dynamo_config_argument(parser: argparse.ArgumentParser) -> None:
    """``--dynamo-config KEY=VALUE``, shared with hf_generality.py (read by
    ``dynamo_settings``)."""
    parser.add_argument("--dynamo-config", action="append", default=[], metavar="KEY=VALUE",
                        help="a torch._dynamo.config switch set in every worker, both trees "
                             "(repeatable; e.g. capture_scalar_outputs=true, the switches the "
                             "audit names for the breaks no rewrite removes)")


def outputs_folder(workdir: Path, settings: Mapping[str, object]) -> Path:
    """Where the records and outputs of one mode go: ``outputs`` for default settings,
    ``outputs-KEY=VALUE,...`` with Dynamo switches (so the modes never overwrite each
    other), created if missing."""
    name = "outputs" + ("-" + ",".join(f"{k}={v}" for k, v in sorted(settings.items()))
                        if settings else "")
    folder = workdir / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def outputs_dir(workdir: Path, args: argparse.Namespace) -> Path:
    """``outputs_folder`` of the switches ``args`` set (``--dynamo-config``)."""
    return outputs_folder(workdir, dynamo_settings(args))


def dynamo_settings(args: argparse.Namespace) -> dict[str, object]:
    """``--dynamo-config KEY=VALUE`` switches as a dict (none unless the driver takes them)."""
    from eqrewrite.oracle.core.settings import parse_settings

    return parse_settings(getattr(args, "dynamo_config", None) or [])


def _apply_dynamo_settings(spec: dict) -> None:
    """Set the worker's ``torch._dynamo.config`` switches (an unknown one fails loudly)."""
    import torch._dynamo

    for key, value in spec.get("dynamo_config", {}).items():
        if not hasattr(torch._dynamo.config, key):
            raise SystemExit(f"unknown torch._dynamo.config switch: {key}")
        setattr(torch._dynamo.config, key, value)


def _kept_record(workdir: Path, tree: str, case: str, package: str = "transformers",
                 settings: dict[str, object] | None = None) -> dict | None:
    """The record of ``case`` in ``tree`` from an earlier run in ``workdir``, if it succeeded
    with the ``package`` and torch versions installed now and the same Dynamo switches
    (``settings``). The original tree is the
    installed package, so its breaks and outputs do not depend on the rule pack; the
    rewritten tree is the same only while it is reused (``--reuse-trees``)."""
    from importlib.metadata import version

    folder = outputs_folder(workdir, settings or {})
    record_file = folder / f"{tree}_{case}.json"
    outputs_file = folder / f"{tree}_{case}.pt"
    try:
        record = json.loads(record_file.read_text())
    except (OSError, ValueError):
        return None
    # A case skipped (not buildable generically) stays skipped with the same versions
    # (records of skips written before they carried versions are taken as current).
    skipped = "skipped" in record
    installed = {f"{package}_version": version(package), "torch_version": version("torch")}
    if ("error" in record or not (skipped or outputs_file.is_file())
            or any(record.get(key, value if skipped else None) != value
                   for key, value in installed.items())
            or record.get("dynamo_config", {}) != (settings or {})):
        return None
    print(f"  ({tree}: record kept from an earlier run, {record_file.name})",
          file=sys.stderr)
    return {**record, "outputs_file": str(outputs_file), "kept": True}


def run_latency(case: str, workdir: Path, args: argparse.Namespace, script: str = __file__,
                package: str = "transformers") -> dict:
    """Steady-state latency of one case from both trees in one fresh interpreter (see
    run_latency_worker), then ``--cold-repeats`` cold starts of each tree, alternating, each
    in a fresh interpreter with an empty compile cache (see run_cold_worker). The workers run
    ``script`` (this one by default; another driver dispatches the "latency" and "cold" jobs
    to those functions with its own builder) on ``package`` imported from each tree."""
    parents = {tree: str((workdir / tree).resolve()) for tree in ("orig", "rew")}
    common = {"case": case, "backend": args.backend, "threads": args.threads,
              "device": args.device, "package": package,
              "dynamo_config": dynamo_settings(args)}
    spec = {"job": "latency", **common, "repeats": args.repeats,
            "orig_parent": parents["orig"], "rew_parent": parents["rew"]}
    result = _run_worker_process(spec, outputs_dir(workdir, args) / f"latency_{case}.json",
                                 list(parents.values()), args, script)
    if "error" in result:
        return result
    for attempt in range(args.cold_repeats):
        for tree, parent in parents.items():
            cache = tempfile.mkdtemp(prefix=f"cold-{tree}-", dir=workdir)
            cold = _run_worker_process(
                {"job": "cold", **common, "tree_parent": parent, "cache_dir": cache},
                outputs_dir(workdir, args) / f"cold_{tree}_{attempt}_{case}.json", [parent], args,
                script)
            shutil.rmtree(cache, ignore_errors=True)
            if "error" in cold:
                return {"error": f"cold start ({tree}): {cold['error']}"}
            result[tree].setdefault("cold_runs_s", []).append(cold["first_call_s"])
    for tree in parents:
        if result[tree].get("cold_runs_s"):  # none with --cold-repeats 0
            result[tree]["cold_s"] = statistics.median(result[tree]["cold_runs_s"])
    return result


def _fmt_ratio(latency: dict | None) -> str:
    """Compiled latency after/before, or "-"."""
    if not latency or "error" in latency:
        return "-" if not latency else "ERR"
    b, a = latency["orig"]["median_s"], latency["rew"]["median_s"]
    return f"{a / b:.2f}" if b else "-"


def _row(case: str, before: dict, after: dict, latency: dict | None
         ) -> tuple[list[str], dict]:
    """One printed table row and the per-case comparison record."""
    import torch

    if "not_applicable" in before:
        return [case, "n/a", "n/a", "-", before["not_applicable"], "-"], {
            "not_applicable": before["not_applicable"]}
    if "not_applicable" in after:
        after = {"error": f"not applicable after the rewrite: {after['not_applicable']}"}
    if "error" in before or "error" in after:
        which = "before" if "error" in before else "after"
        record = {"error": (before if which == "before" else after)["error"]}
        return [case, "ERR", "ERR", "-", which + " failed", "-"], record
    match = _compare(torch.load(before["outputs_file"]), torch.load(after["outputs_file"]))
    fg = "/".join("yes" if r["fullgraph_ok"] else "no" for r in (before, after))
    ratio = _fmt_ratio(latency)
    record = {"breaks_before": before["breaks"], "breaks_after": after["breaks"],
              "fullgraph_before": before["fullgraph_ok"], "fullgraph_after": after["fullgraph_ok"],
              "outputs_match": match, "latency_ratio_after_before": ratio,
              "latency": latency}
    shown = match["verdict"] if match["verdict"] == "equal" else (
        f"{match['verdict']} ({match['max_abs']:.1e})" if match["max_abs"] is not None
        else match["verdict"])
    b, a = (f"{r['breaks']}{'*' if r.get('dynamo_crash') else ''}" for r in (before, after))
    return [case, b, a, fg, shown, ratio], record


def _print_table(rows: list[list[str]]) -> None:
    """Print rows as an aligned text table with a header."""
    header = ["model", "breaks before", "breaks after", "fullgraph b/a", "outputs match",
              "latency after/before"]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, ["-" * w for w in widths], *rows]:
        print(" | ".join(cell.ljust(w) for cell, w in zip(r, widths)))


def _print_reasons(results: dict[str, dict[str, dict]]) -> None:
    """Every distinct break reason per case and tree: count, gb_id, gb_type, frame, source."""
    for case, trees in results.items():
        for tree in ("orig", "rew"):
            res = trees.get(tree, {})
            reasons = res.get("reasons") or []
            if not reasons:
                continue
            print(f"\n{case} [{tree}] {res['breaks']} breaks, {res['graph_count']} graphs, "
                  f"fullgraph error: {res.get('fullgraph_error')}")
            for r in reasons:
                print(f"  {r['count']:>3}x {r['gb_id'] or '?':7} {r['gb_type'] or r['reason']}")
                print(f"       at {r['frame']}: {r['source']}")
                if r["detail"]:
                    print(f"       {r['detail'][:160]}")


def _print_latency(latencies: dict[str, dict]) -> None:
    """Cold-start and steady-state compiled latency of the cases whose breaks dropped, and
    the geometric means of after/before."""
    timed = {c: t for c, t in latencies.items() if "error" not in t}
    if not timed:
        return
    device = next(iter(timed.values()))["orig"].get("device", "cpu")
    print(f"\ncompiled latency on {device}: cold = first call in a fresh process with an "
          "empty compile cache (compilation included), steady = median of repeated calls "
          "(both trees in one process, alternating):")
    steady, cold = [], []
    for case, timing in timed.items():
        before, after = timing["orig"], timing["rew"]
        steady.append(after["median_s"] / before["median_s"])
        line = (f"  {case:24} steady before {1e3 * before['median_s']:8.2f} ms  after "
                f"{1e3 * after['median_s']:8.2f} ms  after/before {steady[-1]:.2f}")
        if "cold_s" in before:
            cold.append(after["cold_s"] / before["cold_s"])
            line += (f" | cold before {before['cold_s']:6.2f} s  after {after['cold_s']:6.2f} s"
                     f"  after/before {cold[-1]:.2f}")
        print(line)
    print(f"  geometric mean of after/before over {len(steady)} cases: steady "
          f"{statistics.geometric_mean(steady):.2f}"
          + (f", cold {statistics.geometric_mean(cold):.2f}" if cold else ""))
    for case, timing in latencies.items():
        if "error" in timing:
            print(f"  {case}: latency run failed: {timing['error']}")


def main(argv: list[str] | None = None) -> int:
    """Parse options; run as the benchmark driver or as a one-case worker."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", default="graphbreaks",
                        help="rule pack name or path (default: graphbreaks)")
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated models ({', '.join(MODELS)}) or model:variant "
                             f"cases (variants: {', '.join(VARIANTS)})")
    parser.add_argument("--eqrewrite-args", default="",
                        help="extra arguments for the eqrewrite command, e.g. "
                             "'--scope traced:profile.txt'")
    parser.add_argument("--backend", default="inductor",
                        help="torch.compile backend for latency (inductor, aot_eager, eager)")
    parser.add_argument("--device", default="cpu",
                        help="device the models run on, for the break counts and the latency "
                             "(cpu, cuda, cuda:1...)")
    parser.add_argument("--cold-repeats", type=int, default=1,
                        help="cold starts per tree and case, each in a fresh process with an "
                             "empty compile cache; the median is kept (default: 1)")
    parser.add_argument("--skip-latency", action="store_true",
                        help="do not time compiled runs (otherwise: cases whose breaks all went "
                             "away, both trees timed in one process)")
    parser.add_argument("--json", type=Path, help="write the full results to this JSON file")
    add_dynamo_config_argument(parser)
    parser.add_argument("--workdir", type=Path,
                        help="folder for the two trees and outputs (default: a temp folder, "
                             "removed at the end)")
    parser.add_argument("--reuse-trees", action="store_true",
                        help="with --workdir: reuse orig/ and rew/ if both exist")
    parser.add_argument("--rewrite-scope", choices=["all", "cases"], default="all",
                        help="rewrite the whole package (default) or only the selected cases' "
                             "model folders plus the shared modules (faster)")
    parser.add_argument("--repeats", type=int, default=REPEATS,
                        help=f"timed calls after {WARMUP} warm-up calls; the median is kept "
                             f"(default: {REPEATS})")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads per worker (default: 1; more threads are slower "
                             "and noisier for tiny models on a busy machine)")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds per worker process (default: 1800)")
    parser.add_argument("--reuse-original", action="store_true",
                        help="with --workdir: take the original tree's per-case records from "
                             "an earlier run there when the installed transformers and torch "
                             "versions match (the rewritten tree is always measured)")
    parser.add_argument("--reuse-records", action="store_true",
                        help="with --reuse-trees: take both trees' per-case records from earlier "
                             "runs in the workdir (to time more cases, or to finish a run split "
                             "over several processes)")
    parser.add_argument("--record-profile", type=Path,
                        help="write the functions Dynamo traced in the original tree (all "
                             "cases) to this file, for --eqrewrite-args '--scope traced:FILE'")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        spec = json.loads(args.worker)
        jobs = {"count": run_worker, "latency": run_latency_worker, "cold": run_cold_worker}
        result = jobs[spec["job"]](spec)
        Path(args.worker_out).write_text(json.dumps(result, indent=1))
        return 0

    cases = []
    for item in (m.strip() for m in args.models.split(",") if m.strip()):
        chosen = [item] if item in CASES else [c for c in CASES if c.startswith(item + ":")]
        if not chosen:
            _fail(f"unknown model or case {item!r}; choose from {', '.join(MODELS)} or "
                  f"{', '.join(CASES)}")
        cases += chosen
    pack = _check_pack(args.rules)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="hf-graph-breaks-"))
    workdir = workdir.resolve()
    (workdir / "outputs").mkdir(parents=True, exist_ok=True)
    try:
        rewrite = prepare_trees(workdir, pack, args.rewrite_scope, cases, args.reuse_trees,
                                args.eqrewrite_args.split())
        results: dict[str, dict[str, dict]] = {}
        for case in cases:
            results[case] = {}
            for tree in ("orig", "rew"):
                print(f"{case} [{tree}] ...", file=sys.stderr, flush=True)
                res = run_case(tree, workdir / tree, case, workdir, args)
                if "error" in res:
                    print(f"  FAILED: {res['error']}\n{res.get('stderr_tail', '')}",
                          file=sys.stderr)
                results[case][tree] = res
        if args.record_profile:
            entries = sorted({e for c in cases for e in results[c]["orig"].get("traced", [])})
            args.record_profile.write_text(
                "# functions Dynamo traced (hf_graph_breaks.py --record-profile)\n"
                + "".join(e + "\n" for e in entries))
            print(f"profile of {len(entries)} functions written to {args.record_profile}",
                  file=sys.stderr)
        latencies: dict[str, dict] = {}
        for case in cases:
            orig, rew = results[case]["orig"], results[case]["rew"]
            if args.skip_latency or {"error", "not_applicable"} & (set(orig) | set(rew)):
                continue
            if rew["breaks"] < orig["breaks"]:  # every case whose breaks dropped
                print(f"{case} latency, both trees ...", file=sys.stderr, flush=True)
                latencies[case] = run_latency(case, workdir, args)
        rows, comparison = [], {}
        for case in cases:
            row, comparison[case] = _row(case, results[case]["orig"], results[case]["rew"],
                                         latencies.get(case))
            rows.append(row)
        print(f"\nrule pack: {pack}   backend (latency): "
              f"{'skipped' if args.skip_latency else args.backend}   outputs: 'equal' = "
              f"torch.equal on every output tensor, 'allclose' = rtol {RTOL}, atol {ATOL}\n")
        _print_table(rows)
        _print_latency(latencies)
        ok = [c for c in cases if not {"error", "not_applicable"} & set(comparison[c])]
        totals = _totals(results, ok)
        before, after = totals["breaks_before"], totals["breaks_after"]
        removed = totals["percent_removed"]
        gm_removed = 100.0 * (GRAPHMEND[0] - GRAPHMEND[1]) / GRAPHMEND[0]
        print(f"\ntotal breaks: {before} -> {after} ({removed:.0f} % removed; GraphMend: "
              f"{GRAPHMEND[0]} -> {GRAPHMEND[1]}, {gm_removed:.0f} % removed)")
        traced = [c for c in ok if not any(r.get("dynamo_crash") for r in results[c].values())]
        traced_totals = _totals(results, traced)
        if len(traced) < len(ok):
            print("* Dynamo crashed on a frame (internal error); counted again with "
                  "suppress_errors=True, each suppressed crash counted as one break")
            print(f"without the {len(ok) - len(traced)} case(s) on which Dynamo crashes (what "
                  f"hf_generality.py lists as failing under Dynamo only): "
                  f"{traced_totals['breaks_before']} -> {traced_totals['breaks_after']} "
                  f"({traced_totals['percent_removed']:.0f} % removed)")
        controls = [c for c in ok if CASES[c].control and results[c]["orig"]["breaks"]]
        if controls:
            print(f"warning: control model(s) with breaks: {', '.join(controls)}")
        _print_reasons(results)
        document = {"rules": pack, "backend": None if args.skip_latency else args.backend,
                    "workdir": str(workdir), "rewrite": rewrite,
                    "totals": {"breaks_before": before, "breaks_after": after,
                               "percent_removed": removed, "graphmend": {
                                   "before": GRAPHMEND[0], "after": GRAPHMEND[1],
                                   "percent_removed": gm_removed},
                               "without_dynamo_crashes": {**traced_totals,
                                                          "cases": len(traced)}},
                    "comparison": comparison, "results": results}
        if args.json:
            args.json.write_text(json.dumps(document, indent=1))
            print(f"\nresults written to {args.json}")
        failed = any("error" in comparison[c] for c in cases)
        return 1 if failed else 0
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
