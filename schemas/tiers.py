"""The difficulty tiers, easiest first (a constant the CLI reads without importing the mechanisms).

Each family declares the cells and turn budget of every tier (mechanisms.base.Tier); every environment is labelled
with the tier its measured quantities put it in (envs.difficulty.tier_of).
"""

TIERS = ("easy", "medium", "hard", "frontier")
