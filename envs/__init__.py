"""The playable environment: an EnvSpec interpreted by trusted mechanism code, in one of three modes."""

from envs.agents import AGENTS, make_agent, play
from envs.catalog import load_env, load_spec, select_specs
from envs.environment import Environment, EpisodeResult
from envs.export import env_from_row, export_rows

__all__ = ["AGENTS", "Environment", "EpisodeResult", "env_from_row", "export_rows", "load_env", "load_spec",
           "make_agent", "play", "select_specs"]
