"""benchmarks/hf_graph_breaks.py's driver: both modes measured, printed per mode and side by
side, kept in the JSON; with canned workers (no transformers, no trees, no processes)."""

import argparse
import json

import pytest
from test_hf_generality import load_benchmark

hgb = load_benchmark("hf_graph_breaks")

# Breaks (original, rewritten) per case in default mode; the switches remove one more in
# each tree (not below zero). bert:forward is the control; gpt2:decode_legacy is n/a.
BREAKS = {"llama:forward": (4, 0), "mixtral:forward": (10, 2), "bert:forward": (1, 1)}
NOT_APPLICABLE = "gpt2:decode_legacy"


def _fake_run(monkeypatch, tmp_path, extra):
    """hgb.main() on four cases with canned records: (run_case calls, latency calls, JSON)."""
    import torch

    outputs = tmp_path / "out.pt"
    torch.save([torch.ones(2)], outputs)
    monkeypatch.setattr(hgb.hf_trees, "_check_pack", lambda rules: "pack.yaml")
    monkeypatch.setattr(hgb.hf_trees, "prepare_trees", lambda *a: {"reused": True})
    runs, timed = [], []

    def run_case(tree, tree_parent, case, workdir, args, script):
        settings = hgb.hfw.dynamo_settings(args)
        runs.append((tree, case, tuple(sorted(settings)), script))
        if case == NOT_APPLICABLE:
            return {"case": case, "tree": tree, "not_applicable": "no legacy tuples"}
        breaks = max(BREAKS[case][tree == "rew"] - (1 if settings else 0), 0)
        return {"case": case, "tree": tree, "breaks": breaks, "graph_count": breaks + 1,
                "fullgraph_ok": breaks == 0, "fullgraph_error": None, "dynamo_crash": None,
                "reasons": [], "outputs_file": str(outputs), "dynamo_config": settings}

    def run_latency(case, workdir, args, script):
        timed.append((case, tuple(sorted(hgb.hfw.dynamo_settings(args)))))
        return {tree: {"median_s": 0.002 if tree == "rew" else 0.004, "device": "cpu"}
                for tree in ("orig", "rew")}

    monkeypatch.setattr(hgb.hfw, "run_case", run_case)
    monkeypatch.setattr(hgb.hfw, "run_latency", run_latency)
    out = tmp_path / "r.json"
    status = hgb.main(["--models", ",".join([*BREAKS, NOT_APPLICABLE]), "--workdir",
                       str(tmp_path / "w"), "--json", str(out), *extra])
    assert status == 0
    return runs, timed, json.loads(out.read_text())


def test_both_modes_measured_printed_side_by_side_and_kept(monkeypatch, tmp_path, capsys):
    runs, timed, document = _fake_run(monkeypatch, tmp_path, [])
    modes = document["modes"]
    assert list(modes) == ["default", "switches"]
    assert modes["default"]["dynamo_config"] == {}
    # Without --dynamo-config the switches are those of eqrewrite run --dynamic-sizes.
    assert modes["switches"]["dynamo_config"] == {"capture_scalar_outputs": True,
                                                 "capture_dynamic_output_shape_ops": True}
    default, switched = modes["default"]["totals"], modes["switches"]["totals"]
    assert (default["breaks_before"], default["breaks_after"]) == (15, 3)
    assert default["percent_removed"] == pytest.approx(80.0)
    assert (switched["breaks_before"], switched["breaks_after"]) == (12, 1)  # 3 + 9 + 0 -> 0+1+0
    assert default["cases"] == switched["cases"] == 3  # the n/a case is left out
    assert modes["default"]["comparison"][NOT_APPLICABLE] == {
        "not_applicable": "no legacy tuples"}
    assert modes["switches"]["comparison"]["mixtral:forward"]["breaks_before"] == 9
    # Every case in both trees in each mode, the workers running the driver's own script.
    assert len(runs) == 2 * 2 * 4 and {r[3] for r in runs} == {hgb.__file__}
    assert {r[2] for r in runs} == {(), ("capture_dynamic_output_shape_ops",
                                         "capture_scalar_outputs")}
    # Latency per mode, for the cases whose breaks dropped (bert only in switches: 0 -> 0).
    assert [case for case, settings in timed if not settings] == ["llama:forward",
                                                                  "mixtral:forward"]
    assert len(timed) == 4

    printed = capsys.readouterr().out
    assert printed.count("===== mode:") == 2
    assert "===== mode: default =====" in printed
    first, second = printed.split("===== mode: switches")
    assert "total breaks: 15 -> 3 (80 % removed; GraphMend: 122 -> 34" in first
    assert "total breaks: 12 -> 1 (92 % removed" in second
    assert "warning: control model(s) with breaks: bert:forward" in first
    side = second.split("modes side by side (breaks before -> after):")[1]
    lines = [line.split(" | ") for line in side.strip().splitlines()]
    assert [cell.strip() for cell in lines[0]] == ["case", "default", "switches"]
    table = {cells[0].strip(): [c.strip() for c in cells[1:]] for cells in lines[2:7]}
    assert table["mixtral:forward"] == ["10 -> 2", "9 -> 1"]
    assert table[NOT_APPLICABLE] == ["n/a", "n/a"]
    assert table["total"] == ["15 -> 3 (80 % removed)", "12 -> 1 (92 % removed)"]
    assert "default  : 15 -> 3 (80 % removed) over 3 cases" in side
    assert ("switches : 12 -> 1 (92 % removed) over 3 cases; switches "
            "capture_scalar_outputs=True, capture_dynamic_output_shape_ops=True") in side


