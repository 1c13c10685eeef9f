"""Compiler-testing campaigns: many generated programs, rewritten with the equivalence pack
and validated four ways, classified, deduplicated and kept as finding folders.

``job.py`` runs one seed (in whatever process an executor chooses), ``outcome.py`` classifies
it and computes its signature, ``known.py`` recognises known issues, ``store.py`` owns the
campaign folder (journal, findings, summary), ``executors.py`` runs seeds locally or on Ray,
``runner.py`` is the loop and ``cli.py`` the ``eqrewrite campaign`` command.

May import: judging, harness, generate, formats, api, options.
"""
