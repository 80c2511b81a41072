"""EnvSpec: the complete, declarative, JSON-serialisable description of one environment.

The setter writes only this data; the runtime (``envs``) interprets each tool's binding with trusted
mechanism code. Nothing in an EnvSpec is ever executed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

ToolKind = Literal["probe", "decision", "clock", "info"]
Mode = Literal["written", "revealed", "hidden"]
MODES: tuple[Mode, ...] = ("written", "revealed", "hidden")
DEFAULT_MODE: Mode = "hidden"  # what an agent plays when no mode is asked for: the parameters only through probes
# The longest spec JSON any reader parses (catalog rows, trainer rows), far above any real environment's (the
# largest generated: about 56,000 characters): a longer one is refused before it is read, not read into gigabytes.
MAX_SPEC_JSON_CHARS = 4_000_000


class ArgSpec(BaseModel):
    """One argument of a mechanism operation: its type and inclusive bounds."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["integer", "number", "string", "array"]
    description: str = ""
    minimum: float | None = None  # of the value, or of each element of an array
    maximum: float | None = None
    enum: list[str] | None = None
    items: Literal["integer", "number"] | None = None  # an array's element type (a bulk decision's list of ids)
    max_items: int | None = None  # an array's longest length


class OperationSpec(BaseModel):
    """A primitive operation of a mechanism that a tool may be bound to."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    kind: ToolKind
    summary: str
    args: dict[str, ArgSpec] = Field(default_factory=dict)
    decoy: bool = False  # a misleading "forecast sticker": plausible, not the truth
    estimates: str | None = None  # a decoy's: the observation key of the true quantity it stands in for


class Action(BaseModel):
    """One call of a mechanism operation with concrete arguments (policies are lists of these)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    op: str
    args: dict[str, Any] = Field(default_factory=dict)


ACTION_LIST = TypeAdapter(list[Action])


def pickled_actions(actions: list[Action]) -> list[dict[str, Any]]:
    """Actions as plain dicts, for pickling (one call into pydantic-core instead of a Python hook per action)."""
    return ACTION_LIST.dump_python(actions)


def unpickled_actions(data: list[dict[str, Any]]) -> list[Action]:
    return ACTION_LIST.validate_python(data)


# Operations the runtime itself provides, so that every environment has them whatever its family.
RUNTIME_OPERATIONS: tuple[OperationSpec, ...] = (
    OperationSpec(name="calculator", kind="info", summary="evaluate an arithmetic expression",
                  args={"expression": ArgSpec(type="string", description="arithmetic expression")}),
    OperationSpec(name="turns_left", kind="info", summary="how many turns remain in the budget"),
)
RUNTIME_OPERATION_NAMES = frozenset(op.name for op in RUNTIME_OPERATIONS)
# the written mode's one decision tool: the whole plan at once (envs.environment runs it)
SUBMIT_PLAN = "submit_plan"


class ToolSpec(BaseModel):
    """A tool the agent sees: name, description, JSON-schema of arguments, and its binding."""

    model_config = ConfigDict(extra="forbid")
    name: str
    description: str
    kind: ToolKind
    parameters: dict[str, Any]  # JSON schema (type: object) of the tool's arguments
    operation: str  # the bound mechanism operation
    argument_map: dict[str, str] = Field(default_factory=dict)  # tool argument -> operation argument


def tool_interface_of(names: list[str]) -> str:
    """md5 of the sorted tool names joined by commas: two environments with it equal offer the same tools."""
    return hashlib.md5(",".join(sorted(names)).encode()).hexdigest()


def story_of(written_prompt: str) -> str:
    """The first paragraph of a written prompt: the environment's narrative."""
    return written_prompt.split("\n\n", 1)[0]


def derived_from_spec_json(spec_json: str) -> tuple[str | None, str | None]:
    """(tool_interface, story) of a stored spec, or None for what it does not hold (the catalog's SQL agrees)."""
    try:
        rendering = json.loads(spec_json).get("rendering") or {}
        names = [tool["name"] for tool in rendering.get("tools", [])]
        prompt = rendering.get("written_prompt")
    except (ValueError, TypeError, KeyError, AttributeError):
        return None, None
    return (tool_interface_of(names) if names else None), (story_of(prompt) if isinstance(prompt, str) else None)


