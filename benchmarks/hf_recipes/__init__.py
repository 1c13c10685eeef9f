"""What the generic builder of ``hf_generality.py`` cannot read from a family's config: a
recipe per family, as a model's own test suite keeps a tester per model.

``hf_configs.shrink`` and ``hf_inputs.candidates`` derive a tiny config and its inputs from
the config alone; some families tie sizes in ways no config field states (a vocoder's
upsampling to the feature extractor's hop, a time-series model's prediction length), take
inputs no parameter name describes (SegGPT's prompts, TimesFM's frequencies), or name a
default that does not validate. A recipe states that knowledge once, with why:

* ``config``: values set on the shrunk config (``merged``: a sub-config's dict is merged
  key by key, so a recipe names only what it changes), on every rung the builder tries;
* ``inputs(model, config)``: the forward's keyword inputs, tried before the generic
  candidates (which still follow, should the recipe's not run).

Recipes are grouped by modality, one module each; a family has at most one recipe.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any


@dataclass(frozen=True)
class Recipe:
    """A family's config changes and inputs, and why the generic builder needs them."""

    why: str
    config: Mapping[str, Any] = field(default_factory=dict)
    inputs: Callable[[Any, Any], dict] | None = None


def merged(values: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with ``changes`` set: where both hold a dict (a sub-config), merged key by
    key, recursively; anything else replaced by a copy of the change."""
    out = dict(values)
    for key, value in changes.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        else:  # a copy: config classes may change what they are given in place
            out[key] = copy.deepcopy(value)
    return out


def collect(groups: Iterable[Any]) -> dict[str, Recipe]:
    """The recipes of every group module; a family named by two groups is an error."""
    found: dict[str, Recipe] = {}
    for group in groups:
        for family, recipe in group.RECIPES.items():
            if family in found:
                raise ValueError(f"family {family!r} has two recipes ({group.__name__})")
            found[family] = recipe
    return found


def _groups() -> tuple[Any, ...]:
    """The group modules (imported here: each imports Recipe from this package)."""
    from hf_recipes import audio, multimodal, text, vision

    return audio, multimodal, text, vision


RECIPES = collect(_groups())


def configured(family: str, default: Mapping[str, Any], changes: Mapping[str, Any]
               ) -> dict[str, Any]:
    """The changes to ``family``'s ``default`` config (``hf_configs.shrink``'s) with its
    recipe's set too (unchanged if it has none); a sub-config the shrinker left alone is
    merged into from the default, so the recipe's few keys do not replace it."""
    recipe = RECIPES.get(family)
    if recipe is None:
        return dict(changes)
    base = {key: changes.get(key, default.get(key)) for key in recipe.config}
    return {**changes, **merged(base, recipe.config)}


def candidates(family: str, model: Any, config: Any) -> list[tuple[str, Callable[[], dict]]]:
    """The recipe's inputs as a builder candidate (none if the family has no recipe inputs)."""
    recipe = RECIPES.get(family)
    if recipe is None or recipe.inputs is None:
        return []
    return [("recipe", partial(recipe.inputs, model, config))]


def tower_candidates(model: Any, config: Any) -> list[tuple[str, Callable[[], dict]]]:
    """The inputs of each tower whose own family has a recipe (a speech model's encoder, a
    vision-language model's SigLIP-2), with the token ids and the modality's placeholders."""
    found = []
    for modality, key in TOWERS:
        tower = RECIPES.get(getattr(getattr(config, key, None), "model_type", None))
        if tower is not None and tower.inputs is not None:
            found.append((f"input_ids+{modality} (its tower's recipe)",
                          partial(_through_tower, model, config, modality, tower, key)))
    return found


# A modality and the sub-config of the tower that encodes it.
TOWERS = (("image", "vision_config"), ("audio", "audio_config"))


def _through_tower(model: Any, config: Any, modality: str, tower: Recipe, key: str) -> dict:
    """The tower recipe's inputs that the model's forward takes, with the token ids and as
    many placeholders as the model's features; ValueError where the forward takes none of
    them (the tower's names are not the model's)."""
    import hf_inputs as hfi

    params = set(inspect.signature(model.forward).parameters)
    assert tower.inputs is not None
    extra = {name: value for name, value in tower.inputs(model, getattr(config, key)).items()
             if name in params}
    if not extra:
        raise ValueError(f"the forward takes none of the {key} tower recipe's inputs")
    ids = hfi.main_candidates("input_ids", config, params)[0]
    return hfi.with_modalities(model, config, [(modality, extra)], ids)
