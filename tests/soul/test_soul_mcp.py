"""Tools from MCP servers, over real HTTP: the soul's client against tests/fakes/mcp_server.py,
and end to end with the real anthropic SDK against host/fakes/anthropic_api.py."""

import asyncio
import logging
import re
from datetime import datetime, UTC

import pytest

from soulstack.protocol.nudges import Nudge
from soulstack.llm.types import ToolCall
from soulstack.soul import config
from soulstack.clocks import ScaledClock, StepClock
from soulstack.soul.run import build_soul
from soulstack.soul.tools import Outcome, SoulTool, refresh_tools
from soulstack.fakes.anthropic_api import FakeAnthropic, tool_use
from tests.helpers import free_port
from tests.fakes.mcp_server import PNG_B64, FakeMcp, FakeTool, echo_tool, text_result
from soulstack.fakes.soul_body import JPEG_B64
from tests.helpers import until
from tests.soul.helpers import Running, anthropic_model

AFTERNOON = datetime(2024, 5, 1, 14, 0, tzinfo=UTC)
LOGGER = "soulstack.soul.tools.mcp"  # the MCP client's logger (host/soul/tools/mcp.py)
NAME_RULE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
LONG = "a_tool_whose_name_goes_on_and_on_far_past_what_any_model_api_accepts_as_a_name"


def make_cfg(tmp_path, servers, **overrides):
    # Every nudge wakes these souls at once (no coalescing: that is test_soul_storm.py's).
    raw = {
        "soulDir": str(tmp_path / "soul"),
        "timezone": "UTC",
        "nudge": {"port": 0, "minIntervalSeconds": 0},
        "model": {"retries": 0},
        "mcp": servers,
        **overrides,
    }
    cfg, warnings = config.from_dict(raw)
    assert warnings == []
    return cfg


def soul_for(tmp_path, servers, model=None, scale=60.0, extra_tools=()):
    """A real soul (brainstem unless a model is given) whose tools include these MCP servers."""
    return build_soul(
        make_cfg(tmp_path, servers), clock=ScaledClock(AFTERNOON, scale=scale), model=model, extra_tools=extra_tools
    )


async def use(soul, name, arguments):
    """Run one tool call the way a turn does; (ToolResult, ok)."""
    return await soul.toolbox.run(soul, ToolCall("call_1", name, arguments))


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content if hasattr(block, "text"))


def tool_names(body) -> list:
    return [tool["name"] for tool in body["tools"]]


# --- discovery and names ---------------------------------------------------------------


async def test_discovery_follows_every_page_and_speaks_the_transport(tmp_path):
    tools = [echo_tool(f"tool{i}") for i in range(5)]
    async with FakeMcp(tools, page_size=2) as server:
        soul = soul_for(tmp_path, [{"name": "fake", "url": server.url}])
        await refresh_tools(soul)
        try:
            mcp_names = soul.toolbox.names()[len(soul.toolbox.builtin) :]
            assert mcp_names == [f"fake__tool{i}" for i in range(5)]
            assert [t.name for t in soul.tools][-5:] == mcp_names  # what the model is sent
            # Three pages, the second and third asked for with the cursor the server gave.
            pages = server.received("tools/list")
            assert len(pages) == 3 and "cursor" not in pages[0]["params"]
            assert pages[1]["params"]["cursor"] and pages[2]["params"]["cursor"] != pages[1]["params"]["cursor"]
            # The handshake: initialize without a session, then the initialized notification with it.
            first, second = server.requests[0], server.requests[1]
            assert first.message["method"] == "initialize" and "mcp-session-id" not in first.headers
            assert first.message["params"]["protocolVersion"] == "2025-06-18"
            assert "application/json" in first.headers["accept"] and "text/event-stream" in first.headers["accept"]
            assert second.message == {"jsonrpc": "2.0", "method": "notifications/initialized"}
            (session_id,) = server.sessions
            for later in server.requests[1:]:
                assert later.headers["mcp-session-id"] == session_id
                assert later.headers["mcp-protocol-version"] == "2025-06-18"
            # The input schema is passed through as the server wrote it.
            spec = next(t for t in soul.tools if t.name == "fake__tool0")
            assert spec.input_schema == tools[0].input_schema
            assert spec.description == "(from fake) Say the text back."
        finally:
            await soul.toolbox.close()
        assert server.requests[-1].http_method == "DELETE" and not server.sessions  # the session is ended politely