class Entity(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    attributes: list[str] = Field(default_factory=list)
    relates_to: list[str] = Field(default_factory=list)


class Rendering(BaseModel):
    """What the setter writes: narrative, entities, instructions per mode, tools."""

    model_config = ConfigDict(extra="forbid")
    domain: str
    passage_id: str
    title: str
    entities: list[Entity]
    instructions: dict[Mode, str]
    written_prompt: str
    tools: list[ToolSpec]
    # the names observations show, by the mechanism's own key ("value" -> "appraised_value_pounds"); a key "limit 3"
    # is shown with its word renamed and its number kept (envs.environment.shown)
    observation_names: dict[str, str] = Field(default_factory=dict)

    def tool_interface(self) -> str:
        """What an agent sees of the tools, as one hash (see ``tool_interface_of``)."""
        return tool_interface_of([tool.name for tool in self.tools])

    def story(self) -> str:
        """The narrative of the written prompt (see ``story_of``)."""
        return story_of(self.written_prompt)


class Reference(BaseModel):
    """Reference values computed by the exact solver before any rendering."""

    model_config = ConfigDict(extra="forbid")
    u_star: float
    u0: float
    u_idle: float
    optimal_actions: list[Action]
    default_actions: list[Action]
    solver: str
    solver_facts: dict[str, Any] = Field(default_factory=dict)
    # utilities of further recorded policies, e.g. the optimal online policy under a hindsight ceiling
    baselines: dict[str, float] = Field(default_factory=dict)
    # the informed agent's calls in hidden mode (envs.difficulty): its utility is baselines["informed"]
    informed_actions: list[Action] = Field(default_factory=list)
    # the naive prober's calls in hidden mode: its utility is baselines["naive_prober"]
    naive_actions: list[Action] = Field(default_factory=list)


Tier = Literal["easy", "medium", "hard", "frontier"]  # schemas.tiers.TIERS


class Difficulty(BaseModel):
    """How hard an environment is, measured (envs.difficulty): the tier and the quantities that decide it."""

    model_config = ConfigDict(extra="forbid")
    tier: Tier
    requested: Tier | None = None  # the tier the plan asked for (admission refuses another)
    probe_share: float = Field(ge=0, le=1)  # the share of the probe allowance the turn budget grants
    facts_fit: float = Field(ge=0, le=1)  # the share of the probe calls that fit beside the optimal plan
    informed_score: float  # the informed agent's score: the ceiling a hidden-mode agent reaches in the budget
    heuristic_score: float  # the best heuristic agent's score
    naive_score: float | None = None  # the naive prober's score: verifies figures in listing order
    skill_gap: float | None = None  # informed_score - naive_score: what choosing which figures to verify is worth


@dataclass
class Measured:
    """What measuring one environment gives (envs.difficulty.measure): its difficulty, the recorded baselines' calls,
    every player's utility on the drawn path."""

    difficulty: Difficulty
    informed_actions: list[Action]
    naive_actions: list[Action]
    utilities: dict[str, float]


class EnvSpec(BaseModel):
    """One environment, complete: family, hidden parameters, reference, rendering, budget."""

    model_config = ConfigDict(extra="forbid")
    family: str
    version: int
    params: dict[str, Any]
    reference: Reference
    split: str
    size: int
    horizon: int
    seed: list[int]
    turn_budget: int
    setter: str
    model: str | None = None
    rendering: Rendering
    difficulty: Difficulty | None = None

    def __reduce__(self):
        # pickled as its JSON, written and read by pydantic-core: specs cross process boundaries (the stage worker
        # pool) and Prefect's result store many times per run, and pydantic's per-model pickling hooks run in Python
        return (EnvSpec.model_validate_json, (self.model_dump_json(),))

    def canonical_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))

    @property
    def env_id(self) -> str:
        """A hash of the canonical spec: the same environment always gets the same id."""
        return self.identified()[0]

    def identified(self) -> tuple[str, str]:
        """(env_id, the canonical JSON it hashes), for who needs both: the JSON is written once."""
        canonical = self.canonical_json()
        return f"{self.family}-{hashlib.sha256(canonical.encode()).hexdigest()[:16]}", canonical
