"""The pure parts of benchmarks/switch_latency.py: a case's row from its two runs, the
table with its geometric means, the eager-output comparison, and the command each run is."""

import argparse
from pathlib import Path

import torch
from test_hf_generality import load_benchmark

latency = load_benchmark("switch_latency")


def run(breaks: int, steady_ms: float, cold_s: float, verdict: str = "allclose") -> dict:
    return {"breaks": breaks, "steady_ms": steady_ms, "cold_s": cold_s,
            "compiled_vs_eager": verdict, "max_abs": 1e-7}


def test_row_has_ratios_of_switches_over_default():
    r = latency.row("jetmoe", {"default": run(15, 6.0, 20.0), "switches": run(0, 3.0, 10.0)},
                    True)
    assert r["breaks"] == [15, 0]
    assert r["steady_ratio"] == 0.5 and r["cold_ratio"] == 0.5
    assert r["eager_equal"] is True


def test_row_of_a_failed_run_carries_its_error():
    r = latency.row("qwen2_vl", {"default": run(3, 1.0, 1.0),
                                 "switches": {"error": "exit 1: GuardOnDataDependentSymNode"}},
                    None)
    assert r == {"case": "qwen2_vl", "errors": {"switches": "exit 1: GuardOnDataDependentSymNode"}}


def test_table_prints_geometric_means_over_timed_rows_only():
    rows = [latency.row("a", {"default": run(2, 4.0, 10.0), "switches": run(0, 1.0, 10.0)}, True),
            latency.row("b", {"default": run(2, 1.0, 10.0), "switches": run(0, 1.0, 40.0)}, False),
            latency.row("c", {"default": {"error": "timed out after 5 s"},
                              "switches": run(0, 1.0, 1.0)}, None)]
    text = latency.table(rows)
    assert "| a | 2 → 0 | 4.00 → 1.00 | 0.25 |" in text
    assert "| NO |" in text  # b's eager outputs differ between the modes
    assert "default: timed out after 5 s" in text
    assert text.splitlines()[-1] == "| geometric mean | | | **0.50** | | **2.00** | | |"


def test_eager_equal_is_bitwise_and_treats_nan_as_equal(tmp_path: Path):
    nan = torch.tensor([1.0, float("nan")])
    torch.save([nan], tmp_path / "a.pt")
    torch.save([nan.clone()], tmp_path / "b.pt")
    torch.save([torch.tensor([1.0, 2.0])], tmp_path / "c.pt")
    torch.save([torch.tensor([1.0, float("nan")], dtype=torch.float64)], tmp_path / "d.pt")
    assert latency.eager_equal(tmp_path / "a.pt", tmp_path / "b.pt")
    assert not latency.eager_equal(tmp_path / "a.pt", tmp_path / "c.pt")
    assert not latency.eager_equal(tmp_path / "a.pt", tmp_path / "d.pt")


def test_each_mode_runs_the_one_family_script_under_eqrewrite_run(tmp_path: Path, monkeypatch):
    seen = {}

    def fake_run(command, env, **_):
        seen[command[command.index("--record") + 1]] = (command, env)
        raise latency.subprocess.TimeoutExpired(command, 1)

    monkeypatch.setattr(latency.subprocess, "run", fake_run)
    args = argparse.Namespace(repeats=3, backend="inductor", device="cuda", threads=8, timeout=1)
    assert latency.run_mode("vjepa2", "switches", args, tmp_path) == {
        "error": "timed out after 1 s"}
    (command, env), = seen.values()
    assert command[1:6] == ["-m", "eqrewrite.rewriter", "run", "--package", "transformers"]
    assert "--dynamic-sizes" in command and command[command.index("--device") + 1] == "cuda"
    assert env["TORCHINDUCTOR_CACHE_DIR"].startswith(str(tmp_path / "vjepa2-forward-switches"))
