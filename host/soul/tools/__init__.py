"""The soul's tools: each is a name, a description, an input schema and an async `run`.

`Toolbox` holds them in a fixed order (so the tool list sent to the model is
byte-identical between wakings), checks each call's input against its schema,
runs it, and turns the outcome into a `ToolResult`. A tool that fails returns
`ok=False` with an honest text; the soul sees `is_error` and the words.
"""

import logging
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from host.llm.types import TextBlock, Tool, ToolCall, ToolResult

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

    def spec(self) -> Tool:
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
        if schema is None:
            continue  # models sometimes add a field; ignoring it is kinder than refusing
        wanted = JSON_TYPES.get(schema.get("type"))
        if wanted and (not isinstance(value, wanted) or (isinstance(value, bool) and wanted is not bool)):
            return f"{name} must be a {schema['type']}"
    return None


class Toolbox:
    def __init__(self, tools: list):
        self.tools: dict = {}
        for tool in tools:
            if tool.name in self.tools:
                raise ValueError(f"two tools are called {tool.name}")
            self.tools[tool.name] = tool

    def specs(self) -> list:
        return [tool.spec() for tool in self.tools.values()]

    def names(self) -> list:
        return list(self.tools)

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
                arguments = {k: v for k, v in call.input.items() if k in tool.parameters}
                try:
                    outcome = await tool.run(soul, **arguments)
                except Exception as error:  # a bug or a disk error in one tool must not end the waking
                    log.exception("tool %s failed", call.name)
                    outcome = Outcome.text(T["tool_failed"].format(problem=f"{type(error).__name__}: {error}"), ok=False)
        return ToolResult(call.id, outcome.content, is_error=not outcome.ok), outcome.ok
