"""A report runs the program the way minimal.py does: with the settings the minimiser kept,
not the campaign's (a switch the reduction dropped can hide the finding again)."""

from __future__ import annotations

import json

from eqrewrite.oracle.bugreport.finding import load

PROGRAM = "import torch\n\n\ndef program(x):\n    return x.sin()\n\n\ndef get_inputs():\n" \
          "    return [torch.ones(2)]\n"


def folder_with(tmp_path, reduced_settings: str | None):
    folder = tmp_path / "compiler-bug-0"
    (folder / "reduced" / "tree").mkdir(parents=True)
    (folder / "program.py").write_text(PROGRAM)
    (folder / "reduced" / "tree" / "gen.py").write_text(PROGRAM)
    (folder / "finding.json").write_text(json.dumps({
        "class": "compiler-bug", "verdict": "compiler-bug", "file": "gen.py",
        "settings": {"backend": "inductor"},
        "oracle": {"target": "gen.py::program", "settings": {
            "backend": "inductor", "dynamic": True,
            "inductor_config": [["emulate_precision_casts", True], ["fallback_random", True]],
            "dynamo_config": [["compiled_autograd", True]]}}}))
    if reduced_settings is not None:
        (folder / "reduced" / "repro.py").write_text(
            "from _eqrewrite_oracle.settings import CompileSettings\n"
            f"SETTINGS = CompileSettings({reduced_settings})\n")
    return folder


def test_the_reduced_reproducers_settings_replace_the_campaigns(tmp_path):
    finding = load(folder_with(tmp_path, "backend='inductor', mode=None, dynamic=None, "
                               "inductor_config=(('fallback_random', True),), "
                               "dynamo_config=()"))
    assert finding.source.startswith("reduced/")
    assert finding.settings["inductor_config"] == [["fallback_random", True]]
    assert finding.settings["dynamo_config"] == [] and finding.settings["dynamic"] is None


def test_without_a_reduction_the_campaigns_settings_stay(tmp_path):
    finding = load(folder_with(tmp_path, None))
    assert ["emulate_precision_casts", True] in finding.settings["inductor_config"]
    assert finding.settings["dynamic"] is True