async def test_names_are_sanitized_cut_and_never_collide(tmp_path, caplog):
    odd = [
        echo_tool("get.weather"),
        echo_tool("get_weather"),
        echo_tool(LONG),
        echo_tool("天气"),
        FakeTool("no_schema", lambda args: text_result("ok"), "", None),
    ]

    async def builtin_run(soul, **arguments):
        return Outcome.text("the built-in answered")

    builtin = SoulTool("my_srv__echo", "a built-in that happens to look like an MCP name", {}, builtin_run)
    caplog.set_level(logging.INFO, logger=LOGGER)
    async with FakeMcp(odd) as a, FakeMcp([echo_tool()]) as b, FakeMcp([echo_tool()]) as c:
        servers = [
            {"name": "weather", "url": a.url},
            {"name": "my.srv", "url": b.url},
            {"name": "my srv", "url": c.url},
        ]
        soul = soul_for(tmp_path, servers, extra_tools=[builtin])
        await refresh_tools(soul)
        try:
            names = soul.toolbox.names()
            mcp_names = names[len(soul.toolbox.builtin) :]
            assert all(NAME_RULE.match(name) for name in names)
            assert mcp_names == sorted(mcp_names) and len(set(names)) == len(names)
            assert {
                "weather__get_weather",
                "weather__get_weather_2",
                "weather____",
                "weather__no_schema",
                "my_srv__echo_2",
                "my_srv__echo_3",
            } <= set(mcp_names)
            assert f"weather__{LONG}"[:64] in mcp_names
            # The built-in keeps its name and still answers; the colliding MCP tools were renamed, loudly.
            result, ok = await use(soul, "my_srv__echo", {})
            assert ok and text_of(result) == "the built-in answered" and b.calls == c.calls == []
            renamed = [r.getMessage() for r in caplog.records if "which is taken" in r.getMessage()]
            assert len(renamed) == 3 and any("my_srv__echo_2" in line for line in renamed)
            # Each renamed tool reaches its own server.
            result, ok = await use(soul, "my_srv__echo_3", {"text": "to c"})
            assert ok and c.calls == [("echo", {"text": "to c"})] and b.calls == []
            # A tool without an input schema gets an empty object schema.
            spec = next(t for t in soul.tools if t.name == "weather__no_schema")
            assert spec.input_schema == {"type": "object"}
        finally:
            await soul.toolbox.close()
        # Same servers, same names: the naming is deterministic.
        again = soul_for(tmp_path / "again", servers, extra_tools=[builtin])
        await refresh_tools(again)
        await again.toolbox.close()
        assert again.toolbox.names() == names


async def test_sse_answers_and_a_ping_from_the_server(tmp_path):
    async with FakeMcp([echo_tool()], sse=True, ping_first=True) as server:
        soul = soul_for(tmp_path, [{"name": "fake", "url": server.url}])
        await refresh_tools(soul)
        try:
            result, ok = await use(soul, "fake__echo", {"text": "over SSE"})
            assert ok and text_of(result) == "echo: over SSE"
            # Each streamed request began with a ping; the client answered every one with an empty result.
            pongs = [r.message for r in server.requests if isinstance(r.message, dict) and "result" in r.message]
            assert len(pongs) == 3 and all(p["result"] == {} and p["id"].startswith("server-ping-") for p in pongs)
        finally:
            await soul.toolbox.close()


async def test_headers_and_bearer_token_reach_the_server(tmp_path):
    async with FakeMcp([echo_tool()], token="s3cret") as server:
        soul = soul_for(
            tmp_path,
            [{"name": "fake", "url": server.url, "auth": "bearer", "token": "s3cret", "headers": {"X-Team": "pip"}}],
        )
        await refresh_tools(soul)
        await soul.toolbox.close()
        assert "fake__echo" in soul.toolbox.names()
        assert all(r.headers["x-team"] == "pip" for r in server.requests)


async def test_an_unknown_protocol_version_is_refused_honestly(tmp_path, caplog):
    async with FakeMcp([echo_tool()], versions=("2024-11-05",)) as server:
        soul = soul_for(tmp_path, [{"name": "old", "url": server.url}])
        await refresh_tools(soul)
        await soul.toolbox.close()
    assert not any(name.startswith("old__") for name in soul.toolbox.names())
    assert any("'2024-11-05'" in r.getMessage() for r in caplog.records if r.name == LOGGER)