def test_one_mode_with_the_given_switches(monkeypatch, tmp_path, capsys):
    runs, timed, document = _fake_run(monkeypatch, tmp_path, [
        "--skip-latency", "--modes", "switches", "--dynamo-config", "capture_scalar_outputs=true"])
    assert list(document["modes"]) == ["switches"]
    assert document["modes"]["switches"]["dynamo_config"] == {"capture_scalar_outputs": True}
    assert {r[2] for r in runs} == {("capture_scalar_outputs",)} and timed == []
    assert document["backend"] is None
    assert "side by side" not in capsys.readouterr().out  # one mode: nothing to set beside


def test_modes_helpers_are_shared_and_each_mode_has_its_outputs(tmp_path):
    args = argparse.Namespace(dynamo_config=[], models="llama")
    default, switches = (hgb.hfw.mode_args(args, mode) for mode in hgb.hfw.MODES)
    assert default.dynamo_config == [] and args.dynamo_config == []
    assert sorted(switches.dynamo_config) == ["capture_dynamic_output_shape_ops=true",
                                              "capture_scalar_outputs=true"]
    folders = {hgb.hfw.outputs_dir(tmp_path, a).name for a in (default, switches)}
    assert folders == {"outputs", "outputs-capture_dynamic_output_shape_ops=True,"
                                  "capture_scalar_outputs=True"}
    with pytest.raises(argparse.ArgumentTypeError, match="modes are default, switches"):
        hgb.hfw._modes("default,fast")
    with pytest.raises(SystemExit):  # --modes goes through the same check in this driver
        hgb.main(["--modes", "fast"])


def test_worker_jobs_use_this_drivers_builder(monkeypatch):
    calls = []
    monkeypatch.setattr(hgb.hfw, "run_latency_worker",
                        lambda spec, build: calls.append(("latency", build)) or {})
    monkeypatch.setattr(hgb.hfw, "run_cold_worker",
                        lambda spec, build: calls.append(("cold", build)) or {})
    hgb.WORKER_JOBS["latency"]({})
    hgb.WORKER_JOBS["cold"]({})
    assert calls == [("latency", hgb._build_case), ("cold", hgb._build_case)]
    assert hgb.WORKER_JOBS["count"] is hgb.run_worker
    # The audit's targets import the models' table from the driver (benchmarks/audit_hf.py).
    assert "llama:decode" in hgb.CASES and hgb.CASES["bert:forward"].control


def test_counting_worker_sets_the_specs_switches(monkeypatch):
    import torch
    import torch._dynamo

    monkeypatch.setattr(torch, "set_num_threads", lambda threads: None)
    monkeypatch.setattr(hgb.hfw, "_import_tree", lambda parent: "transformers module")
    monkeypatch.setitem(hgb.CASES, "fake:forward", hgb.CASES["llama:forward"].__class__(
        lambda device="cpu": ("model", {"x": 1}), ("llama",)))
    seen = {}

    def measure(model, kwargs, spec, package):
        seen["switches"] = (torch._dynamo.config.capture_scalar_outputs,
                            torch._dynamo.config.capture_dynamic_output_shape_ops)
        return {"breaks": 0}

    monkeypatch.setattr(hgb.hfw, "measure", measure)
    spec = {"tree_parent": "/t", "threads": 1, "case": "fake:forward",
            "dynamo_config": {"capture_scalar_outputs": True}}
    # Restored on leaving: run_worker sets them for the rest of its (worker) process. (Not
    # monkeypatch: it finds no old value for a config entry and deletes the entry on undo.)
    with torch._dynamo.config.patch(capture_scalar_outputs=False,
                                    capture_dynamic_output_shape_ops=False):
        assert hgb.run_worker(spec) == {"breaks": 0}
    assert seen["switches"] == (True, False)
    assert torch._dynamo.config.capture_scalar_outputs is False
