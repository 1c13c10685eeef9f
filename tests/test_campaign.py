"""Campaigns: classification, signatures, known issues, deduplication, resume and the time
budget (with an in-process executor that returns canned results), then real campaigns:
planted bugs that corrupt one op class at a time are each found and the clean custom
backend finds nothing on the same seeds, the command line end to end, and the Ray executor
against a local Ray instance. Real campaigns use Dynamo-only custom backends (no Inductor).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from eqrewrite.oracle.campaign import known, outcome, store  # noqa: E402
from eqrewrite.oracle.campaign.job import JobSpec  # noqa: E402
from eqrewrite.oracle.campaign.runner import Campaign, Runner  # noqa: E402
from eqrewrite.oracle.generate import default_table  # noqa: E402

# -- classification and signatures ---------------------------------------------------------


def test_verdicts_map_to_campaign_classes():
    assert outcome.classify("compiler-bug", "") == outcome.COMPILER_BUG
    assert outcome.classify("compile-error", "original compiled raised") == outcome.COMPILE_CRASH
    assert outcome.classify("crash", "original compiled: worker killed by SIGSEGV") == \
        outcome.COMPILE_CRASH
    assert outcome.classify("error", "original eager raised ValueError") == outcome.EAGER_CRASH
    assert outcome.classify("crash", "rewritten eager: worker exited") == outcome.EAGER_CRASH
    assert outcome.classify("timeout", "original compiled: no answer") == outcome.TIMEOUT
    assert outcome.classify("nondeterministic", "") == outcome.NONDETERMINISTIC
    assert outcome.classify("rewrite-changed-behaviour", "") == outcome.REWRITE_CHANGED
    assert outcome.classify("numerical-noise", "") == outcome.PASSED


def test_error_text_is_normalised_so_programs_share_a_signature():
    one = outcome.normalise_error(
        "RuntimeError: shape '[4, 3]' is invalid for input of size 10 at 0x7f3a in "
        "/tmp/job-1/original/gen_000017.py:12 (v3)")
    two = outcome.normalise_error(
        "RuntimeError: shape '[2, 8]' is invalid for input of size 7 at 0x11 in "
        "/work/x/rewritten/gen_000903.py:40 (v11)\nsecond line")
    assert one == two
    assert "second line" not in two
    assert outcome.normalise_error("RuntimeError: index out of range") != one
    assert outcome.signature("compiler-bug", ["output/exact"], ["argmin"], "") != \
        outcome.signature("compiler-bug", ["output/value"], ["argmin"], "")


def test_ops_feeding_follow_the_data_to_the_diverging_output():
    source = textwrap.dedent('''
        import torch
        def program(x0: torch.Tensor, x1: torch.Tensor):
            v0 = torch.tanh(x0)
            v1 = x1.argmin()
            v2 = v0.sum()
            if (v2 > 0).any():
                v2.add_(1)
            return v2
    ''')
    names = outcome.spellings(default_table())
    ops = outcome.ops_feeding(source, ["tanh", "argmin", "sum", "add", "any"], names,
                              ["output/value"])
    assert "tanh" in ops and "sum" in ops
    assert "argmin" not in ops  # v1 never reaches the output


# -- known issues --------------------------------------------------------------------------


def test_the_shipped_known_issues_load_and_each_names_a_public_issue():
    issues = known.load(known.DEFAULT_FILE)
    assert issues and all(i.url.startswith("https://github.com/pytorch/pytorch/issues/")
                          for i in issues)
    argmin = {"class": "compiler-bug", "signature_ops": ["argmin", "add"],
              "kinds": ["output/exact"]}
    assert known.recognise(issues, argmin).url.endswith("/197739")
    assert known.recognise(issues, {**argmin, "kinds": ["output/value"]}) is None


@pytest.mark.parametrize(("body", "message"), [
    ("issues:\n  - {ops: [argmin]}\n", "'url' must be"),
    ("issues:\n  - {url: 'https://x/1'}\n", "no pattern"),
    ("issues:\n  - {url: 'https://x/1', error: '('}\n", "bad 'error' pattern"),
    ("issues:\n  - {url: 'https://x/1', class: bug}\n", "unknown class"),
    ("issues:\n  - {url: 'https://x/1', opz: [a]}\n", "unknown keys"),
    ("- just a list\n", "'issues' list"),
])
def test_bad_known_issue_files_are_refused_with_the_entry(tmp_path, body, message):
    path = tmp_path / "known.yaml"
    path.write_text(body)
    with pytest.raises(known.KnownIssuesError, match=message) as caught:
        known.load(path)
    assert str(path) in str(caught.value)


# -- the runner, with canned results -------------------------------------------------------


class Canned:
    """An executor that answers each seed from a table, in this process."""

    name, jobs = "canned", 2

    def __init__(self, answers: dict[int, dict]):
        self.answers = answers
        self.queue: list[int] = []
        self.submitted: list[int] = []

    def submit(self, seed):
        self.queue.append(seed)
        self.submitted.append(seed)

    def finished(self, timeout):
        done, self.queue = self.queue[:1], self.queue[1:]
        return [(seed, dict(self.answers[seed], seed=seed)) for seed in done]

    @property
    def in_flight(self):
        return len(self.queue)

    def close(self, cancel=False):
        self.closed = True


BUG = {"class": "compiler-bug", "verdict": "compiler-bug", "kinds": ["output/exact"],
       "signature_ops": ["cumsum"], "error": "", "ops": {"cumsum": 1}, "program": "x = 1\n",
       "file": "gen.py", "detail": "original compiled differs"}
OTHER_BUG = {**BUG, "kinds": ["output/value"]}
KNOWN = {**BUG, "signature_ops": ["argmin"]}
PASS = {"class": "passed", "verdict": "passed", "ops": {"add": 1}, "program": "y = 2\n"}


def canned_run(tmp_path, answers, seeds, issues=(), budget=None):
    out = tmp_path / "campaign"
    finished = store.open_campaign(out, {"settings": {}}, resume=True)
    executor = Canned(answers)
    campaign = Campaign(seeds, out, executor, {"torch": "x"}, list(issues), budget,
                        progress=False)
    return Runner(campaign, finished).run(), executor, out


def test_findings_are_deduplicated_by_signature_and_known_issues_filtered(tmp_path):
    issue = known.KnownIssue("https://github.com/pytorch/pytorch/issues/1", ops=frozenset(
        {"argmin"}))
    answers = {0: BUG, 1: PASS, 2: BUG, 3: OTHER_BUG, 4: KNOWN}
    summary, _, out = canned_run(tmp_path, answers, range(5), [issue])
    assert summary["classes"] == {"compiler-bug": 4, "passed": 1}
    assert [f["seeds"] for f in summary["findings"]] == [[0, 2], [3]]
    assert summary["known"] == [{"url": issue.url, "seeds": 1}]
    folders = sorted(p.name for p in (out / "findings").iterdir())
    assert len(folders) == 2
    record = json.loads((out / summary["findings"][0]["folder"] / "finding.json").read_text())
    assert record["seeds"] == [0, 2] and record["first_seed"] == 0
    assert (out / summary["findings"][0]["folder"] / "program.py").read_text() == "x = 1\n"
    assert json.loads((out / "summary.json").read_text())["classes"] == summary["classes"]


def test_an_interrupted_campaign_resumes_without_redoing_finished_seeds(tmp_path):
    answers = {seed: (BUG if seed == 1 else PASS) for seed in range(6)}
    canned_run(tmp_path, answers, range(4))
    journal = tmp_path / "campaign" / store.JOURNAL
    lines = journal.read_text().splitlines()
    # Interrupted while writing the fourth line: it is cut short.
    journal.write_text("\n".join(lines[:3]) + "\n" + lines[3][:20])
    summary, executor, _ = canned_run(tmp_path, answers, range(6))
    assert executor.submitted == [3, 4, 5]
    assert summary["seeds"]["resumed"] == 3 and summary["seeds"]["finished"] == 6
    assert [f["seeds"] for f in summary["findings"]] == [[1]]


def test_a_campaign_folder_is_resumed_only_with_the_same_settings(tmp_path):
    store.open_campaign(tmp_path, {"settings": {"backend": "eager"}}, resume=True)
    with pytest.raises(store.CampaignError, match="settings differ"):
        store.open_campaign(tmp_path, {"settings": {"backend": "inductor"}}, resume=True)


def test_the_time_budget_stops_submitting_seeds(tmp_path):
    summary, executor, _ = canned_run(tmp_path, {s: PASS for s in range(50)}, range(50),
                                      budget=0.0)
    assert executor.submitted == [] and summary["stopped_by"] == "time budget"


def test_a_failed_job_is_reported_and_left_for_the_resume(tmp_path):
    class Failing(Canned):
        def finished(self, timeout):
            return [(seed, RuntimeError("job process died") if seed == 1 else result)
                    for seed, result in super().finished(timeout)]

    out = tmp_path / "campaign"
    executor = Failing({s: PASS for s in range(3)})
    campaign = Campaign(range(3), out, executor, {}, [], None, progress=False)
    summary = Runner(campaign, store.open_campaign(out, {}, resume=True)).run()
    assert summary["job_failures"] == [{"seed": 1, "error": "RuntimeError: job process died"}]
    assert [r["seed"] for r in store.read_journal(out / store.JOURNAL)] == [0, 2]


@pytest.mark.parametrize(("arguments", "message"), [
    (["--seeds", "5:2"], "expected 0 <= START < STOP"),
    (["--time-budget", "1x"], "expected a duration"),
    (["--backend", "nosuch"], "unknown backend 'nosuch'"),
    (["--known-issues", "{bad}"], "no pattern"),
    (["--ops", "add,nosuch"], "unknown op ids: nosuch"),
    (["--address", "auto"], "--address is for --executor ray"),
])
def test_usage_errors_exit_2_before_any_job_starts(tmp_path, arguments, message):
    from click.testing import CliRunner
    from eqrewrite.oracle.campaign.cli import campaign_command

    bad = tmp_path / "known.yaml"
    bad.write_text("issues:\n  - {url: 'https://x/1'}\n")
    arguments = [a.format(bad=bad) for a in arguments]
    result = CliRunner().invoke(campaign_command, ["-o", str(tmp_path / "c"), "--backend",
                                                   "eager", *arguments])
    assert result.exit_code == 2 and message in result.output, result.output
    assert not (tmp_path / "c").exists()


def test_the_default_path_never_imports_ray(tmp_path):
    code = ("import sys; from eqrewrite.rewriter.cli import main; "
            "import eqrewrite.oracle.campaign.cli, eqrewrite.oracle.campaign.executors, "
            "eqrewrite.oracle.campaign.runner, eqrewrite.oracle.campaign.job; "
            "assert 'ray' not in sys.modules, 'ray imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# -- benchmarks/campaign.py --baseline: two campaigns compared seed by seed ---------------

TIMEOUT = {"class": "timeout", "verdict": "timeout", "kinds": [], "signature_ops": [],
           "error": "original compiled: no answer", "ops": {"add": 1}, "program": "y = 2\n",
           "file": "gen.py", "detail": "original compiled: no answer"}


def _campaigns(tmp_path, old: dict, new: dict, seeds=range(5)):
    """Two canned campaign folders, as two revisions' commands would write them."""
    for name, answers in (("old", old), ("new", new)):
        canned_run(tmp_path / name, answers, seeds)
    return tmp_path / "old" / "campaign", tmp_path / "new" / "campaign"


