"""Agents: one module per family, built by name through the registry."""

from engine_server.presets import DEFAULT_AGENT, SINGLE_THREAD_AGENT

from .base import Agent, AgentInfo, AgentSpecError, Param
from .registry import AGENTS, describe_agents, make_agent, parse_spec

__all__ = ["Agent", "AgentInfo", "AgentSpecError", "Param", "AGENTS", "DEFAULT_AGENT",
           "SINGLE_THREAD_AGENT", "describe_agents", "make_agent", "parse_spec"]
