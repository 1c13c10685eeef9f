"""FOLD, an `if`/`elif` chain over two 0-d tensor flags. The padding-side check of an
audio-text merge, as Qwen2-Audio writes it (transformers 4.46-4.57,
`_merge_input_ids_with_audio_features`): the side is read from the mask's first and last
columns, then picked by a chain whose arms assign Python values and raise.

Breaks on torch 2.13: every truth value of `_left_padding` / `_right_padding` the chain
takes ("Data-dependent branching"), three with this right-padded mask.
Expected: the chain reads the data once (`_eqrw_first_true`, one break left), arms and
`else` as written; same outputs.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"
BREAKS_AFTER = 1


class PaddingSideMerge(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.padding_side = "left"

    def forward(self, embeds: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        batch_size = embeds.shape[0]
        _left_padding = torch.any(attention_mask[:, 0] == 0)
        _right_padding = torch.any(attention_mask[:, -1] == 0)

        left_padding = True
        if batch_size > 1:
            if _left_padding and not _right_padding:
                left_padding = True
            elif not _left_padding and _right_padding:
                left_padding = False
            elif not _left_padding and not _right_padding:
                # both side is 1, so cannot tell
                left_padding = self.padding_side == "left"
            else:
                # invalid attention_mask
                raise ValueError(f"both side of attention_mask has zero, invalid. {attention_mask}")

        positions = attention_mask.cumsum(-1) - 1
        if left_padding:
            positions = positions.flip(-1)
        return self.proj(embeds) * positions.unsqueeze(-1).float()


def get_init_inputs():
    return [8]


def get_inputs():
    torch.manual_seed(0)
    mask = torch.ones(3, 5, dtype=torch.long)
    mask[1, 3:] = 0
    return [torch.randn(3, 5, 8), mask]
