"""Serving environments to trainers: an HTTP session server for remote rollouts and an MCP server for one env."""
