"""Plain helpers for the flock's tests: a flock on loopback, a real SSE reader, a scripted "brain"
for the fake Anthropic server, and the page in chromium (`Page`). Their fixtures are in conftest.py;
the real `soulstack flock`/`soulstack soul` processes in processes.py.

The brain answers by reading the request the real SDK sent: a forced `triage`
call gets a triage chosen from words in the item, the Elder and the crows get
text. Words in an item steer it: "split", "murder", "abuse", "badtriage"
(invalid twice), "fixtriage" (invalid once), "flaky" (the first crow fails),
"doomed" (every crow fails), "hang" (the Sentry never answers), "costly" (each
crow's answer costs 200 000 input tokens). Banter (a one-line aside between two
crows) answers with a line naming both crows, unless the item says "banterstall"
(it waits for `banter_release`), "banterfail" (a 400) or "banterjunk" (an
unusable, several-line answer).
"""

import asyncio
import json
from pathlib import Path

import aiohttp
from aiohttp import web
from playwright.async_api import expect

from soulstack.flock.app import FLOCK, make_flock_app
from soulstack.clocks import ManualClock
from soulstack.flock.lists.flow import FlockConfig
from soulstack.llm.anthropic import AnthropicModel
from soulstack.fakes.anthropic_api import FakeAnthropic, error, text, tool_use


class Brain:
    def __init__(self):
        self.seen = {}  # prompt -> times a crow was asked it
        self.hang = asyncio.Event()  # set it to let hanging calls finish
        self.banter_release = asyncio.Event()
        self.banter_bodies = []  # the requests that asked for banter

    def __call__(self, body):
        tools = [tool["name"] for tool in body.get("tools") or []]
        first = body["messages"][0]["content"]
        prompt = first if isinstance(first, str) else " ".join(b.get("text", "") for b in first)
        system = body.get("system")
        system = system if isinstance(system, str) else " ".join(b["text"] for b in system or [])
        if "triage" in tools:
            return self.triage(prompt, retry=len(body["messages"]) > 1)
        if "one short aside" in system:
            self.banter_bodies.append(body)
            return self.banter(system, prompt)
        if system.startswith("You are the Elder"):
            return text("The Elder's ruling: " + prompt.splitlines()[0])
        self.seen[prompt] = self.seen.get(prompt, 0) + 1
        if "doomed" in prompt or ("flaky" in prompt and self.seen[prompt] == 1):
            return error(400, "this crow lost its way")
        if "costly" in prompt:
            return text("done at great cost", usage={"input_tokens": 200_000})
        return text("done: " + prompt[-60:])

    def banter(self, system, prompt):
        speaker, to = system.split("Write exactly one line (under")[1].split(" that ")[1].split(" says to ")
        to = to.split(" about ")[0]
        if "banterstall" in prompt:
            return self._hang_banter()
        if "banterfail" in prompt:
            return error(400, "no words today")
        if "banterjunk" in prompt:
            return text(f"{speaker}: first line\n{speaker}: and a second")
        return text(f"{speaker}: Well flown, {to}. Caw.")

    async def _hang_banter(self):
        await self.banter_release.wait()
        return text("Too late to matter.")

    def triage(self, prompt, retry):
        if "hang" in prompt:
            return self._hang()
        if "badtriage" in prompt or ("fixtriage" in prompt and not retry):
            return tool_use("triage", {"mode": "flock-of-one", "task_type": "research", "subtasks": [], "reason": "?"})
        mode = "split" if "split" in prompt else "murder" if "murder" in prompt else "solo"
        subtasks = ["first part", "second part"] if mode == "split" else []
        task_type = "abuse" if "abuse" in prompt else "code" if "code" in prompt else "research"
        return tool_use("triage", {"mode": mode, "task_type": task_type, "subtasks": subtasks, "reason": "seen it"})

    async def _hang(self):
        await self.hang.wait()
        return tool_use("triage", {"mode": "solo", "task_type": "research", "subtasks": [], "reason": "late"})


class Flock:
    """A flock app on a real loopback port, a ManualClock, and a client session."""

    def __init__(
        self,
        data_dir: Path,
        model=None,
        config: FlockConfig | None = None,
        clock=None,
        rive=None,
        token=None,
        nest_config=None,
        jev=None,
        robot=None,
    ):
        self.data_dir, self.model, self.rive, self.token, self.robot = data_dir, model, rive, token, robot
        self.nest_config, self.jev = nest_config, jev
        self.config = config or FlockConfig(heartbeat_s=0.2)
        self.clock = clock or ManualClock()
        self.runner = None

    async def start(self, port=0):
        """Serve on `port` (0: any free one; a restart passes the old one so a page can find it again)."""
        self.runner = web.AppRunner(
            make_flock_app(
                self.data_dir,
                self.model,
                self.clock,
                self.config,
                token=self.token,
                rive=self.rive,
                nest_config=self.nest_config,
                jev=self.jev,
                robot=self.robot,
            )
        )
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}  # a locked flock's own client
        self.session = aiohttp.ClientSession(f"http://127.0.0.1:{self.port}", headers=headers)
        return self

    @property
    def flock(self):
        return self.runner.app[FLOCK]

    async def stop(self):
        await self.session.close()
        await self.runner.cleanup()

    async def post(self, path, body=None, *, data=None, content_type="application/json"):
        kwargs = {"data": data, "headers": {"Content-Type": content_type}} if data is not None else {"json": body}
        async with self.session.post(path, **kwargs) as response:
            raw = await response.read()
            return response.status, (json.loads(raw) if raw else None)

    async def get(self, path):
        async with self.session.get(path) as response:
            return response.status, await response.json()

    async def new_list(self, text, requester="ada", **extra):
        status, body = await self.post("/api/lists", {"text": text, "requester": requester, **extra})
        assert status == 202, body
        return body["list_id"]

    def events(self, list_id=None, last_event_id=None, nest_id=None, after=None):
        return SSE(self.session, list_id, last_event_id, nest_id, after)

    async def verdict(self, item_id, target, approve=True):
        return (await self.post("/api/verdicts", {"item_id": item_id, "target": target, "approve": approve}))[0]