def test_the_baseline_comparison_ignores_times_and_pids(tmp_path):
    from test_hf_generality import load_benchmark

    bench = load_benchmark("campaign")
    answers = {0: BUG, 1: PASS, 2: BUG, 3: OTHER_BUG, 4: PASS}
    later = {seed: {**answer, "pid": 99, "seconds": 7.5} for seed, answer in answers.items()}
    old, new = _campaigns(tmp_path, answers, later)
    report = bench.compare_campaigns(old, new)
    assert report["identical"] == [0, 1, 2, 3, 4] and bench.same_findings(report)
    assert bench.comparison_text(report, "abc1234", "working tree") == "identical: 5 of 5 seeds"
    # What is compared: the folder of each finding seed, the first seed's folder content.
    assert report["before"][2]["folder"] == report["before"][0]["folder"]
    assert report["before"][0]["folder"].startswith("findings/compiler-bug-")
    assert report["before"][0]["content"]["program.py"] == "x = 1\n"
    assert "content" not in report["before"][2] and "folder" not in report["before"][1]


def test_the_baseline_comparison_names_differences_timeouts_and_missing_seeds(tmp_path):
    from test_hf_generality import load_benchmark

    bench = load_benchmark("campaign")
    answers = {0: BUG, 1: PASS, 2: BUG, 3: OTHER_BUG, 4: PASS, 5: PASS}
    changed = {**answers, 0: {**BUG, "program": "x = 2\n"},  # the first seed's program
               3: {**OTHER_BUG, "kinds": ["grads/value"]}, 4: TIMEOUT}
    old, new = _campaigns(tmp_path, answers, changed, range(6))
    journal = new / store.JOURNAL  # seed 5 never finished on the current side
    journal.write_text("".join(line + "\n" for line in journal.read_text().splitlines()
                               if json.loads(line)["seed"] != 5))
    report = bench.compare_campaigns(old, new)
    assert report["identical"] == [1, 2] and not bench.same_findings(report)
    assert report["differ"][0] == ["content.program.py"]
    assert {"signature", "kinds", "folder", "content.kinds"} <= set(report["differ"][3])
    assert report["timing"].keys() == {4} and "class" in report["timing"][4]
    assert report["missing"] == {5: "current: not run"}
    text = bench.comparison_text(report, "abc1234", "working tree")
    assert text.splitlines()[-1] == ("DIFFERENT: 2 of 6 seeds differ, 1 missing on a side, "
                                     "1 timing-dependent; identical: 2 of 6 seeds")
    row = next(line for line in text.splitlines() if line.lstrip().startswith("4 "))
    assert "passed" in row and "timeout" in row and "timing-dependent" in row
    assert '  seed 0 content.program.py: x = 1\\n' in text  # the values, on one line each

    # A timeout on one side only is no difference.
    old, new = _campaigns(tmp_path / "t", answers, {**answers, 4: TIMEOUT}, range(6))
    report = bench.compare_campaigns(old, new)
    assert bench.same_findings(report) and report["timing"].keys() == {4}
    assert bench.comparison_text(report, "a", "b").splitlines()[-1].startswith(
        "identical: 5 of 6 seeds (1 more timing-dependent: [4] timed out on one side only")


