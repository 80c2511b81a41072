"""Contracts shared by every layer: wire types (EnvSpec, ToolSpec) and table models. Imports nothing of ours."""
