"""``eqrewrite reduce``: a reproducer folder shrunk to the smallest program that still fails.
``reduce.py`` (folders, the passes' order, the checking process's handle, signatures,
outputs), ``reducepasses.py`` (the candidates, text to text with libcst, no torch),
``reduceworker.py`` (the checking process: run as a script with the reproducer's own copy
of the core, it imports nothing of eqrewrite), ``standalone.py`` (the text of
``minimal.py``), ``reducecli.py`` (the command).

May import: campaign.
"""
