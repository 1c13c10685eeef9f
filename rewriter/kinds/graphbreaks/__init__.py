"""The graph-break pack's kinds (``rules/graphbreaks.yaml``): rewrites that keep eager
execution exactly the original while Dynamo traces a graph-friendly path."""
