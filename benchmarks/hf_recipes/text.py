"""Recipes of the text families (see hf_recipes): what their config does not say."""

from __future__ import annotations

from hf_recipes import Recipe

RECIPES: dict[str, Recipe] = {}
