"""``eqrewrite reduce``: a reproducer folder shrunk to the smallest program that still fails.
``reduce.py`` (the command's course: the folder, the baseline, the outputs written),
``checker.py`` (the checking process's handle), ``judge.py`` (one candidate judged, cheap
screens first), ``signature.py`` (what keeps a finding the same; the tally),
``schedule.py`` (the current program, candidates judged ahead, confirmation by bisection),
``passes.py`` (the passes' order, ddmin), ``budget.py``, ``outputs.py`` (``reduced/``,
``minimal.py``, their verification), ``candidates/`` (the candidates, text to text with
libcst, no torch: one module per concern),
``reduceworker.py`` (the checking process: run as a script with the reproducer's own copy
of the judging core, it imports nothing of eqrewrite), ``standalone.py`` (the text of
``minimal.py``), ``cli.py`` (the command).

May import: campaign, formats, api.
"""