def test_the_baseline_option_runs_both_sides_and_exits_1_on_a_difference(tmp_path,
                                                                         monkeypatch, capsys):
    from test_hf_generality import load_benchmark

    bench = load_benchmark("campaign")

    class Side:  # a checkout, without git
        def __init__(self, revision, work, name):
            self.name, self.label = name, revision or "the working tree"

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

    answers = {0: BUG, 1: PASS}
    ran = []

    def run(arguments, out, side):  # the side's campaign: seed 0's program differs
        ran.append((side.name, arguments.seeds, arguments.budget))
        program = "x = 2\n" if side.name == "current" else "x = 1\n"
        start, stop = (int(n) for n in arguments.seeds.split(":"))
        executor = Canned({**answers, 0: {**BUG, "program": program}})
        campaign = Campaign(range(start, stop), out, executor, {}, [], None, progress=False)
        summary = Runner(campaign, store.open_campaign(out, {}, resume=True)).run()
        return summary, [], 10.0, 5.0

    monkeypatch.setattr(bench, "Checkout", Side)
    monkeypatch.setattr(bench, "run", run)
    assert bench.main(["--seeds", "0:2", "--baseline", "abc1234"]) == 1
    assert ran == [("baseline", "0:2", None), ("current", "0:2", None)]  # no budget
    output = capsys.readouterr().out
    assert "DIFFERENT: 1 of 2 seeds differ" in output and "content.program.py" in output
    assert bench.main(["--seeds", "1:2", "--baseline", "abc1234", "--budget", "9m",
                       "--keep", str(tmp_path / "kept")]) == 0
    assert ran[-1] == ("current", "1:2", "9m") and (tmp_path / "kept" / "baseline").is_dir()
    assert "identical: 1 of 1 seeds" in capsys.readouterr().out


