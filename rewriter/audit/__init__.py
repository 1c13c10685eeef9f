"""The graph-break audit: where code fragments torch.compile graphs, why, and what fixes it.

Static and torch-free: ``detect`` finds sites of known break patterns (``catalogue``) in
traced code, ``resolve`` runs the rule packs and says which rule fixes each site or why
none did (``reasons``), ``scan`` does it per file and in parallel, ``document`` builds the
report every format renders (``formats``), ``cli`` is ``eqrewrite audit``: a thin layer
over ``api.audit``, which runs the others. The dynamic audit (``--run``) is the oracle's,
added through the plugin registry.

May import: workspace, syntax, analysis, kinds, matching, rewriting, running, api, plugins,
options.
"""
