"""DEFER, warnings.warn of a message built at run time. diffusers-style `deprecate()`: a
helper called from forward joins its parts (`warning + message`) and warns with the caller's
stacklevel; a second call hands a Warning instance (its own category wins).

Breaks on torch 2.13: each `warnings.warn(...)` ("Attempted to call function marked as
skipped").
Expected: rewritten, both calls: the built message is deferred after the graph (one break
gone); the Warning instance is handed over as it is (its category kept), and since Dynamo
reorders only calls of tensors, constants and strings, that call still breaks the graph, as
the original did. Same categories and messages, in order.
"""

import warnings

import torch
import torch.nn as nn

EXPECTED = "rewrite"
BREAKS_AFTER = 1


class LegacyScaleWarning(UserWarning):
    pass


def deprecate(attribute: str, version: str, message: str, standard_warn: bool = True,
              stacklevel: int = 2):
    warning = f"`{attribute}` is deprecated and will be removed in version {version}."
    warning = warning + " " if standard_warn else ""
    warnings.warn(warning + message, FutureWarning, stacklevel=stacklevel)


def legacy(scale: float):
    notice = LegacyScaleWarning(f"scale {scale} is applied twice")
    warnings.warn(notice, stacklevel=1)


class Block(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        deprecate("Block", "1.0.0", "Import Block from `blocks` instead.")
        legacy(0.5)
        return self.fc(x) * 0.5


def get_init_inputs():
    return [8]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 8)]