# -- real campaigns: planted bugs and the clean backend ------------------------------------

_UNARY = ["abs", "atanh", "ceil", "cos", "erf", "exp", "exp2", "expm1", "floor", "frac", "log",
          "log1p", "neg", "reciprocal", "relu", "round", "rsqrt", "sigmoid", "sign", "sin",
          "sqrt", "square", "tan", "tanh", "trunc"]
# One op class per planted backend, and seeds whose programs use it (0:21 has no matmul).
PLANTED = {"reduction": [2, 3], "matmul": [21, 22, 32], "indexing": [0, 2, 3],
           "pointwise": [1, 5, 11]}

BACKENDS = '''
"""Custom backends for campaign tests: each corrupts the results of one op class."""
import torch

CLASSES = {classes!r}


def _corrupt(value):
    if isinstance(value, torch.Tensor):
        if value.dtype == torch.bool:
            return ~value
        if value.is_complex():
            return value
        if value.is_floating_point():  # visible on infinities and NaNs too
            return torch.where(value.isnan(), torch.ones_like(value), 1 - value)
        return value + 1
    if isinstance(value, (tuple, list)):
        return type(value)([_corrupt(item) for item in value])
    return value


def _planted(names):
    def backend(gm, example_inputs):
        graph = gm.graph
        for node in list(graph.nodes):
            name = node.target if node.op == "call_method" else getattr(
                node.target, "__name__", None) if node.op == "call_function" else None
            if name in names:
                with graph.inserting_after(node):
                    bad = graph.call_function(_corrupt, (node,))
                node.replace_all_uses_with(bad, delete_user_cb=lambda user: user is not bad)
        gm.recompile()
        return gm.forward
    return backend


def clean(gm, example_inputs):
    return gm.forward


def _crashing(names):
    def backend(gm, example_inputs):
        for node in gm.graph.nodes:
            name = node.target if node.op == "call_method" else getattr(
                node.target, "__name__", None) if node.op == "call_function" else None
            if name in names:
                raise RuntimeError("planted crash in " + name)
        return gm.forward
    return backend


crash_reduction = _crashing(set(CLASSES["reduction"]))


{assignments}
'''


