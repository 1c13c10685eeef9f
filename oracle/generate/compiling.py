"""How a generated program is compiled: a seed's compile settings, drawn apart from its code.

Every program compiled the same way (Inductor, default shapes, with backward) reaches the
same compiler code whatever its ops: symbolic shapes, inference graphs, frozen parameters,
the C++ wrapper, scalar (unvectorised) kernels and captured data-dependent values are other
paths through Dynamo and Inductor. ``GenConfig(compile_settings="varied")`` draws a few of
them per seed into the program's ``# eqrewrite-oracle:`` header, which the oracle, the
campaign's finding folders and the reproducers all read, so a finding replays as it was
compiled. ``"fixed"`` draws nothing: the programs are those of earlier releases, byte for
byte.

The draw uses its own ``Random`` (seeded by the seed alone), not the program's: the code
of a seed is the same in both modes, only its header differs. Only switches that keep eager
and compiled results comparable by the oracle's rules are drawn; each is one a user may set.
"""

from __future__ import annotations

import random

FIXED, VARIED = "fixed", "varied"
MODES = (FIXED, VARIED)

# (header key, value, probability): drawn independently, in this order (appending keeps the
# draws of earlier switches, so a seed keeps its settings when the list grows).
SWITCHES: tuple[tuple[str, object, float], ...] = (
    ("inductor.cpp_wrapper", True, 0.08),         # C++ wrapper instead of Python (slow build)
    ("inductor.cpp.simdlen", 1, 0.15),            # no vector ISA: scalar C++ kernels
    ("inductor.aggressive_fusion", True, 0.15),   # fuse without shared memory reads
    ("inductor.pattern_matcher", False, 0.1),     # no joint-graph/post-grad pattern rewrites
    ("inductor.split_reductions", False, 0.1),    # one-pass reductions
    ("inductor.emulate_precision_casts", True, 0.1),  # low-precision rounding as eager does
    ("dynamo.capture_scalar_outputs", True, 0.25),    # .item() as an unbacked symbol
    ("dynamo.capture_dynamic_output_shape_ops", True, 0.2),  # nonzero/unique in the graph
    # mode="max-autotune-no-cudagraphs" as a switch (any backend ignores it): CPU GEMM
    # templates for mm/bmm/addmm/conv, benchmarked against ATen
    ("inductor.max_autotune", True, 0.12),
    ("inductor.cpp.enable_kernel_profile", True, 0.1),  # kernels record profiler events
    # Compiled Autograd: Dynamo traces the autograd engine's backward graph and the backend
    # compiles it (the oracle's compiled run calls backward in a compiled frame for it);
    # drawn for programs with a backward pass only
    ("dynamo.compiled_autograd", True, 0.3),
    # a graph break inside a called function resumes tracing there, instead of compiling
    # the callers' frames apart (Dynamo's nested resume functions)
    ("dynamo.nested_graph_breaks", True, 0.25),
)
TRAINING_ONLY = frozenset({"dynamo.compiled_autograd"})  # dropped again from inference seeds
DYNAMIC = ((None, 5), (True, 3), (False, 2))   # torch.compile's dynamic=: default, on, off
INFERENCE = 0.35                # under torch.no_grad(): an inference graph, no backward
FREEZING = 0.5                  # of inference programs: parameters folded as constants
# Not drawn: ``mode=`` (torch.compile hands it to any other backend as a keyword, which a
# campaign's ``module:function`` backend need not take; its Inductor switches are drawn)
# and ``fullgraph`` (a program with a graph break would fail compiled only: a false compile
# crash).


def compile_settings(seed: int, mode: str = VARIED) -> dict[str, object]:
    """The header settings that say how ``seed``'s program is compiled (``{}`` when fixed)."""
    if mode not in MODES:
        raise ValueError(f"compile_settings must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == FIXED:
        return {}
    rng = random.Random(f"eqrewrite-gen/{seed}/compile")
    settings: dict[str, object] = {}
    dynamic = rng.choices([v for v, _ in DYNAMIC], [w for _, w in DYNAMIC])[0]
    if dynamic is not None:
        settings["dynamic"] = dynamic
    if rng.random() < INFERENCE:
        settings["inference"] = True
        if rng.random() < FREEZING:
            settings["inductor.freezing"] = True
    for key, value, probability in SWITCHES:
        # drawn for every seed all the same, so the switches after it keep their draws
        if rng.random() < probability and not (key in TRAINING_ONLY and "inference" in settings):
            settings[key] = value
    return settings
