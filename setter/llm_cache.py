"""A disk cache of model answers, so that re-running a night costs nothing (and says so).

The key is a hash of everything that determines the answer: model, messages, response schema and the
extra litellm options except credentials. The cache lives in $VHD_LLM_CACHE (a folder), else
~/.cache/vhdplay/llm-calls; VHD_LLM_CACHE=off disables it. Backed by diskcache (SQLite, safe across
threads and processes).
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

SECRET_OPTIONS = {"api_key", "aws_secret_access_key", "aws_session_token", "azure_ad_token", "vertex_credentials"}


def cache_dir() -> Path | None:
    configured = os.environ.get("VHD_LLM_CACHE")
    if configured and configured.lower() in ("off", "0", "false", "none"):
        return None
    if configured:
        return Path(configured).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "vhdplay" / "llm-calls"


@lru_cache(maxsize=8)
def _open(folder: str):
    import diskcache

    return diskcache.Cache(folder, size_limit=2**30)


def call_key(model: str, messages: list[dict[str, str]], schema: dict[str, Any], options: dict[str, Any]) -> str:
    safe = {k: v for k, v in sorted(options.items()) if k not in SECRET_OPTIONS}
    blob = json.dumps({"model": model, "messages": messages, "schema": schema, "options": safe}, sort_keys=True,
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def lookup(key: str) -> dict[str, Any] | None:
    folder = cache_dir()
    if folder is None:
        return None
    return _open(str(folder)).get(key)


def store(key: str, answer: dict[str, Any]) -> None:
    folder = cache_dir()
    if folder is not None:
        _open(str(folder)).set(key, answer)
