"""A small real warehouse for the evaluation, serving and export tests: `vhd generate` once per test process."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile

import litellm

from cli.main import main
from envs.agents import oracle
from envs.catalog import select_specs

_GENERATED: dict[str, str] = {}
COUNT = 26  # two environments per family


def generated_warehouse() -> str:
    """The path of a warehouse holding COUNT admitted environments (needs the prefect_server fixture)."""
    if "path" not in _GENERATED:
        path = tempfile.mkdtemp(prefix="vhd-eval-wh-")
        atexit.register(shutil.rmtree, path, True)
        assert main(["generate", "--count", str(COUNT), "--warehouse", path, "--no-progress",
                     "--date", "2026-01-05"]) == 0
        _GENERATED["path"] = path
    return _GENERATED["path"]


class OracleModel:
    """A scripted stand-in for a paid model (litellm's own mock_tool_calls): it answers each episode with the
    oracle's next tool call, found from the system prompt and the number of tool results so far."""

    def __init__(self, monkeypatch, warehouse: str, mode: str, as_text: bool = False):
        from envs.environment import Environment

        self.scripts = {}
        for spec in select_specs("true", None, warehouse):
            env = Environment(spec, mode)
            self.scripts[env.instructions] = list(oracle(env))
        self.as_text = as_text
        self.requests = 0
        original = litellm.completion

        def completion(**kwargs):
            self.requests += 1
            messages = kwargs["messages"]
            script = next(s for text, s in self.scripts.items() if messages[0]["content"].startswith(text))
            done = sum(1 for m in messages if m["role"] == "tool" or str(m.get("content")).startswith("Result of"))
            name, args = script[min(done, len(script) - 1)]
            if as_text:
                return original(**{**kwargs, "mock_response": json.dumps({"tool": name, "arguments": args})})
            call = {"id": f"call_{done}", "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)}}
            return original(**{**kwargs, "mock_response": "", "mock_tool_calls": [call]})

        monkeypatch.setattr(litellm, "completion", completion)
