"""The soul's tools: each is a name, a description, an input schema and an async `run`, and the
facts the rest of the soul asks about it (`SoulTool`: informs, routine, changes, role, gist).

`Toolbox` holds them in a fixed order (so the tool list sent to the model is
byte-identical between wakings), checks each call's input against its schema,
runs it, and turns the outcome into a `ToolResult`. A tool that fails returns
`ok=False` with an honest text; the soul sees `is_error` and the words. The
rooms ask the toolbox about a tool or a call (`routine`, `changes`, `ends_waking`,
`spoken`, `gist`), never its name: adding a tool is one edit here, in its
module's list (and, for a new module, in builtin.py's `make_tools`).

Tool sources (MCP servers: host/soul/tools/mcp.py) add tools while the soul lives:
`refresh_tools` (a before_turn hook) asks them at each waking; tools that joined
come after the built-ins and the list stays the same until something joins.
"""

import logging
from dataclasses import dataclass, field
from collections.abc import Awaitable, Callable

from soulstack.llm.types import TextBlock, Tool, ToolCall, ToolResult

log = logging.getLogger(__name__)

# The parts a tool may play that the rest of the soul asks for (Toolbox.ends_waking, .spoken).
ENDS_WAKING = "ends the waking"  # sleep: a reply calling it puts the waking to sleep (memory/settle.py)
SPEAKS = "speaks"  # speak: words said aloud to the person: contact (metabolism/drives.py), the voice
#                    stack's answer (converse/reply.py), "said" in the plain digest (memory/fold.py)


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
    # Whether it only keeps a life ticking over (body_status, sleep, diary, ...): succeeding at it is
    # no new deed, so it leaves boredom where it is (metabolism/drives.py).
    routine: bool = False
    # The part of the inner life its call changes ("self", "aspirations", "mood", "kept", "diary",
    # "achievements"): the next snapshot does not repeat a change the soul's own call shows (snapshot.py).
    changes: str | None = None
    # A part it plays that the rest of the soul asks for: ENDS_WAKING, SPEAKS (above), or None.
    role: str | None = None
    # The argument holding what the call says or writes (speak's text, diary's entry, update_mood's
    # mood): what a reader of the history keeps of it (the plain digest, the snapshot's own diary lines).
    gist: str | None = None

    def spec(self) -> Tool:
        if self.schema is not None:
            return Tool(self.name, self.description, self.schema)
        schema = {"type": "object", "properties": self.parameters}
        if self.required:
            schema["required"] = list(self.required)
        return Tool(self.name, self.description, schema)


JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "object": dict,
    "array": list,
}


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
        wanted = JSON_TYPES.get(schema["type"])
        if wanted and (not isinstance(value, wanted) or (isinstance(value, bool) and wanted is not bool)):
            return f"{name} must be a {schema['type']}"
    return None


class Toolbox:
    """The tools offered to the model (`tools`: the built-ins, then those the sources add), and the facts
    of every tool the soul knows. `known`: built-in tools it may not offer now (the body's without an
    endpoint) whose calls it still recognises, as a history keeps them: a speak is speech, whatever
    the body can do now. A built-in's facts win over a source's tool of the same name."""

    def __init__(self, tools: list, sources=(), known=()):
        self.tools: dict = {}
        for tool in tools:
            if tool.name in self.tools:
                raise ValueError(f"two tools are called {tool.name}")
            self.tools[tool.name] = tool
        self.builtin = dict(self.tools)
        self.known = {**{tool.name: tool for tool in known}, **self.builtin}
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
        """Whether a call's answer tells the soul something (SoulTool.informs); a tool not offered does."""
        tool = self.tools.get(name)
        return tool is None or tool.informs

    # --- the facts of a tool, asked by name (a call in the history may name a tool no longer offered) ---

    def facts(self, name: str) -> SoulTool | None:
        """The tool called `name`: a built-in (offered or known), else one a source offers now; None if none."""
        return self.known.get(name) or self.tools.get(name)

    def routine(self, name: str) -> bool:
        tool = self.facts(name)
        return tool is not None and tool.routine

    def changes(self, name: str) -> str | None:
        """The part of the inner life a call of `name` changes (SoulTool.changes), or None."""
        tool = self.facts(name)
        return tool.changes if tool is not None else None

    def ends_waking(self, name: str) -> bool:
        tool = self.facts(name)
        return tool is not None and tool.role == ENDS_WAKING

    def speaks(self, name: str) -> bool:
        tool = self.facts(name)
        return tool is not None and tool.role == SPEAKS

    def gist(self, call: ToolCall):
        """What `call` says or writes (its tool's gist argument), or None: no gist, or not given."""
        tool = self.facts(call.name)
        if tool is None or tool.gist is None or not isinstance(call.input, dict):
            return None
        return call.input.get(tool.gist)

    def spoken(self, call: ToolCall) -> str | None:
        """The words `call` says aloud to the person ("" when it gives none); None unless it speaks."""
        if not self.speaks(call.name):
            return None
        tool = self.facts(call.name)
        assert tool is not None, "a tool that speaks is known"
        return str(call.input.get(tool.gist, ""))

    async def run(self, soul, call: ToolCall) -> tuple:
        """(ToolResult, ok) for one call. Never raises for a tool's own failure."""
        text = soul.lang.TEXT
        tool = self.tools.get(call.name)
        if tool is None:
            outcome = Outcome.text(text["unknown_tool"].format(name=call.name), ok=False)
        else:
            problem = input_problem(tool, call.input)
            if problem:
                outcome = Outcome.text(text["bad_input"].format(problem=problem), ok=False)
            else:
                if tool.schema is not None:
                    arguments = dict(call.input)  # the tool's own server judges its arguments
                else:
                    arguments = {k: v for k, v in call.input.items() if k in tool.parameters}
                try:
                    outcome = await tool.run(soul, **arguments)
                except Exception as error:  # a bug or a disk error in one tool must not end the waking
                    log.exception("tool %s failed", call.name)
                    failure = f"{type(error).__name__}: {error}"
                    outcome = Outcome.text(text["tool_failed"].format(problem=failure), ok=False)
        return ToolResult(call.id, outcome.content, is_error=not outcome.ok), outcome.ok


async def refresh_tools(soul, waking=None) -> None:
    """before_turn hook: tools that joined since the last waking reach the model from this turn on."""
    if await soul.toolbox.refresh():
        soul.tools = soul.toolbox.specs()