def _class_names() -> dict[str, list[str]]:
    """The names (functions, methods, in-place methods) each planted class corrupts."""
    table = default_table()
    classes = {"reduction": {s.id for s in table.ops if "reduction" in s.tags},
               "matmul": {s.id for s in table.ops if "matmul" in s.tags},
               "indexing": {s.id for s in table.ops if "indexing" in s.tags},
               "pointwise": set(_UNARY)}
    names = outcome.spellings(table)
    return {cls: sorted(n for n, ids in names.items() if ids & ops and n.isidentifier())
            for cls, ops in classes.items()}


@pytest.fixture(scope="module")
def backends(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("backends")
    classes = _class_names()
    assignments = "\n".join(f"{cls} = _planted(set(CLASSES[{cls!r}]))" for cls in classes)
    (folder / "planted.py").write_text(BACKENDS.format(classes=classes,
                                                       assignments=assignments))
    sys.path.insert(0, str(folder))  # spawned jobs inherit it
    yield folder
    sys.path.remove(str(folder))


def real_run(out: Path, backend: str, seeds, jobs=2, budget=300.0, gen=None):
    from eqrewrite.oracle.campaign.executors import LocalExecutor

    spec = JobSpec(gen=gen or {}, settings={"backend": backend}, timeout=300,
                   work_root=str(out / "work"))
    finished = store.open_campaign(out, {"settings": spec.settings}, resume=True)
    campaign = Campaign(seeds, out, LocalExecutor(spec, jobs), {"torch": torch.__version__},
                        [], budget, progress=False)
    return Runner(campaign, finished).run()


@pytest.mark.parametrize("op_class", sorted(PLANTED))
def test_each_planted_bug_is_found_within_a_small_budget(backends, tmp_path, op_class):
    summary = real_run(tmp_path / op_class, f"planted:{op_class}", PLANTED[op_class])
    assert summary["stopped_by"] == "done"
    bugs = [f for f in summary["findings"] if f["class"] == "compiler-bug"]
    assert bugs, summary["classes"]
    corrupted = set(_class_names()[op_class])
    names = outcome.spellings(default_table())
    involved = {op for bug in bugs for op in bug["ops"]}
    assert involved & {op for name in corrupted for op in names[name]}, (involved, op_class)
    folder = tmp_path / op_class / bugs[0]["folder"]
    record = json.loads((folder / "finding.json").read_text())
    # The reproducer replays the finding on its own and exits 1: still a compiler bug.
    script = folder / record["reproducer"] / "repro.py"
    env = dict(os.environ, PYTHONPATH=str(backends))
    replay = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=300, env=env)
    assert replay.returncode == 1, replay.stdout + replay.stderr


