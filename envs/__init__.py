"""The playable environment: an EnvSpec interpreted by trusted mechanism code, in one of three modes."""

from envs.agents import AGENTS, make_agent, play
from envs.environment import Environment, EpisodeResult

__all__ = ["AGENTS", "Environment", "EpisodeResult", "make_agent", "play"]
