"""The graph-break pack's kinds for boolean masks: a masked reduction, a selection written
back through its mask, and writes through a mask guarded by its ``.any()``."""