def test_the_clean_custom_backend_finds_nothing_on_the_same_seeds(backends, tmp_path):
    seeds = sorted({seed for chosen in PLANTED.values() for seed in chosen})
    summary = real_run(tmp_path / "clean", "planted:clean", seeds)
    assert summary["seeds"]["finished"] == len(seeds)
    assert summary["findings"] == [], summary["findings"]
    assert summary["classes"].get("passed") == len(seeds)


def test_a_finding_records_and_replays_the_programs_compile_settings(backends, tmp_path):
    # Seed 17 draws inference=true and inductor.freezing=true, and uses prod (a reduction).
    from eqrewrite.oracle.generate import generate

    settings = generate(17).settings
    assert settings.get("inference") is True
    summary = real_run(tmp_path / "varied", "planted:reduction", [17], jobs=1,
                       gen={"compile_settings": "varied"})
    bugs = [f for f in summary["findings"] if f["class"] == "compiler-bug"]
    assert bugs, summary["classes"]
    folder = tmp_path / "varied" / bugs[0]["folder"]
    record = json.loads((folder / "finding.json").read_text())
    assert "inference=true" in record["compile_settings"]
    assert "inductor.freezing=True" in record["compile_settings"]
    assert "# eqrewrite-oracle: " in (folder / "program.py").read_text()
    script = (folder / record["reproducer"] / "repro.py").read_text()
    assert "inference=True" in script and "('freezing', True)" in script
    env = dict(os.environ, PYTHONPATH=str(backends))
    replay = subprocess.run([sys.executable, str(folder / record["reproducer"] / "repro.py")],
                            capture_output=True, text=True, timeout=300, env=env)
    assert replay.returncode == 1, replay.stdout + replay.stderr


def test_the_reduce_step_keeps_to_its_time_budget(backends, tmp_path, monkeypatch):
    from eqrewrite.oracle.campaign.executors import LocalExecutor
    from eqrewrite.oracle.campaign.runner import REDUCE_GRACE

    budget = 25.0  # far less than 500 candidates take: the budget, not the count, stops it
    monkeypatch.setenv("PYTHONPATH", str(backends))  # the reduction's processes import it
    out = tmp_path / "c"
    spec = JobSpec(settings={"backend": "planted:reduction"}, timeout=300,
                   work_root=str(out / "work"))
    campaign = Campaign(PLANTED["reduction"], out, LocalExecutor(spec, 2),
                        {"torch": torch.__version__}, [], 600.0, reduce=True, progress=False,
                        reduce_budget=budget)
    summary = Runner(campaign, store.open_campaign(out, {}, resume=True)).run()
    assert summary["reductions"], summary["findings"]
    for name, reduction in summary["reductions"].items():
        assert reduction["budget"] == budget
        # Cut off by its own budget (plus writing and exiting), never killed by the campaign.
        assert reduction["seconds"] <= budget + 10, reduction
        assert reduction["seconds"] < budget + REDUCE_GRACE and "killed" not in reduction["status"]
        if reduction["status"] == "reduced":
            record = json.loads((out / store.FINDINGS / name / "reduced" /
                                 "reduction.json").read_text())
            # Stopped by its budget, or (warm caches, a fast machine) done within it.
            assert ("--time-budget" in (record["stopped"] or "")
                    or (record["stopped"] is None and reduction["seconds"] <= budget + 10)), record


def test_a_compile_crash_finding_is_reduced_with_its_error(backends, tmp_path, monkeypatch):
    from eqrewrite.oracle.campaign.executors import LocalExecutor

    monkeypatch.setenv("PYTHONPATH", str(backends))  # the reduction's processes import it
    out = tmp_path / "crash"
    spec = JobSpec(settings={"backend": "planted:crash_reduction"}, timeout=300,
                   work_root=str(out / "work"))
    campaign = Campaign(PLANTED["reduction"][:1], out, LocalExecutor(spec, 1),
                        {"torch": torch.__version__}, [], 600.0, reduce=True, progress=False,
                        reduce_budget=240.0)
    summary = Runner(campaign, store.open_campaign(out, {}, resume=True)).run()
    crashes = [f for f in summary["findings"] if f["class"] == "compile-crash"]
    assert crashes, summary["classes"]
    name = crashes[0]["folder"].rpartition("/")[2]
    folder = out / store.FINDINGS / name
    record = json.loads((folder / "finding.json").read_text())
    assert "FAILS = 'compile-error'" in (folder / record["reproducer"] / "repro.py").read_text()
    assert summary["reductions"][name]["status"] == "reduced", summary["reductions"]
    reduced = json.loads((folder / "reduced" / "reduction.json").read_text())
    assert reduced["signature"]["verdict"] == "compile-error"
    assert "planted crash in" in reduced["signature"]["error"]
    assert reduced["after"]["statements"] < reduced["before"]["statements"]


