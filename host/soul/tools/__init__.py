"""The soul's tools: each is a name, a description, an input schema and an async `run`.

`Toolbox` holds them in a fixed order (so the tool list sent to the model is
byte-identical between wakings), checks each call's input against its schema,
runs it, and turns the outcome into a `ToolResult`. A tool that fails returns
`ok=False` with an honest text; the soul sees `is_error` and the words.

Tool sources (MCP servers, tools/mcp.py) add tools while the soul lives:
`refresh_tools` (a before_turn hook) asks them at each waking; tools that joined
come after the built-ins and the list stays the same until something joins.
"""

import logging
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from soulstack.llm.types import TextBlock, Tool, ToolCall, ToolResult

log = logging.getLogger("soul.tools")


@dataclass
class Outcome:
    content: list  # TextBlock / ImageBlock
    ok: bool = True

    @classmethod
    def text(cls, words: str, ok: bool = True) -> "Outcome":
        return cls([TextBlock(words)], ok)


@dataclass
class SoulTool:
    name: str
    description: str
    parameters: dict  # property name -> JSON schema
    run: Callable[..., Awaitable[Outcome]]  # run(soul, **arguments) -> Outcome
    required: list = field(default_factory=list)
    schema: dict | None = None  # a whole input schema passed through as is (MCP); then every argument reaches run
    # Whether its answer tells the soul something (look, read_diary, shell, MCP tools) rather than
    # only confirming an act (speak, diary, sleep): a reply that calls such a tool together with
    # sleep gets one more step, to read the answer before the waking ends.
    informs: bool = True

    def spec(self) -> Tool:
        if self.schema is not None:
            return Tool(self.name, self.description, self.schema)
        schema = {"type": "object", "properties": self.parameters}
        if self.required:
            schema["required"] = list(self.required)
        return Tool(self.name, self.description, schema)


JSON_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "object": dict, "array": list}


def input_problem(tool: SoulTool, arguments) -> str | None:
    """What is wrong with a call's arguments, in words the soul can act on; None when fine."""
    if not isinstance(arguments, dict):
        return "the arguments must be an object"
    for name in tool.required:
        if name not in arguments:
            return f"{tool.name} needs {name}"
    for name, value in arguments.items():
        schema = tool.parameters.get(name)
        if not isinstance(schema, dict) or not isinstance(schema.get("type"), str):
            continue  # an extra field (models add some) or a type we do not check here
        wanted = JSON_TYPES.get(schema.get("type"))
        if wanted and (not isinstance(value, wanted) or (isinstance(value, bool) and wanted is not bool)):
            return f"{name} must be a {schema['type']}"
    return None


class Toolbox:
    def __init__(self, tools: list, sources=()):
        self.tools: dict = {}
        for tool in tools:
            if tool.name in self.tools:
                raise ValueError(f"two tools are called {tool.name}")
            self.tools[tool.name] = tool
        self.builtin = dict(self.tools)
        # Each source: async refresh(taken_names) -> bool (new tools?), tools() -> list, async close().
        self.sources = list(sources)

    async def refresh(self) -> bool:
        """Ask the sources for tools they did not have yet; True when the list changed."""
        changed = False
        for source in self.sources:
            changed = await source.refresh(set(self.tools)) or changed
        if changed:
            self.tools = dict(self.builtin)
            for source in self.sources:
                self.tools.update((tool.name, tool) for tool in source.tools() if tool.name not in self.builtin)
        return changed

    async def close(self) -> None:
        for source in self.sources:
            await source.close()

    def specs(self) -> list:
        return [tool.spec() for tool in self.tools.values()]

    def names(self) -> list:
        return list(self.tools)

    def informs(self, name: str) -> bool:
        tool = self.tools.get(name)
        return tool is None or tool.informs

    async def run(self, soul, call: ToolCall) -> tuple:
        """(ToolResult, ok) for one call. Never raises for a tool's own failure."""
        T = soul.T.TEXT
        tool = self.tools.get(call.name)
        if tool is None:
            outcome = Outcome.text(T["unknown_tool"].format(name=call.name), ok=False)
        else:
            problem = input_problem(tool, call.input)
            if problem:
                outcome = Outcome.text(T["bad_input"].format(problem=problem), ok=False)
            else:
                if tool.schema is not None:
                    arguments = dict(call.input)  # the tool's own server judges its arguments
                else:
                    arguments = {k: v for k, v in call.input.items() if k in tool.parameters}
                try:
                    outcome = await tool.run(soul, **arguments)
                except Exception as error:  # a bug or a disk error in one tool must not end the waking
                    log.exception("tool %s failed", call.name)
                    outcome = Outcome.text(T["tool_failed"].format(problem=f"{type(error).__name__}: {error}"), ok=False)
        return ToolResult(call.id, outcome.content, is_error=not outcome.ok), outcome.ok


async def refresh_tools(soul, waking=None) -> None:
    """before_turn hook: tools that joined since the last waking reach the model from this turn on."""
    if await soul.toolbox.refresh():
        soul.tools = soul.toolbox.specs()