class SSE:
    """A real SSE client: reads the stream line by line and parses messages and comments."""

    def __init__(self, session, list_id=None, last_event_id=None, nest_id=None, after=None):
        self.session, self.list_id, self.last_event_id = session, list_id, last_event_id
        self.nest_id, self.after = nest_id, after  # after: the ?after= a client without headers sends
        self.events = []  # every message read so far: dicts with id, event, data
        self.comments = []
        self.response = None

    async def __aenter__(self):
        params = {"list_id": self.list_id} if self.list_id else {}
        if self.nest_id:
            params["nest_id"] = self.nest_id
        if self.after is not None:
            params["after"] = str(self.after)
        headers = {"Last-Event-ID": str(self.last_event_id)} if self.last_event_id is not None else {}
        self.response = await self.session.get("/api/events", params=params, headers=headers)
        assert self.response.status == 200, await self.response.text()
        assert self.response.headers["Content-Type"].startswith("text/event-stream")
        return self

    async def __aexit__(self, *exc):
        self.response.close()

    async def _read_one(self):
        fields = {}
        while True:
            line = (await self.response.content.readline()).decode()
            if line == "":
                raise EOFError("the stream ended")
            line = line.rstrip("\r\n")
            if line == "":
                if fields:
                    message = {"id": int(fields["id"]), "event": fields["event"], "data": json.loads(fields["data"])}
                    self.events.append(message)
                    return message
                continue
            if line.startswith(":"):
                self.comments.append(line)
                continue
            key, _, value = line.partition(":")
            fields[key] = value[1:] if value.startswith(" ") else value

    async def next(self, timeout=5.0):
        return await asyncio.wait_for(self._read_one(), timeout)

    async def until(self, event, timeout=5.0, **match):
        """Read until an `event` whose data has every `match` field; return its data."""

        async def scan():
            while True:
                message = await self._read_one()
                if message["event"] == event and all(message["data"].get(k) == v for k, v in match.items()):
                    return message["data"]

        return await asyncio.wait_for(scan(), timeout)

    async def seen_or_next(self, event, timeout=5.0, **match):
        """Like `until`, but an event already read counts too (for events of several items interleaving)."""
        for message in self.events:
            if message["event"] == event and all(message["data"].get(k) == v for k, v in match.items()):
                return message["data"]
        return await self.until(event, timeout, **match)

    def names(self):
        return [message["event"] for message in self.events]


async def start_fake_model(brain=None):
    fake = await FakeAnthropic(default=brain or Brain()).start()
    model = AnthropicModel("claude-test", api_key="test-key", base_url=fake.base_url)
    return fake, model


# --- the page in chromium (playwright) ------------------------------------------------


CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]

# Records every class a crow figure wears, however briefly (take-off, landing, flying...).
WATCH_CROWS = """
window.crowClasses = new Set();
new MutationObserver(records => {
  for (const r of records) if (r.target.matches && r.target.matches("figure.crow")) {
    for (const c of r.target.classList) window.crowClasses.add(c);
  }
}).observe(document, { subtree: true, attributes: true, attributeFilter: ["class"] });
"""


def config():
    return FlockConfig(heartbeat_s=1.0, lists_per_minute=1000, model_backoff_s=0.01)


class Page:
    """One chromium page on the flock, collecting console errors and page errors."""

    def __init__(self, browser, tmp_path, width=1280, height=900):
        self.browser, self.tmp_path, self.size = browser, tmp_path, {"width": width, "height": height}
        self.errors = []

    async def __aenter__(self):
        self.context = await self.browser.new_context(viewport=self.size)  # its own cookies and storage
        self.page = await self.context.new_page()
        self.page.set_default_timeout(10_000)
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.on("dialog", lambda d: self.errors.append(f"dialog: {d.message}"))
        await self.page.add_init_script(WATCH_CROWS)
        return self.page

    async def __aexit__(self, *exc):
        await self.context.close()

    async def shot(self, name):
        path = self.tmp_path / f"{name}.png"
        await self.page.screenshot(path=path, full_page=True)
        print(f"screenshot: {path}")
        return path


async def send_list(page, text):
    await page.fill("#list-form textarea", text)
    await page.click("#list-form button")
    await expect(page.locator("#form-answer")).to_contain_text("is with the flock")
    assert await page.input_value("#list-form textarea") == ""  # cleared after a send
    return await page.get_attribute("#form-answer", "data-list-id")


async def approve(page, key):
    await page.locator(f'article[data-key="{key}"] button.approve').click()
    await expect(page.locator(f'article[data-key="{key}"]')).to_have_count(0)
