"""``eqrewrite report FINDING``: a finding written up as a PyTorch issue.

``finding.py`` reads a campaign's finding folder (its record, the smallest program it holds:
the minimiser's, else the original) and turns it into the minimal script's recipe, and says
which recorded difference a title names and what kind of finding it is; ``runs.py`` runs
that script in subprocesses, each under a time limit: as recorded (twice), under other
backends and modes (the ablation), under ``torch._inductor.compiler_bisector``, and
``python -m torch.utils.collect_env``; ``values.py`` reads what eager and compiled gave;
``upstream.py`` asks GitHub's issue search; ``sections.py`` words the kind, the first layer,
the traceback, the known issue with what was searched, and the program's origin;
``issue.py`` writes the Markdown (title, description, script, expected vs actual, the
ablation's table, the bisection, versions, known issues); ``cli.py`` is the command. The
parent process never imports torch: every run is a child.

May import: minimising, campaign, formats, api.
"""
