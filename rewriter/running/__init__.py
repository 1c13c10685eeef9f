"""Many files through the engine: ``runner.py`` (a frozen ``Job``, a ``Context`` per
process, one error boundary per file, in-process or in the worker pool); the caches,
read and written by the main process only (``cache.py``: per-file outcomes by content
digest and cross-file facts, the tool build's digest; ``summaries.py``: the call graph's
summaries on disk and the ``traced`` scope solved over all the files); ``results.py``: the
typed values a run hands between its layers (``FileResult``...); ``diffs.py`` (``--diff``),
``formatting.py`` (``--black``), ``progress.py`` (bars on stderr), ``report.py`` (a run's
results as text, JSON or SARIF).

May import: workspace, syntax, analysis, matching, rewriting.
"""
