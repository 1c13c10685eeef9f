"""The dynamic graph-break audit (``eqrewrite audit --run``, ``--what-if``, ``--bench``):
``audit.py`` (the step: the trees, the targets, the workers), ``probe.py`` (one target
measured inside a worker), ``auditrecord.py`` (the report's ``dynamic`` section).

May import: judging, harness, api.
"""
