"""The project on disk: which files a run takes, and reading and writing them safely.

``config.py`` reads ``[tool.eqrewrite]`` from the project's ``pyproject.toml``;
``discovery.py`` walks the given paths (``.gitignore``, include/exclude globs, never the
``--out`` folder); ``worklist.py`` turns discovered paths into work (links followed once,
``--out`` destinations, refusals); ``files.py`` reads user files (bytes and stat,
``@generated``) and writes them (atomic, modes kept, read-only refused, links never
replaced); ``sources.py`` turns bytes into text and back as Python does; ``workers.py`` is the
process pool whose workers die with the command and leave no half-written file behind.

Knows nothing of rules or code, so every later stage may use it.

May import: nothing.
"""
