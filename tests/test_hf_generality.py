"""The pure parts of benchmarks/hf_generality.py: the dev/held-out split and the config
shrinker (no transformers needed: configs are the dicts ``to_dict()`` returns)."""

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load_benchmark(name: str):
    """benchmarks/NAME.py as the module NAME (it imports its siblings hf_workers, ...: the
    folder is on the path while it loads; dataclasses look their module up in sys.modules)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


gen = load_benchmark("hf_generality")
cfg = gen.fam.cfg  # the config shrinker (hf_configs.py)


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
    changes = cfg.shrink(config)
    assert changes["hidden_size"] == cfg.WIDTH
    assert "vocab_size" not in changes and "use_cache" not in changes  # never grown
    text = changes["text_config"]
    assert text["model_type"] == "fake_text"  # returned whole, to rebuild the sub-config
    assert (text["hidden_size"], text["num_hidden_layers"], text["num_attention_heads"],
            text["num_key_value_heads"], text["head_dim"]) == (64, 2, 4, 2, 16)
    assert text["hidden_size"] == text["num_attention_heads"] * text["head_dim"]
    assert text["layer_types"] == ["full", "full"]
    assert (text["num_local_experts"], text["num_experts_per_tok"]) == (4, 2)
    # Other spellings of the top-k and of the expert groups (Kimi-Linear, Bailing, ERNIE-4.5):
    # 8 of 256 experts in 8 groups would be 8 of 4 experts in groups of none.
    other = cfg.shrink({"num_experts": 256, "num_experts_per_token": 8, "moe_k": 6,
                        "num_expert_group": 8, "topk_group": 4})
    assert other == {"num_experts": 4, "num_experts_per_token": 2, "moe_k": 2,
                     "num_expert_group": 1, "topk_group": 1}
    # Gemma-3's image tokens pool the patch grid: 2 x 2 of a 64 px image's 4 x 4.
    assert cfg.shrink({"mm_tokens_per_image": 256})["mm_tokens_per_image"] == 4
    assert text["vision_config"]["image_size"] == cfg.IMAGE
    assert text["vision_config"]["num_layers"] == cfg.LAYERS
    # Special ids move below the vocabulary, distinct ones to distinct ids.
    assert changes["image_token_id"] < cfg.VOCAB and changes["eos_token_id"][1] == 1
    assert changes["eos_token_id"][0] < cfg.VOCAB
    assert changes["eos_token_id"][0] != changes["image_token_id"]
    shrunk = {**config, **changes}
    assert gen.fam.hfi.special_ids(shrunk) == {0, 1, changes["image_token_id"],
                                       changes["eos_token_id"][0]}


# --------------------------------------------------------------------------------------------
# Latency: which cases are timed, the geometric means, the CLI wiring (no transformers)
# --------------------------------------------------------------------------------------------

def _report():
    """A summarize()-shaped report: breaks before/after of the breaking cases."""
    return {"breaking": {"a:forward": {"breaks": 5, "after": 0},
                         "b:decode": {"breaks": 9, "after": 0},
                         "c:forward": {"breaks": 7, "after": 2},
                         "d:forward": {"breaks": 3, "after": 3},      # nothing removed
                         "e:forward": {"breaks": 4},                  # rewritten tree failed
                         "f:forward": {"breaks": 20, "after": 1},     # outputs differ
                         "g:forward": {"breaks": 6, "after": 1}},
            "mismatches": {"f:forward": {"verdict": "DIFFERENT"}}}


def test_latency_cases_most_removed_first_ties_by_name_and_capped():
    report = _report()
    assert gen.latency_cases(report) == ["b:decode", "a:forward", "c:forward", "g:forward"]
    assert gen.latency_cases(report, 2) == ["b:decode", "a:forward"]
    assert gen.latency_cases(report, 0) == []
    assert gen.latency_cases({"breaking": {}, "mismatches": {}}) == []


def _timing(steady_before, steady_after, cold_before=None, cold_after=None):
    trees = {"orig": {"median_s": steady_before}, "rew": {"median_s": steady_after}}
    if cold_before is not None:
        trees["orig"]["cold_s"], trees["rew"]["cold_s"] = cold_before, cold_after
    return trees


def test_latency_means_are_geometric_and_skip_failures():
    latencies = {"a": _timing(0.010, 0.005, 40.0, 20.0), "b": _timing(0.002, 0.004, 10.0, 20.0),
                 "c": _timing(0.001, 0.0005), "d": {"error": "worker exited 1"}}
    means = gen.latency_means(latencies)
    assert means["cases"] == 3
    assert abs(means["steady"] - (0.5 * 2.0 * 0.5) ** (1 / 3)) < 1e-12
    assert abs(means["cold"] - 1.0) < 1e-12  # over a and b only: c has no cold start
    assert gen.latency_means({"d": {"error": "x"}}) == {"cases": 0, "steady": None,
                                                       "cold": None}
    rows = gen.latency_rows(latencies, {"breaking": {c: {"breaks": 3, "after": 0}
                                                     for c in latencies}})
    assert rows[0] == ["a", "3 -> 0", "10.00", "5.00", "0.50", "40.00", "20.00", "0.50"]
    assert rows[2][5:] == ["-", "-", "-"] and rows[3][2:] == ["ERR"] * 6


def test_cli_latency_options_and_worker_jobs(monkeypatch):
    seen = {}
    monkeypatch.setattr(gen, "run", lambda args: seen.setdefault("args", args) and 0)
    gen.main(["--families", "olmoe", "--backend", "aot_eager", "--device", "cuda",
              "--repeats", "7", "--cold-repeats", "2", "--threads", "3", "--latency-cases", "4",
              "--reuse-trees", "--reuse-records"])
    args = seen["args"]
    assert (args.backend, args.device, args.repeats, args.cold_repeats, args.threads,
            args.latency_cases, args.skip_latency, args.reuse_records) == (
        "aot_eager", "cuda", 7, 2, 3, 4, False, True)
    seen.clear()
    gen.main([])
    args = seen["args"]
    assert (args.backend, args.device, args.repeats, args.cold_repeats, args.latency_cases,
            args.skip_latency) == ("inductor", "cpu", gen.hfw.REPEATS, 1, None, False)
    # The "latency" and "cold" jobs go to hf_workers' latency workers with this script's builder.
    calls = []
    monkeypatch.setattr(gen.hfw, "run_latency_worker",
                        lambda spec, build: calls.append(("latency", build)) or {})
    monkeypatch.setattr(gen.hfw, "run_cold_worker",
                        lambda spec, build: calls.append(("cold", build)) or {})
    gen.WORKER_JOBS["latency"]({})
    gen.WORKER_JOBS["cold"]({})
    assert calls == [("latency", gen.fam.build_case), ("cold", gen.fam.build_case)]
    assert gen.WORKER_JOBS["count"] is gen.fam.run_worker


def _fake_run(monkeypatch, tmp_path, extra):
    """gen.run() on a fake library of four one-variant families: no trees, no workers; the
    original and rewritten records and the latency runs are canned. Returns (calls, json)."""
    import json

    import torch

    family_breaks = {"a": (4, 0), "b": (6, 1), "c": (0, 0), "d": (2, 2)}
    outputs = tmp_path / "out.pt"
    torch.save([torch.ones(2)], outputs)
    library = gen.fam.Library("json", lambda package: {f: ("forward",) for f in family_breaks},
                          lambda *a: None, lambda package, family: f"models/{family}/")
    monkeypatch.setattr(gen.fam, "LIBRARIES", {"transformers": library})
    monkeypatch.setattr(gen, "_version", lambda package: "0.0")
    monkeypatch.setattr(gen.hf_trees, "_check_pack", lambda rules: "pack.yaml")
    monkeypatch.setattr(gen.hf_trees, "prepare_trees", lambda *a: {"reused": True})

    def run_all(tree, cases, workdir, args):
        index = 0 if tree == "orig" else 1
        # With the switches every case breaks once less (not below zero).
        fewer = 1 if args.dynamo_config else 0
        return {c: {"breaks": max(family_breaks[c.split(":")[0]][index] - fewer, 0),
                    "outputs_file": str(outputs)} for c in cases}

    monkeypatch.setattr(gen, "_run_all", run_all)
    calls = []

    def run_latency(case, workdir, args, script, package):
        calls.append((case, script, package, args.backend, args.device))
        return _timing(0.004, 0.002, 30.0, 15.0)

    monkeypatch.setattr(gen.hfw, "run_latency", run_latency)
    out = tmp_path / "r.json"
    gen.main(["--workdir", str(tmp_path / "w"), "--json", str(out), *extra])
    return calls, json.loads(out.read_text())


def test_run_times_the_cases_whose_breaks_dropped(monkeypatch, tmp_path, capsys):
    calls, document = _fake_run(monkeypatch, tmp_path, ["--device", "cuda", "--modes", "default"])
    assert [c[0] for c in calls] == ["b:forward", "a:forward"]  # 5 removed, then 4
    assert calls[0][1:] == (gen.__file__, "json", "inductor", "cuda")
    latency = document["modes"]["default"]["latency"]
    assert (latency["device"], latency["geomean_steady"], latency["geomean_cold"]) == (
        "cuda", 0.5, 0.5)
    assert latency["cases"]["b:forward"]["breaks_before"] == 6
    assert latency["cases"]["b:forward"]["breaks_after"] == 1
    printed = capsys.readouterr().out
    assert "b:forward | 6 -> 1" in printed
    assert "geometric mean of after/before over 2 cases: steady 0.50, cold 0.50" in printed

    calls, document = _fake_run(monkeypatch, tmp_path, ["--latency-cases", "1",
                                                         "--modes", "default"])
    assert [c[0] for c in calls] == ["b:forward"]
    calls, document = _fake_run(monkeypatch, tmp_path, ["--skip-latency"])
    assert calls == [] and all(m["latency"] is None for m in document["modes"].values())


def test_both_modes_are_measured_and_printed_per_half(monkeypatch, tmp_path, capsys):
    _, document = _fake_run(monkeypatch, tmp_path, ["--skip-latency"])
    modes = document["modes"]
    assert list(modes) == ["default", "switches"]
    assert modes["default"]["dynamo_config"] == {}
    # Without --dynamo-config the switches are those of eqrewrite run --dynamic-sizes.
    assert modes["switches"]["dynamo_config"] == {"capture_scalar_outputs": True,
                                                 "capture_dynamic_output_shape_ops": True}
    default = modes["default"]["report"]["per_split"]
    switched = modes["switches"]["report"]["per_split"]
    assert sum(t["before"] for t in default.values()) == 12  # a 4, b 6, d 2
    assert sum(t["before"] for t in switched.values()) == 9  # a 3, b 5, d 1
    printed = capsys.readouterr().out
    assert "===== mode: default =====" in printed
    assert "per half and mode" in printed and "switches" in printed.split("per half")[1]
    _, document = _fake_run(monkeypatch, tmp_path, [
        "--skip-latency", "--modes", "switches", "--dynamo-config", "capture_scalar_outputs=true"])
    assert list(document["modes"]) == ["switches"]
    assert document["modes"]["switches"]["dynamo_config"] == {"capture_scalar_outputs": True}


def test_modes_option_refuses_unknown_modes():
    import argparse

    import pytest

    assert gen.hfw._modes("switches, default") == ("switches", "default")
    with pytest.raises(argparse.ArgumentTypeError, match="modes are default, switches"):
        gen.hfw._modes("default,fast")


def test_layer_prefix_keeps_every_kind_of_layer():
    hfi = gen.fam.hfi
    hybrid = {"num_hidden_layers": 12, "layer_types": ["linear"] * 3 + ["full"] + ["linear"] * 8}
    assert hfi.layer_prefix(hybrid, 2) == 4  # the first full-attention layer is the fourth
    assert hfi.layer_prefix({"num_hidden_layers": 4, "layer_types": ["full"] * 4}, 2) == 2
    late = {"num_hidden_layers": 40, "layer_types": ["linear"] * 30 + ["full"] * 10}
    assert hfi.layer_prefix(late, 2) == 8  # capped: a tiny model stays tiny
    changes = cfg.shrink(hybrid)
    assert changes["num_hidden_layers"] == 4 and changes["layer_types"] == hybrid[
        "layer_types"][:4]
    per_layer = {"num_hidden_layers": 30, "per_layer_config": {"0": 1, "5": 2, "11": 3},
                 "id2label": {"0": "a", "1": "b", "7": "c"}}
    changes = cfg.shrink(per_layer)
    assert changes["per_layer_config"] == {"0": 1}  # keyed by layer: cut with the layers
    assert "id2label" not in changes  # keyed by label, not by layer


def test_multimodal_rotary_sections_scale_to_the_shrunk_head():
    config = {"hidden_size": 4096, "num_attention_heads": 32,
              "rope_parameters": {"rope_type": "default", "mrope_section": [16, 24, 24]}}
    assert cfg.shrink(config)["rope_parameters"]["mrope_section"] == [2, 3, 3]
    absent = {"hidden_size": 4096, "rope_parameters": {"rope_type": "default"}}
    assert "rope_parameters" not in cfg.shrink(absent)
    assert cfg.shrink(absent, mrope=True)["rope_parameters"]["mrope_section"] == [2, 3, 3]
    assert sum(cfg._scaled([1, 1, 1], cfg.HEAD_DIM // 2)) == cfg.HEAD_DIM // 2


def test_placeholder_rows_frame_the_features_and_stay_rectangular():
    hfi = gen.fam.hfi
    text = [[5, 6, 7], [8, 9, 10]]
    assert hfi.placeholder_rows(text, 4, 99, 97, 98) == [[97, 99, 99, 98, 5, 6, 7],
                                                         [97, 99, 99, 98, 8, 9, 10]]
    assert hfi.placeholder_rows(text, 2, 99, None, None) == [[99, 5, 6, 7], [99, 8, 9, 10]]
    # An odd count goes to the first row; the other is padded with its own text.
    rows = hfi.placeholder_rows(text, 3, 99, None, None)
    assert rows[0] == [99, 99, 99, 5, 6, 7] and len(rows[1]) == 6
    assert 99 not in rows[1] and rows[1][:3] == [8, 9, 10]


def test_a_second_modalitys_placeholders_never_pad_with_the_firsts():
    hfi = gen.fam.hfi
    # Rows holding an image's run (99) already; 3 video tokens (88) go to the first row, and
    # the second row is padded with its text only, never with the image's tokens.
    rows = hfi.placeholder_rows([[99, 99, 5, 6], [99, 99, 8, 9]], 3, 88, None, None,
                                avoid={99})
    assert rows[0] == [88, 88, 88, 99, 99, 5, 6]
    assert rows[1][:4] == [99, 99, 8, 9] and set(rows[1][4:]) <= {8, 9}
    assert sum(row.count(99) for row in rows) == 4  # as many image tokens as before


class _ImageAndVideo:
    """A Qwen-style model taking images and videos as flattened patches with their grids,
    each placeholder run counted by its get_*_features (one feature per 4 patches)."""

    main_input_name = "input_ids"

    def __init__(self, token_types: bool = True):
        from types import SimpleNamespace

        self.config = SimpleNamespace(
            image_token_id=120, video_token_id=121, vision_start_token_id=122,
            vision_end_token_id=123, patch_size=2, temporal_patch_size=2,
            spatial_merge_size=2, temporal_merge_size=2, num_channels=3,
            to_dict=lambda: {"image_token_id": 120, "video_token_id": 121,
                             "vision_start_token_id": 122, "vision_end_token_id": 123})

    def forward(self, input_ids, attention_mask=None, pixel_values=None, image_grid_thw=None,
                pixel_values_videos=None, video_grid_thw=None, video_merge_sizes=None,
                second_per_grid_ts=None, mm_token_type_ids=None):
        return input_ids

    def get_image_features(self, pixel_values, image_grid_thw):
        return pixel_values[: len(pixel_values) // 4]

    def get_video_features(self, pixel_values_videos, video_grid_thw):
        return pixel_values_videos[: len(pixel_values_videos) // 4]


def test_a_model_taking_images_and_video_gets_both_first_each_counted_apart():
    hfi = gen.fam.hfi
    model = _ImageAndVideo()
    found = hfi.candidates(model, model.config)
    labels = [label for label, _ in found]
    together = labels.index("input_ids+image")  # each modality alone follows, then text
    assert together > 0 and set(labels[:together]) == {"input_ids+image+video"}
    assert {"input_ids+video", "text only"} <= set(labels[together:])
    kwargs = found[0][1]()
    assert hfi.modalities_given(model, kwargs) == ["image", "video"]
    ids = kwargs["input_ids"]
    image = len(kwargs["pixel_values"]) // 4
    video = len(kwargs["pixel_values_videos"]) // 4
    assert int((ids == 120).sum()) == image and int((ids == 121).sum()) == video
    # A video holds as many temporal patches as the tower merges, a second apart, and its
    # merge sizes under the name the model gives them.
    assert kwargs["video_grid_thw"][:, 0].tolist() == [2, 2]
    assert kwargs["image_grid_thw"][:, 0].tolist() == [1, 1]
    assert kwargs["second_per_grid_ts"].tolist() == [1.0, 1.0]
    assert kwargs["video_merge_sizes"].tolist() == [2, 2]
    # The token types mark both modalities: 1 image, 2 video, 0 text.
    types = kwargs["mm_token_type_ids"]
    assert bool(((types == 1) == (ids == 120)).all()) and bool(((types == 2) == (ids == 121)).all())


def test_a_tower_whose_family_has_a_recipe_lends_its_inputs_after_the_generic_ones(
        monkeypatch):
    # A speech model whose encoder's own family has a recipe (Qwen3-ASR's, Fun-ASR-Nano's):
    # its inputs, with an audio token per feature, come after the generic audio candidates
    # and before text alone; a tower whose inputs the forward does not take is refused.
    from types import SimpleNamespace

    import torch

    fam, recipes = gen.fam, gen.fam.recipes

    class Speech:
        main_input_name = "input_ids"

        def forward(self, input_ids, attention_mask=None, input_features=None,
                    input_features_mask=None):
            return input_ids

        def get_audio_features(self, input_features, input_features_mask):
            return input_features[:, ::4]  # a feature per 4 frames

    def tower_inputs(model, config):
        return {"input_features": torch.zeros(2, 12, config.width),
                "input_features_mask": torch.ones(2, 12), "chunk_lengths": torch.ones(2)}

    monkeypatch.setitem(recipes.RECIPES, "speech_tower", recipes.Recipe("test",
                                                                        inputs=tower_inputs))
    config = SimpleNamespace(audio_config=SimpleNamespace(model_type="speech_tower", width=5),
                             audio_token_id=120, to_dict=lambda: {"audio_token_id": 120})
    model = Speech()
    labels = [label for label, _ in fam._tries("speech", model, config, "forward")]
    tower = labels.index("input_ids+audio (its tower's recipe)")
    assert labels[tower - 1] == "input_ids+audio" and labels[tower + 1] == "text only"
    kwargs = dict(fam._tries("speech", model, config, "forward"))[labels[tower]]()
    assert "chunk_lengths" not in kwargs  # what the forward does not take is left out
    assert int((kwargs["input_ids"] == 120).sum()) == 2 * 3
    assert kwargs["input_features"].shape == (2, 12, 5)

    class Other(Speech):
        def forward(self, input_ids, attention_mask=None, input_values=None):
            return input_ids

    refused = dict(recipes.tower_candidates(Other(), config))
    with pytest.raises(ValueError, match="takes none of the audio_config tower"):
        refused["input_ids+audio (its tower's recipe)"]()


def test_log_mels_come_with_the_raw_audios_padding_mask_where_the_forward_takes_one():
    from types import SimpleNamespace

    hfi = gen.fam.hfi
    config = SimpleNamespace(num_mel_bins=8, max_source_positions=5, hop_length=10)
    found = hfi.audio_candidates(config, {"input_features", "padding_mask"}, "input_features")
    assert found[0]["input_features"].shape == (2, 8, 10)
    assert found[0]["padding_mask"].shape == (2, 100)  # a hop per frame
    raw = hfi.audio_candidates(config, {"input_values", "padding_mask"}, "input_values")
    assert all("padding_mask" not in candidate for candidate in raw)  # a codec's own mask


def test_placeholders_count_the_features_or_else_every_row_of_the_modality_tower():
    # (the model's get_<modality>_features, its encoder's, or its <modality>_tower's rows)
    from types import SimpleNamespace

    import torch

    hfi = gen.fam.hfi

    class Tower(torch.nn.Module):  # output rows: half the frames, one pooled row per sample
        def forward(self, input_features):
            rows = input_features.transpose(1, 2)[:, ::2]
            return SimpleNamespace(last_hidden_state=rows, pooler_output=rows.mean(1))

    class Inline(torch.nn.Module):  # runs its tower inside forward (Qwen2-Audio 5.x)
        def __init__(self):
            super().__init__()
            self.audio_tower = Tower()

    class WithMethod(Inline):
        def get_audio_features(self, input_features):
            return input_features[:, 0]  # (batch, frames): one vector per sample

    class EncoderDecoder(torch.nn.Module):  # the method on its encoder (T5Gemma-2)
        def __init__(self):
            super().__init__()
            self.encoder = WithMethod()

        def get_encoder(self):
            return self.encoder

    class Head(torch.nn.Module):  # a head that does not forward the method (Gemma-4's)
        def __init__(self):
            super().__init__()
            self.model = WithMethod()

    extra = {"input_features": torch.zeros(2, 8, 10), "feature_attention_mask": torch.ones(2, 10)}
    assert hfi.feature_count(Head(), "audio", extra) == 2  # its inner model's method
    assert hfi.feature_count(Inline(), "audio", extra) == 2 * 5  # not the 2 pooled rows
    assert hfi.feature_count(WithMethod(), "audio", extra) == 2  # the method wins
    assert hfi.feature_count(EncoderDecoder(), "audio", extra) == 2
    assert hfi.feature_count(torch.nn.Module(), "audio", extra) is None


def test_tied_widths_multi_head_attention_and_timm_backbones():
    config = {"hidden_size": 512, "num_attention_heads": 8, "num_key_value_heads": 8,
              "codebook_dim": 512, "head_dim": 64, "kernel_dim": 7, "upsample_groups": 512,
              "audio_config": {"model_type": "fake_audio", "hidden_size": 1024},
              "head_config": {"model_type": "fake_head", "audio_hidden_size": 1024,
                              "num_key_value_heads": 2, "num_attention_heads": 8},
              "backbone_config": {"model_type": "timm_backbone", "backbone": "resnet50",
                                  "out_indices": [1, 2, 3, 4]}}
    changes = cfg.shrink(config)
    assert changes["codebook_dim"] == cfg.WIDTH  # equal to a width: tied to it
    assert changes["upsample_groups"] == cfg.WIDTH  # a depthwise convolution's groups
    assert "kernel_dim" not in changes  # not a width
    assert changes["head_config"]["audio_hidden_size"] == cfg.WIDTH  # a sibling's width
    assert changes["num_key_value_heads"] == changes["num_attention_heads"] == cfg.HEADS
    assert changes["head_config"]["num_key_value_heads"] == cfg.KV_HEADS  # grouped stays so
    backbone = changes["backbone_config"]
    assert backbone["model_type"] == "resnet" and backbone["out_indices"] == [1, 2, 3, 4]


def test_backbone_stages_heads_per_stage_and_partial_rotary():
    swin = {"embed_dim": 96, "num_layers": 4, "depths": [2, 2, 6, 2], "num_heads": [3, 6, 12, 24]}
    changes = cfg.shrink(swin)
    # Stages cut with the layers, and every stage's heads divide every width.
    assert changes["depths"] == [2, 2] and changes["num_heads"] == [cfg.HEADS] * 2
    backbone = {"backbone_config": {
        "model_type": "fake_backbone", "hidden_size": 768, "num_hidden_layers": 12,
        "stage_names": ["stem"] + [f"stage{i}" for i in range(1, 13)],
        "out_features": ["stage12"], "out_indices": [12]}}
    inner = cfg.shrink(backbone)["backbone_config"]
    assert inner["hidden_size"] == cfg.WIDTH
    assert inner["num_hidden_layers"] == 12  # its output stage must still exist
    partial = {"hidden_size": 4096, "head_dim": 128,
               "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.5,
                                   "mrope_section": [8, 12, 12]}}
    section = cfg.shrink(partial)["rope_parameters"]["mrope_section"]
    assert sum(section) == 128 // 4  # half of the rotated half of the (kept) head


def test_sizes_left_unset_get_the_tiny_values_where_safe():
    moe = {"hidden_size": 4096, "num_attention_heads": 32, "head_dim": None,
           "n_routed_experts": 64, "num_experts_per_tok": None}
    changes = cfg.shrink(moe)
    assert changes["head_dim"] == cfg.HEAD_DIM == cfg.WIDTH // cfg.HEADS
    assert changes["num_experts_per_tok"] == cfg.TOP_K
    unset_kv = {"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": None}
    assert cfg.shrink(unset_kv)["num_key_value_heads"] == cfg.HEADS  # as many as queries
    dense = {"hidden_size": 4096, "num_experts": None, "num_experts_per_tok": None}
    # No experts set: None may mean a dense model; nothing is invented.
    assert "num_experts" not in cfg.shrink(dense)
    assert "num_experts_per_tok" not in cfg.shrink(dense)


def test_without_sizes_only_layers_vocabulary_and_token_ids_shrink():
    config = {"hidden_size": 768, "num_attention_heads": 12, "head_dim": 64,
              "intermediate_size": 3072, "num_hidden_layers": 12, "vocab_size": 30522,
              "pad_token_id": 30000, "num_queries": 300, "image_size": 224,
              "use_timm_backbone": True,
              "vision_config": {"model_type": "fake_vision", "hidden_size": 768,
                                "num_hidden_layers": 12, "layer_types": ["a"] * 12}}
    changes = cfg.shrink(config, sizes=False)
    assert changes["num_hidden_layers"] == cfg.LAYERS and changes["vocab_size"] == cfg.VOCAB
    assert changes["pad_token_id"] < cfg.VOCAB and changes["use_timm_backbone"] is False
    for kept in ("hidden_size", "num_attention_heads", "head_dim", "intermediate_size",
                 "image_size"):
        assert kept not in changes
    assert changes["num_queries"] == cfg.QUERIES  # outputs, not a width
    vision = changes["vision_config"]
    assert vision["hidden_size"] == 768 and vision["num_hidden_layers"] == cfg.LAYERS
    assert vision["layer_types"] == ["a"] * cfg.LAYERS
    # With sizes too (the first rungs).
    assert cfg.shrink(config)["num_queries"] == cfg.QUERIES


def test_default_widths_are_built_only_under_the_parameter_limit():
    import torch

    class Auto:
        @staticmethod
        def from_config(config, **options):
            return torch.nn.Linear(config, config)

    fam = gen.fam
    fam._check_default_sized(Auto, 100, {})  # 10,100 parameters
    big = int(fam.DEFAULT_SIZED_LIMIT ** 0.5) + 1
    with pytest.raises(ValueError, match="M parameters, over the"):
        fam._check_default_sized(Auto, big, {})  # counted on the meta device: no memory


def test_the_report_lists_each_kind_of_unmeasured_case_apart_with_its_reason():
    orig = {
        "a:forward": {"skipped": "ValueError: no generic shape"},
        "b:forward": {"skipped": f"{gen.fam.DYNAMO_ONLY}: RuntimeError: shape mismatch"},
        "c:decode": {"not_applicable": "the model returns no key/value cache"},
        "d:forward": {"error": "timeout", "stderr_tail": "x\nTimeoutError: 300 s\n"},
        "e:forward": {"breaks": 0, "inputs": "text only", "modalities": ["image"]},
        "f:forward": {"breaks": 0, "inputs": "input_ids+image", "modalities": ["image", "video"]},
        # A recipe's label names no modality: what its inputs held does.
        "g:forward": {"breaks": 0, "inputs": "recipe", "modalities": ["audio", "image"],
                      "modalities_given": ["audio", "image"]},
        "h:forward": {"breaks": 0, "inputs": "recipe", "modalities": ["audio", "image"],
                      "modalities_given": ["image"]},
    }
    report = gen.summarize(list(orig), orig, {})
    assert report["skipped"] == {"a:forward": "ValueError: no generic shape"}
    assert list(report["dynamo_only"]) == ["b:forward"]
    assert report["not_applicable"] == {"c:decode": "the model returns no key/value cache"}
    assert report["errors"] == {"d:forward": "timeout: TimeoutError: 300 s"}
    # Run on text alone though it takes images; one modality fed is enough.
    assert list(report["without_modality"]) == ["e:forward", "h:forward"]
    assert report["without_modality"]["h:forward"] == "ran as 'recipe'; takes ['audio']"
    assert sum(t["cases"] for t in report["per_split"].values()) == 4


# --------------------------------------------------------------------------------------------
# diffusers: the shrinker's diffusers rules, families, default configs, input plans (no
# diffusers, no torch: fake classes and signatures)
# --------------------------------------------------------------------------------------------

hfd = gen.fam.hfd  # hf_diffusers.py


def test_diffusers_is_a_library_of_the_driver(monkeypatch):
    assert gen.fam.LIBRARIES["diffusers"].package == "diffusers"
    seen = {}
    monkeypatch.setattr(gen, "run", lambda args: seen.setdefault("args", args) and 0)
    gen.main(["--library", "diffusers", "--modes", "default,switches"])
    assert seen["args"].library == "diffusers"


def test_shrink_diffusers_unet_ladders_per_block_counts_and_unset_sizes():
    unet = {"sample_size": 64, "in_channels": 4, "block_out_channels": (320, 640, 1280, 1280),
            "layers_per_block": 2, "transformer_layers_per_block": 1, "norm_num_groups": 32,
            "cross_attention_dim": 768, "attention_head_dim": 8, "num_attention_heads": None,
            "down_block_types": ("CrossAttnDownBlock2D",) * 4, "encoder_hid_dim": None,
            "decoder_layers_per_block": (3, 3, 3), "dim_mult": [1, 2, 4, 4]}
    changes = cfg.shrink_diffusers(unet)
    # The smallest rung becomes CHANNELS, the others keep their ratio (multiples of it).
    assert changes["block_out_channels"] == (64, 128, 256, 256)
    assert changes["layers_per_block"] == 1 and changes["decoder_layers_per_block"] == (1, 1, 1)
    assert changes["cross_attention_dim"] == cfg.WIDTH and changes["sample_size"] == cfg.SIDE
    # A head count named attention_head_dim (8 <= HEAD_DIM), multipliers, types: untouched.
    for key in ("attention_head_dim", "dim_mult", "down_block_types", "norm_num_groups",
                "in_channels", "transformer_layers_per_block", "encoder_hid_dim"):
        assert key not in changes
    # A generic model whose caller sets its sizes: the code reads them, the tiny values; an
    # unset patch size only on the second try (unset may mean "no patches").
    generic = {"in_channels": None, "patch_size": None, "sample_size": None,
               "cross_attention_dim": None, "num_layers": 1}
    assert cfg.shrink_diffusers(generic) == {"in_channels": 32, "sample_size": cfg.SIDE}
    assert cfg.shrink_diffusers(generic, patch=True)["patch_size"] == cfg.UNSET_PATCH
    # Ladders whose first rungs are already small: the big rungs shrink, at most 4 rungs up.
    assert cfg._ladder([16, 128, 256, 512, 1024]) == [16, 64, 64, 128, 256]
    assert cfg._ladder([16, 32]) == [16, 32] and cfg._ladder([128, 256]) == [64, 128]


def test_shrink_diffusers_heads_rotary_axes_and_tied_widths():
    flux = {"num_layers": 19, "num_single_layers": 38, "attention_head_dim": 128,
            "num_attention_heads": 24, "joint_attention_dim": 4096, "pooled_projection_dim": 768,
            "axes_dims_rope": (16, 56, 56), "in_channels": 64, "patch_size": 1,
            "caption_projection_dim": 3072, "vace_layers": [0, 5, 10], "text_len": 77,
            "guidance_embeds": False}
    changes = cfg.shrink_diffusers(flux)
    assert (changes["num_layers"], changes["num_single_layers"]) == (cfg.LAYERS, cfg.LAYERS)
    assert (changes["attention_head_dim"], changes["num_attention_heads"]) == (16, 4)
    # Rotary sizes per axis sum to the shrunk head, each even (a rotary pair per frequency).
    axes = changes["axes_dims_rope"]
    assert isinstance(axes, tuple) and sum(axes) == 16 and all(a % 2 == 0 and a for a in axes)
    # A width equal to the attention width (24 x 128) shrinks to the new one (4 x 16).
    assert changes["caption_projection_dim"] == 64
    assert changes["joint_attention_dim"] == changes["pooled_projection_dim"] == cfg.WIDTH
    assert changes["vace_layers"] == [0] and changes["text_len"] == cfg.TEXT
    assert "in_channels" not in changes and "patch_size" not in changes
    # Layers kept: counts and layer indices stay, widths still shrink.
    kept = cfg.shrink_diffusers(flux, layers=False)
    assert "num_layers" not in kept and "num_single_layers" not in kept
    assert "vace_layers" not in kept and kept["attention_head_dim"] == 16
    # The head size from the width over the heads when no key names it.
    joy = {"hidden_size": 3072, "num_attention_heads": 24, "rope_dim_list": [16, 56, 56]}
    assert cfg.head_size(joy) == 128
    assert sum(cfg.shrink_diffusers(joy)["rope_dim_list"]) == 16


def test_diffusers_families_are_every_model_class_exported():
    class Base:
        pass

    class UNet(Base):
        pass

    class Vae(Base):
        pass

    class Helper:
        pass

    namespace = {"ModelMixin": Base, "UNet2DModel": UNet, "AutoencoderKL": Vae,
                 "Helper": Helper, "_Private": UNet, "CONSTANT": 3, "Alias": UNet}
    found = hfd.model_classes(namespace, Base)
    assert list(found) == ["Alias", "AutoencoderKL", "UNet2DModel"]  # sorted, base left out


def test_diffusers_default_config_is_the_init_defaults():
    class Model:
        def __init__(self, controlnets, in_channels: int = 4, heads=(8, 8), *args, **kwargs):
            pass

    defaults, required = hfd.init_defaults(Model)
    assert defaults == {"in_channels": 4, "heads": (8, 8)} and required == ["controlnets"]


def _params(function):
    import inspect

    return dict(list(inspect.signature(function).parameters.items())[1:])


def test_diffusers_inputs_are_planned_from_the_forward_signature():
    def flux_forward(self, hidden_states, encoder_hidden_states=None, pooled_projections=None,
                     timestep=None, img_ids=None, txt_ids=None, guidance=None,
                     joint_attention_kwargs=None, return_dict=True):
        pass

    config = {"in_channels": 64, "joint_attention_dim": 64, "pooled_projection_dim": 32,
              "axes_dims_rope": (2, 6, 8), "patch_size": 1}
    params = _params(flux_forward)
    plan = hfd.plan_inputs(params, config, "tokens")
    batch, tokens = hfd.BATCH, (cfg.SIDE // 2) ** 2
    assert plan["hidden_states"] == ("randn", (batch, tokens, 64))
    assert plan["encoder_hidden_states"] == ("randn", (batch, hfd.TEXT, 64))
    assert plan["pooled_projections"] == ("randn", (batch, 32))
    assert plan["img_ids"] == ("grid", tokens, 3, 16) and plan["txt_ids"] == ("zeros", (16, 3))
    assert plan["timestep"] == ("steps", "float") and plan["guidance"][0] == "full"
    assert "joint_attention_kwargs" not in plan and "return_dict" not in plan
    # "core" leaves out the extras (guidance), "required" every optional input.
    assert "guidance" not in hfd.plan_inputs(params, config, "tokens", "core")
    assert list(hfd.plan_inputs(params, config, "image", "required")) == ["hidden_states"]

    def unet_forward(self, sample, timestep, encoder_hidden_states, controlnet_cond,
                     class_labels=None, added_time_ids=None, encoder_hidden_states_t5=None):
        pass

    config = {"in_channels": 4, "cross_attention_dim": 64, "cross_attention_dim_t5": 48,
              "projection_class_embeddings_input_dim": 192, "addition_time_embed_dim": 64}
    plan = hfd.plan_inputs(_params(unet_forward), config, "video", frames=9)
    assert plan["sample"] == ("randn", (batch, 4, 9, cfg.SIDE, cfg.SIDE))
    assert plan["controlnet_cond"] == plan["sample"] and plan["class_labels"] == ("labels",)
    assert plan["added_time_ids"] == ("randn", (batch, 3))  # 192 / 64 ids
    assert plan["encoder_hidden_states_t5"] == ("randn", (batch, hfd.TEXT, 48))
    plans = hfd.candidate_plans(_params(unet_forward), config, "UNet2DConditionModel")
    labels = [label for label, _ in plans]
    assert labels[:3] == ["image", "image, control at pixels", "image, core"]
    pixels = dict(plans)["image, control at pixels"]["controlnet_cond"]
    assert pixels == ("randn", (batch, 3, 8 * cfg.SIDE, 8 * cfg.SIDE))
    assert "image, integer steps" in labels and labels[-1].endswith("3 channels")
    assert len(labels) == len(set(labels))

    def unknown_forward(self, hidden_states, secret_tokens):
        pass

    with pytest.raises(ValueError, match="required input 'secret_tokens'"):
        hfd.candidate_plans(_params(unknown_forward), config)

    def list_forward(self, x: list[float], t, cap_feats: "list[float] | None"):
        pass

    plan = hfd.plan_inputs(_params(list_forward), {"in_channels": 16, "cap_feat_dim": 64},
                           "video")
    assert plan["x"][0] == "list" and plan["cap_feats"] == (
        "list", ("randn", (batch, hfd.TEXT, 64)))
    assert not hfd._is_list(float) and not hfd._is_list("float | list[float]")


def test_diffusers_layouts_signal_length_and_widths():
    assert hfd.layout_order("WanTransformer3DModel")[0] == ("video", hfd.FRAMES)
    assert hfd.layout_order("UNet1DModel")[0] == ("signal", 0)
    assert hfd.layout_order("AutoencoderKL") == list(hfd.LAYOUTS)
    assert hfd.signal_length({"downsampling_ratios": [2, 4, 4, 8, 8]}) == 4096
    assert hfd.signal_length({"in_channels": 2}) == hfd.SIGNAL
    config = {"cross_attention_dim": 32, "text_embed_2_dim": 24, "embedding_dim": 40,
              "image_embed_dim": 16}
    assert hfd.text_width(config) == 32
    assert hfd.text_width(config, "encoder_hidden_states_2") == 24
    assert hfd.embedding_width(config, "image_embeds") == 16
    assert hfd.embedding_width(config, "proj_embedding") == 40
    assert hfd.main_channels({"in_channels": 3, "latent_channels": 16}, "z") == 16
    assert hfd.main_channels({"in_channels": 3, "latent_channels": 16}, "sample") == 3


def test_recipes_merge_sub_configs_key_by_key_and_come_before_the_generic_inputs():
    recipes = gen.fam.recipes
    assert recipes.merged({"a": 1, "vision": {"x": 1, "y": 2}}, {"vision": {"y": 3}, "b": [1]}
                          ) == {"a": 1, "vision": {"x": 1, "y": 3}, "b": [1]}
    # A recipe's sub-config keys merge into the shrunk sub-config, or into the default's
    # where the shrinker left it alone: never a sub-config of the recipe's keys alone.
    recipe = recipes.Recipe("why", config={"vision": {"y": 3}, "top": 5},
                            inputs=lambda model, config: {"x": config})
    default = {"vision": {"model_type": "v", "x": 1, "y": 2}, "top": 1, "other": 7}
    try:
        recipes.RECIPES["fam_x"] = recipe
        assert recipes.configured("fam_x", default, {}) == {
            "vision": {"model_type": "v", "x": 1, "y": 3}, "top": 5}
        assert recipes.configured("fam_x", default, {"vision": {"model_type": "v", "x": 0,
                                                                "y": 2}, "other": 3}) == {
            "vision": {"model_type": "v", "x": 0, "y": 3}, "top": 5, "other": 3}
        [(label, make)] = recipes.candidates("fam_x", None, "cfg")
        assert (label, make()) == ("recipe", {"x": "cfg"})
    finally:
        del recipes.RECIPES["fam_x"]
    assert recipes.configured("fam_x", default, {"top": 2}) == {"top": 2}
    assert recipes.candidates("fam_x", None, None) == []
    # Every recipe says why, and a family has at most one.
    assert all(r.why.strip() for r in recipes.RECIPES.values())


def test_a_family_with_recipe_inputs_builds_where_no_generic_shape_exists(monkeypatch):
    def generic(model, config):
        raise ValueError("main input 'x': no generic shape")

    monkeypatch.setattr(gen.fam.hfi, "candidates", generic)
    monkeypatch.setitem(gen.fam.recipes.RECIPES, "fam_y", gen.fam.recipes.Recipe(
        "why", inputs=lambda model, config: {"x": 1}))

    class Model:
        def forward(self, x):
            return x

    [(label, make)] = gen.fam._tries("fam_y", Model(), None, "forward")
    assert (label, make()) == ("recipe", {"x": 1})
    with pytest.raises(ValueError, match="no generic shape"):
        gen.fam._tries("fam_z", Model(), None, "forward")


def test_a_family_named_by_two_recipe_groups_is_an_error():
    from types import SimpleNamespace

    recipes = gen.fam.recipes
    one = SimpleNamespace(__name__="one", RECIPES={"a": recipes.Recipe("x")})
    two = SimpleNamespace(__name__="two", RECIPES={"a": recipes.Recipe("y")})
    assert list(recipes.collect([one])) == ["a"]
    with pytest.raises(ValueError, match="'a' has two recipes"):
        recipes.collect([one, two])


def test_token_ids_stay_within_a_vocabulary_smaller_than_the_tiny_one():
    from types import SimpleNamespace

    hfi = gen.fam.hfi
    small = SimpleNamespace(vocab_size=33, to_dict=lambda: {"pad_token_id": 1})
    [candidate] = hfi.main_candidates("input_ids", small, set())
    ids = candidate["input_ids"]
    assert int(ids.max()) < 33 and 1 not in ids.tolist()[0] + ids.tolist()[1]
    large = SimpleNamespace(vocab_size=50000, to_dict=lambda: {})
    assert int(hfi.main_candidates("input_ids", large, set())[0]["input_ids"].max()) >= 33


def test_a_model_declaring_a_sub_configs_class_is_built_from_that_sub_config():
    class Decoder:
        pass

    class Family:
        sub_configs = {"text_encoder": object, "decoder": Decoder}

        def __init__(self):
            self.text_encoder, self.decoder = object(), Decoder()

    class Model:
        config_class = Decoder

        @classmethod
        def _from_config(cls, config, **options):
            return ("built", config)

    class Auto:
        _model_mapping = {Family: Model}

        @staticmethod
        def from_config(config, **options):
            return ("auto", config)

    family = Family()
    build, config = gen.fam._model_builder(None, Auto, family)
    assert config is family.decoder and build(config) == ("built", family.decoder)
    Model.config_class = Family  # the usual case: the auto class builds from the family's
    build, config = gen.fam._model_builder(None, Auto, family)
    assert config is family and build(config) == ("auto", family)


def test_a_config_the_auto_class_does_not_know_is_built_by_its_model_types_class():
    from types import SimpleNamespace

    class Mapping(dict):  # the auto class's lazy mapping: config classes, and names by type
        _model_mapping = {"evolla": "EvollaModel"}

    class Model:
        @classmethod
        def _from_config(cls, config, **options):
            return ("built", config)

    auto = SimpleNamespace(_model_mapping=Mapping(), from_config=None)
    config = SimpleNamespace(model_type="evolla")
    build, found = gen.fam._model_builder(SimpleNamespace(EvollaModel=Model), auto, config)
    assert found is config and build(config) == ("built", config)
    unnamed = SimpleNamespace(model_type="unknown")  # the auto class raises its own error
    assert gen.fam._model_builder(None, auto, unnamed) == (None, unnamed)


def test_a_model_with_no_forward_of_its_own_is_not_applicable():
    import torch

    class GenerateOnly(torch.nn.Module):
        pass

    with pytest.raises(gen.fam.hfm.NotApplicable, match="GenerateOnly has no forward"):
        gen.fam._check_callable(GenerateOnly())
    gen.fam._check_callable(torch.nn.Linear(1, 1))


def test_a_model_naming_two_main_inputs_gets_candidates_for_the_first():
    from types import SimpleNamespace

    class TwoMain:
        main_input_name = ["pixel_values", "task_inputs"]

        def forward(self, pixel_values, task_inputs, pixel_mask=None):
            return pixel_values

    config = SimpleNamespace(to_dict=lambda: {})
    found = gen.fam.hfi.candidates(TwoMain(), config)
    assert found and all(label.startswith("pixel_values") for label, _ in found)
    assert gen.fam.hfi.modalities_taken(TwoMain()) == []


def test_a_recipes_values_are_copied_into_the_config():
    change = {"layers": {"0": {"heads": 4}}, "types": ["a", "b"]}
    out = gen.fam.recipes.merged({}, change)
    out["types"].append("c")
    out["layers"]["0"]["heads"] = 8
    assert change == {"layers": {"0": {"heads": 4}}, "types": ["a", "b"]}


def test_the_modalities_given_are_those_the_forward_takes_and_the_inputs_hold():
    class VisionLanguage:
        main_input_name = "input_ids"

        def forward(self, input_ids, pixel_values=None, input_features=None):
            return input_ids

    hfi = gen.fam.hfi
    model = VisionLanguage()
    assert hfi.modalities_given(model, {"input_ids": 1, "pixel_values": 2}) == ["image"]
    assert hfi.modalities_given(model, {"input_ids": 1, "bbox": 2}) == []


def test_a_family_reads_what_its_sub_configs_model_code_reads(tmp_path, monkeypatch):
    from types import SimpleNamespace

    for name, text in (("outer", "class Outer: ...\n"), ("inner", "x = mrope_section\n")):
        (tmp_path / "models" / name).mkdir(parents=True)
        (tmp_path / "models" / name / f"modeling_{name}.py").write_text(text)
    tf = SimpleNamespace(__file__=str(tmp_path / "__init__.py"))
    monkeypatch.setattr(gen.fam, "_transformers_code", lambda tf, kind: f"models/{kind}/")
    default = {"text_config": {"model_type": "inner"}, "hidden_size": 8}
    assert gen.fam._reads(tf, "outer", "mrope_section", default)
    assert not gen.fam._reads(tf, "outer", "mrope_section")
    assert not gen.fam._reads(tf, "outer", "something_else", default)
