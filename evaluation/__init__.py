"""Evaluating agents on catalog environments: the litellm tool-calling loop and one played episode as a row."""

from evaluation.episodes import BASELINES, play_episode
from evaluation.llm_agent import AgentConfig, play_llm

__all__ = ["AgentConfig", "BASELINES", "play_episode", "play_llm"]