@pytest.mark.parametrize(
    "entry, message",
    [
        (
            {"name": "a", "url": "http://x/mcp", "headers": {"X-N": 1}},
            "mcp[0].headers must be an object of header names",
        ),
        ({"name": "a", "url": "http://x/mcp", "timeoutSeconds": 0}, "mcp[0].timeoutSeconds must be a number >= 1"),
        ({"name": "a", "url": "http://x/mcp", "auth": "bearer"}, 'mcp[0].token is needed when auth is "bearer"'),
        ({"name": "a", "url": "ftp://x"}, "mcp[0].url must be an http:// or https:// URL"),
    ],
)
def test_config_mistakes_name_the_key(entry, message):
    with pytest.raises(config.ConfigError, match=re.escape(message)):
        config.from_dict({"mcp": [entry]})


async def test_aws_sigv4_signs_every_request(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # the standard AWS chain: these variables, no ~/.aws
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    async with FakeMcp([echo_tool()], sigv4=("us-east-1", "bedrock-agentcore")) as server:
        soul = soul_for(
            tmp_path,
            [
                {
                    "name": "websearch",
                    "url": server.url,
                    "auth": "aws-sigv4",
                    "region": "us-east-1",
                    "service": "bedrock-agentcore",
                }
            ],
        )
        await refresh_tools(soul)
        assert "websearch__echo" in soul.toolbox.names()
        result, ok = await use(soul, "websearch__echo", {"text": "hi"})
        assert ok and text_of(result) == "echo: hi"
        await soul.toolbox.close()
    assert server.requests and all(r.headers["authorization"].startswith("AWS4-HMAC-SHA256") for r in server.requests)


async def test_aws_sigv4_without_a_region_is_left_out_loudly(tmp_path, caplog):
    soul = soul_for(tmp_path, [{"name": "aws", "url": "http://127.0.0.1:1/mcp", "auth": "aws-sigv4"}])
    await refresh_tools(soul)
    await soul.toolbox.close()
    assert soul.toolbox.names() == list(soul.toolbox.builtin)
    assert any('needs "region" and "service"' in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


# --- calls -----------------------------------------------------------------------------


async def test_output_is_capped_and_content_mapped(tmp_path):
    def big(args):
        return text_result("x" * 5000 + "THE END")

    def picture(args):
        return {
            "content": [
                {"type": "text", "text": "two pictures"},
                {"type": "image", "data": PNG_B64, "mimeType": "image/png"},
                {"type": "image", "data": PNG_B64, "mimeType": "image/jpeg"},  # mislabelled
                {"type": "image", "data": PNG_B64, "mimeType": ["image/png"]},  # not a type's name
                {"type": "image", "data": 12, "mimeType": "image/png"},  # not base64 text
                {"type": "resource_link", "uri": "file:///notes.txt", "name": "notes"},
            ]
        }

    def structured(args):
        return {"content": [], "structuredContent": {"temperature": 21}}

    tools = [
        FakeTool("big", big),
        FakeTool("picture", picture),
        FakeTool("structured", structured),
        FakeTool("silent", lambda args: text_result("")),
    ]
    async with FakeMcp(tools) as server:
        soul = soul_for(tmp_path, [{"name": "fake", "url": server.url, "maxOutputChars": 1000}])
        await refresh_tools(soul)
        try:
            result, ok = await use(soul, "fake__big", {})
            words = text_of(result)
            assert ok and len(words) < 1100 and "characters cut" in words and words.endswith("THE END")
            result, ok = await use(soul, "fake__picture", {})
            assert ok and [type(b).__name__ for b in result.content] == ["TextBlock", "ImageBlock"]
            assert result.content[1].data == PNG_B64 and result.content[1].media_type == "image/png"
            assert "left out: an image labelled image/jpeg" in text_of(result)
            assert "an image of type ['image/png'], which cannot be shown" in text_of(result)
            assert "an image that is not valid base64" in text_of(result)
            assert "[link: file:///notes.txt — notes]" in text_of(result)
            result, ok = await use(soul, "fake__structured", {})
            assert ok and text_of(result) == '{"temperature": 21}'
            result, ok = await use(soul, "fake__silent", {})  # never an empty text block
            assert ok and text_of(result) == "(no output)"
        finally:
            await soul.toolbox.close()


async def test_failures_reach_the_soul_as_failures(tmp_path):
    release = asyncio.Event()

    async def slow(args):
        await release.wait()
        return text_result("too late")

    tools = [
        FakeTool("refuse", lambda args: text_result("the door is locked", is_error=True)),
        FakeTool("crash", lambda args: 1 / 0),
        FakeTool("slow", slow),
        echo_tool(),
    ]
    async with FakeMcp(tools) as server:
        soul = soul_for(tmp_path, [{"name": "fake", "url": server.url, "timeoutSeconds": 1}])
        await refresh_tools(soul)
        try:
            result, ok = await use(soul, "fake__refuse", {})
            assert not ok and result.is_error and text_of(result) == "the door is locked"
            result, ok = await use(soul, "fake__crash", {})
            assert not ok and "error -32603" in text_of(result) and "division by zero" in text_of(result)
            result, ok = await use(soul, "fake__echo", {})  # the schema's required field is checked first
            assert not ok and "fake__echo needs text" in text_of(result) and "echo" not in dict(server.calls)
            result, ok = await use(soul, "fake__slow", {})
            assert not ok and "did not answer within 1 s" in text_of(result)
            release.set()
            server.tools = [echo_tool()]  # the server dropped a tool we know
            result, ok = await use(soul, "fake__refuse", {})
            assert not ok and "Unknown tool: refuse" in text_of(result)
        finally:
            await soul.toolbox.close()


async def test_a_server_that_went_away_and_came_back(tmp_path):
    port = free_port()
    async with FakeMcp([echo_tool()], port=port) as server:
        soul = soul_for(tmp_path, [{"name": "fake", "url": server.url}])
        await refresh_tools(soul)
    try:
        result, ok = await use(soul, "fake__echo", {"text": "anyone?"})
        assert not ok and "the MCP server fake cannot be reached" in text_of(result)
        # Restarted, it knows nothing of our session: the client starts a new one and the call goes through.
        async with FakeMcp([echo_tool()], port=port) as restarted:
            result, ok = await use(soul, "fake__echo", {"text": "back"})
            assert ok and text_of(result) == "echo: back"
            assert [m["method"] for m in (r.message for r in restarted.requests)] == [
                "tools/call",
                "initialize",
                "notifications/initialized",
                "tools/call",
            ]
            assert restarted.requests[0].headers["mcp-session-id"] not in restarted.sessions
    finally:
        await soul.toolbox.close()


# --- through the soul, with a model --------------------------------------------------


def sleep_long(body):
    return tool_use("sleep", {"minutes": 60})


async def test_the_soul_calls_an_mcp_tool_and_reads_its_answer(tmp_path):
    forecast = FakeTool(
        "forecast",
        lambda args: text_result(f"{args['city']}: sunny, 21°C"),
        "Tomorrow's weather.",
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    )
    camera = FakeTool(
        "snapshot", lambda args: {"content": [{"type": "image", "data": JPEG_B64, "mimeType": "image/jpeg"}]}
    )
    async with FakeMcp([forecast, camera], sse=True) as server, FakeAnthropic(default=sleep_long) as fake:
        fake.reply(
            tool_use("weather__forecast", {"city": "Oslo"}, text="Will it rain?"),
            tool_use("weather__snapshot", {}),
            tool_use("sleep", {"minutes": 60}),
        )
        # Virtual time moves only by what the soul sleeps. The 60-min sleep passes in two
        # pieces (a keep-warm refresh at 55 min, then 5 min); the sleep after the second
        # waking is held, so exactly two wakings happen.
        clock = StepClock(AFTERNOON)
        clock.hold(after=2)
        soul = build_soul(
            make_cfg(tmp_path, [{"name": "weather", "url": server.url}]), clock=clock, model=anthropic_model(fake)
        )
        async with Running(soul):
            await until(lambda: clock.held == 3, what="the second waking")
    first = fake.bodies[0]
    sent = {tool["name"]: tool for tool in first["tools"]}
    assert sent["weather__forecast"]["input_schema"] == forecast.input_schema
    assert tool_names(first)[-2:] == ["weather__forecast", "weather__snapshot"]  # after the built-ins, sorted
    assert server.calls[:2] == [("forecast", {"city": "Oslo"}), ("snapshot", {})]
    result = fake.bodies[1]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and not result.get("is_error")
    assert result["content"] == [{"type": "text", "text": "Oslo: sunny, 21°C"}]
    image = fake.bodies[2]["messages"][-1]["content"][0]["content"][0]
    assert image["type"] == "image" and image["source"]["data"] == JPEG_B64
    # Three requests in the first waking, a keep-warm refresh during the 60-min sleep,
    # then the second waking: its tool list is byte-identical, so the prompt cache holds.
    assert len(fake.bodies) == 5
    assert fake.bodies[3]["max_tokens"] == 1  # the keep-warm refresh
    assert fake.bodies[4]["tools"] == first["tools"]
    assert len(server.received("tools/list")) == 1  # listed once, not at every waking


async def test_a_server_down_at_start_is_found_at_a_later_waking(tmp_path, caplog):
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    caplog.set_level(logging.INFO, logger=LOGGER)
    async with FakeAnthropic(default=sleep_long) as fake:
        # Virtual time moves only by what the soul sleeps, and every sleep is held: only a nudge wakes it.
        clock = StepClock(AFTERNOON)
        clock.hold()
        soul = build_soul(make_cfg(tmp_path, [{"name": "late", "url": url}]), clock=clock, model=anthropic_model(fake))
        async with Running(soul):
            await until(lambda: clock.held == 1, what="the first sleep")
            assert len(fake.bodies) == 1
            assert not any(name.startswith("late__") for name in tool_names(fake.bodies[0]))
            warned = [r for r in caplog.records if r.levelno == logging.WARNING and r.name == LOGGER]
            assert len(warned) == 1 and "asking again at the next waking" in warned[0].getMessage()
            await soul.nudge(Nudge("still no server"))  # a second waking with the server still down: no second warning
            await until(lambda: clock.held == 2, what="the second waking")
            assert len(fake.bodies) == 2 and tool_names(fake.bodies[1]) == tool_names(fake.bodies[0])
            assert len([r for r in caplog.records if r.levelno == logging.WARNING and r.name == LOGGER]) == 1
            async with FakeMcp([echo_tool()], port=port):
                await soul.nudge(Nudge("the server is up"))
                await until(lambda: clock.held == 3, what="the third waking")
                assert len(fake.bodies) == 3
                assert tool_names(fake.bodies[2])[-1] == "late__echo"
                assert tool_names(fake.bodies[2])[:-1] == tool_names(fake.bodies[0])


# --- cross-checks with the official MCP SDK (PyPI `mcp`, a dev dependency) ---------------


@pytest.mark.parametrize("json_response", [True, False], ids=["json", "sse"])
async def test_our_client_against_the_official_server(tmp_path, json_response):
    """The soul lists and calls tools of a server built with the official SDK, answering JSON or SSE."""
    uvicorn = pytest.importorskip("uvicorn")
    mcpserver = pytest.importorskip("mcp.server.mcpserver")
    server = mcpserver.MCPServer("official")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    port = free_port()
    app = server.streamable_http_app(json_response=json_response)
    running = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    task = asyncio.create_task(running.serve())
    await until(lambda: running.started, what="the official server")
    try:
        soul = soul_for(tmp_path, [{"name": "official", "url": f"http://127.0.0.1:{port}/mcp"}])
        await refresh_tools(soul)
        try:
            spec = next(t for t in soul.tools if t.name == "official__add")
            assert (
                spec.input_schema["required"] == ["a", "b"] and spec.description == "(from official) Add two numbers."
            )
            result, ok = await use(soul, "official__add", {"a": 2, "b": 3})
            assert ok and text_of(result) == "5"
        finally:
            await soul.toolbox.close()
    finally:
        running.should_exit = True
        await task


@pytest.mark.parametrize("sse", [False, True], ids=["json", "sse"])
async def test_the_official_client_against_our_fake(sse):
    """The fake server is protocol-true enough for the official SDK's client: handshake, pages, calls, pings."""
    streamable_http = pytest.importorskip("mcp.client.streamable_http")
    session_module = pytest.importorskip("mcp.client.session")
    types = pytest.importorskip("mcp_types")
    async with FakeMcp([echo_tool(f"tool{i}") for i in range(3)], page_size=2, sse=sse, ping_first=sse) as fake:
        async with streamable_http.streamable_http_client(fake.url) as streams:
            async with session_module.ClientSession(streams[0], streams[1]) as session:
                assert (await session.initialize()).protocol_version == "2025-06-18"
                page = await session.list_tools()
                names = [tool.name for tool in page.tools]
                while page.next_cursor:
                    page = await session.list_tools(params=types.PaginatedRequestParams(cursor=page.next_cursor))
                    names += [tool.name for tool in page.tools]
                assert names == ["tool0", "tool1", "tool2"]
                result = await session.call_tool("tool1", {"text": "hi"})
                assert result.content[0].text == "echo: hi" and not result.is_error
    assert fake.calls == [("tool1", {"text": "hi"})]
    assert fake.requests[-1].http_method == "DELETE"
