"""The equivalence pack's kinds (``rules/equivalences.yaml``): rewrites that keep a
program's meaning while changing how torch.compile sees it, for compiler testing."""