def test_the_reduce_step_never_outlasts_the_campaign_budget(tmp_path, monkeypatch):
    from eqrewrite.oracle.campaign import runner as runner_module

    given: list[float] = []
    monkeypatch.setattr(runner_module, "_reduce",
                        lambda folder, budget: given.append(budget) or {"status": "reduced"})
    out = tmp_path / "c"
    campaign = Campaign([], out, Canned({}), {}, [], 100.0, reduce=True, progress=False,
                        reduce_budget=60.0)
    runner = Runner(campaign, store.open_campaign(out, {}, resume=True))
    assert runner._reduce(out)["budget"] == 60.0  # the reduction's own budget fits
    runner.started -= 70.0  # 30 s of the campaign's 100 are left
    assert 25.0 < runner._reduce(out)["budget"] <= 30.0 and 25.0 < given[-1] <= 30.0
    runner.started -= 40.0  # the campaign's budget is spent: no reduction at all
    assert runner._reduce(out)["status"].startswith("skipped") and len(given) == 2


def test_the_command_is_interrupted_and_resumed_without_redoing_seeds(backends, tmp_path):
    import signal
    import time

    env = dict(os.environ, PYTHONPATH=str(backends))
    out = tmp_path / "c"
    # Ten seeds, so that work is still left when the first one is journaled even if this
    # process is slow to notice it (seeds after the first take a second each, caches warm).
    command = [sys.executable, "-m", "eqrewrite.rewriter", "campaign", "--seeds", "2:12", "-j",
               "1", "--backend", "planted:reduction", "-o", str(out), "--time-budget", "10m"]
    # A shell's background job inherits SIGINT ignored, and Python keeps an ignored SIGINT:
    # the campaign gets the default, as a command started from a terminal does.
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    journal = out / store.JOURNAL
    deadline = time.monotonic() + 400
    while not (journal.exists() and journal.read_text()) and time.monotonic() < deadline:
        time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)  # stops at once, not after the seed in flight
    assert process.returncode == 130, stderr
    assert "run the same command again to resume" in stderr
    done = {json.loads(line)["seed"] for line in journal.read_text().splitlines()}
    assert done and done < set(range(2, 12))
    again = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    assert again.returncode == 1, again.stderr  # the reduction finding
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seeds"]["resumed"] == len(done)
    assert summary["seeds"]["this_run"] == 10 - len(done) and summary["seeds"]["finished"] == 10
    assert "\x1b[" not in again.stderr  # no live progress when stderr is not a terminal
    other = subprocess.run(command[:9] + ["eager", "-o", str(out)], capture_output=True,
                           text=True, timeout=600, env=env)
    assert other.returncode == 2 and "other settings" in other.stderr


# -- Ray ------------------------------------------------------------------------------------


def test_the_ray_executor_streams_results_into_the_same_folder(backends, tmp_path):
    ray = pytest.importorskip("ray")
    from eqrewrite.oracle.campaign.executors import RayExecutor

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(backends)}})
    try:
        spec = JobSpec(settings={"backend": "planted:indexing"}, timeout=300)
        out = tmp_path / "ray"
        finished = store.open_campaign(out, {"settings": spec.settings}, resume=True)
        executor = RayExecutor(spec, jobs=2, address=None)
        campaign = Campaign([0, 2, 3], out, executor, {"torch": torch.__version__}, [],
                            300.0, progress=False)
        summary = Runner(campaign, finished).run()
        assert ray.is_initialized()  # the executor leaves a cluster it did not start
    finally:
        ray.shutdown()
    assert summary["executor"] == "ray" and summary["seeds"]["finished"] == 3
    assert any(f["class"] == "compiler-bug" for f in summary["findings"]), summary
    lines = (out / store.JOURNAL).read_text().splitlines()
    assert sorted(json.loads(line)["seed"] for line in lines) == [0, 2, 3]
    for finding in summary["findings"]:
        assert (out / finding["folder"] / "finding.json").exists()
