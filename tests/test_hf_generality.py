"""The pure parts of benchmarks/hf_generality.py: the dev/held-out split and the config
shrinker (no transformers needed: configs are the dicts ``to_dict()`` returns)."""

import importlib.util
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _load():
    """benchmarks/hf_generality.py as a module (it imports its sibling hf_graph_breaks)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location("hf_generality",
                                                      BENCHMARKS / "hf_generality.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["hf_generality"] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


gen = _load()


def test_split_is_deterministic_and_balanced():
    names = [f"family_{i}" for i in range(400)]
    splits = [gen.split_of(name) for name in names]
    assert splits == [gen.split_of(name) for name in names]
    assert set(splits) == {"dev", "held-out"}
    assert 160 <= splits.count("dev") <= 240
    # Fixed by the name's hash, not by the order or the company it is listed in.
    assert gen.split_of("llama") == gen.split_of("llama")
    assert gen.select_families({"a": ("forward",), "b": ("forward",)}, "all", "b") == {
        "b": ("forward",)}


def test_shrink_caps_sizes_and_nested_sub_configs():
    config = {
        "model_type": "fake_vlm", "hidden_size": 4096, "vocab_size": 5, "use_cache": True,
        "image_token_id": 32000, "eos_token_id": [50000, 1], "pad_token_id": 0,
        "text_config": {"model_type": "fake_text", "hidden_size": 4096, "num_hidden_layers": 32,
                        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
                        "intermediate_size": 11008, "vocab_size": 32064,
                        "layer_types": ["full"] * 32, "num_local_experts": 8,
                        "num_experts_per_tok": 2,
                        "vision_config": {"model_type": "fake_vision", "image_size": 336,
                                          "num_layers": 24}},
    }
    changes = gen.shrink(config)
    assert changes["hidden_size"] == gen.WIDTH
    assert "vocab_size" not in changes and "use_cache" not in changes  # never grown
    text = changes["text_config"]
    assert text["model_type"] == "fake_text"  # returned whole, to rebuild the sub-config
    assert (text["hidden_size"], text["num_hidden_layers"], text["num_attention_heads"],
            text["num_key_value_heads"], text["head_dim"]) == (64, 2, 4, 2, 16)
    assert text["hidden_size"] == text["num_attention_heads"] * text["head_dim"]
    assert text["layer_types"] == ["full", "full"]
    assert (text["num_local_experts"], text["num_experts_per_tok"]) == (4, 2)
    assert text["vision_config"]["image_size"] == gen.IMAGE
    assert text["vision_config"]["num_layers"] == gen.LAYERS
    # Special ids move below the vocabulary, distinct ones to distinct ids.
    assert changes["image_token_id"] < gen.VOCAB and changes["eos_token_id"][1] == 1
    assert changes["eos_token_id"][0] < gen.VOCAB
    assert changes["eos_token_id"][0] != changes["image_token_id"]
    shrunk = {**config, **changes}
    assert gen.special_ids(shrunk) == {0, 1, changes["image_token_id"],
                                       changes["eos_token_id"][0]}
