"""The judging core: build, run, observe and judge one target, in a worker process or in a
reproducer. ``settings.py`` (what a target is, its compile settings), ``protocol.py`` (the
typed messages), ``worker.py`` (the worker process and its ``Session``), ``observe.py`` and
``records.py`` (what a run makes observable, as plain values), ``reference.py`` (the float64
reference, perturbed inputs), ``compare.py`` (the one structured comparison), ``nested.py``
(nested values drained, cast, reached by a difference's keys), ``semantics.py`` (behaviours
whose result is undefined, recognised in a run), ``judge.py`` (verdicts and the triage),
``numerics.py`` (the noise triage's element-wise measurements), ``graphbreaks.py`` (breaks
counted), ``replay.py`` (the in-process replay a reproducer runs).

Imports torch, and of eqrewrite only its own modules, relatively: ``harness/repro.py`` copies
this folder's modules verbatim into every reproducer (``_eqrewrite_oracle/``) and
``minimising/reduce.py`` vendors them into reduced ones, so it stays one flat package.

May import: nothing.
"""
