"""The parent side of a run (it never imports user code): ``targets.py`` (which callables
run), ``pool.py`` (warm worker processes: submit, receive, timeouts, crashes),
``harness.py`` (four-way differential execution of each target, several at once),
``rollback.py`` (culprit edits bisected over every round of the rewrite), ``repro.py``
(reproducer folders for findings), ``report.py`` (verdicts as a table or one JSON document),
``testsuite.py`` (``--oracle-tests``: the project's own pytest suite as the oracle).

May import: judging, formats.
"""
