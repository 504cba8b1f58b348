"""Hostile requests against soulstack's servers, over raw sockets: what `tools/fuzz` and the fuzz tests send.

Every server a stranger can reach gets the same treatment: a fixed corpus of the
inputs that once broke a server (JSON nested thousands deep, lone surrogates,
control characters, bogus charsets, header bytes that are not UTF-8, 10 MB
bodies, broken chunked framing, lying Content-Lengths, wrong methods, long
URLs, wrong types) plus, from the tests, hypothesis-made JSON. A request may be
refused (4xx), may succeed as documented, or may get an honest 503 from a
body that cannot act; it may never get any other 5xx, hang past `TIMEOUT_S`,
or leave the server unable to serve a clean request afterwards.
"""

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

TIMEOUT_S = 5.0
BIG_BODY = 10 * 1024 * 1024


@dataclass
class Endpoint:
    method: str
    path: str
    fields: tuple = ()  # the JSON body's string fields, each attacked in turn
    example: dict = field(default_factory=dict)  # a valid body, the base of every attack


@dataclass
class Answer:
    status: int | None  # None: the server closed without answering (fine for broken framing)
    seconds: float
    hung: bool = False


# Requests whose framing promises more than is sent: the client ends its side, as a
# broken client would, and the server must answer or close rather than wait for ever.
INCOMPLETE = ("Content-Length too long", "unfinished chunked")


def send(
    port: int, raw: bytes, host: str = "127.0.0.1", timeout: float = TIMEOUT_S, half_close: bool = False
) -> Answer:
    """Send raw bytes and read the status line of the answer."""
    started = time.monotonic()
    with socket.create_connection((host, port), timeout=timeout) as sock:
        try:
            sock.sendall(raw)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
        except OSError:  # the server answered early (413) and stopped reading: read what it said
            pass
        received = b""
        try:
            while b"\r\n" not in received:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                received += chunk
        except TimeoutError:
            return Answer(None, time.monotonic() - started, hung=True)
        except OSError:
            pass
    seconds = time.monotonic() - started
    line = received.split(b"\r\n", 1)[0].split()
    status = int(line[1]) if len(line) >= 2 and line[0].startswith(b"HTTP/") and line[1].isdigit() else None
    return Answer(status, seconds)


def request(method: str, path: str, body: bytes = b"", headers: dict | None = None, raw_headers: bytes = b"") -> bytes:
    head = [f"{method} {path} HTTP/1.1", "Connection: close"]
    headers = {
        "Host": "127.0.0.1",
        "Content-Type": "application/json",
        "Content-Length": str(len(body)),
        **(headers or {}),
    }
    head += [f"{name}: {value}" for name, value in headers.items() if value is not None]
    return "\r\n".join(head).encode() + b"\r\n" + raw_headers + b"\r\n" + body


# What a web page in the owner's browser can send without asking (docs/security.md): every host
# server refuses each of these with a 4xx, whatever the endpoint (the firmware is not a host server).
BROWSER_CASES = {
    "text/plain body": {"Content-Type": "text/plain"},
    "form body": {"Content-Type": "application/x-www-form-urlencoded"},
    "no Content-Type": {"Content-Type": None},
    "another site's Origin": {"Origin": "http://evil.example"},
    "Origin null": {"Origin": "null"},
    "rebinding Host": {"Host": "evil.example"},
}


def json_body(value) -> bytes:
    return json.dumps(value).encode()


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def corpus(endpoint: Endpoint, token: str | None = None):
    """(name, raw request bytes) for every fixed case against `endpoint`."""
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    method, path, example = endpoint.method, endpoint.path, endpoint.example

    def post(body: bytes, **headers):
        return request(method, path, body, {**auth, **headers})

    cases = [
        ("deep array 5000", post(deep(5000).encode())),
        ("deep object 2000", post(('{"a":' * 2000 + "1" + "}" * 2000).encode())),
        ("empty body", post(b"")),
        ("not JSON", post(b"{nope")),
        ("NUL bytes", post(b"\x00" * 64)),
        ("not UTF-8", post(b'{"x": "\xff\xfe"}')),
        ("JSON string", post(b'"just a string"')),
        ("JSON array", post(b"[1, 2, 3]")),
        ("huge integer", post(b"1" * 5000)),
        ("bogus charset", post(json_body(example), **{"Content-Type": "application/json; charset=bogus"})),
        ("latin-1 charset", post(json_body(example), **{"Content-Type": "application/json; charset=latin-1"})),
        (
            "non-UTF-8 Authorization",
            request(method, path, json_body(example), raw_headers=b"Authorization: Bearer \xff\xfe\xfd\r\n"),
        ),
        ("lowercase bearer, wrong token", request(method, path, json_body(example), {"Authorization": "bearer nope"})),
        ("10 MB body", post(b'{"x": "' + b"a" * BIG_BODY + b'"}')),
        ("Content-Length -1", request(method, path, b"{}", {**auth, "Content-Length": "-1"})),
        ("Content-Length too long", request(method, path, b"{}", {**auth, "Content-Length": "100"})),
        (
            "broken chunked",
            request(method, path, b"zz\r\nnope\r\n", {**auth, "Content-Length": None, "Transfer-Encoding": "chunked"}),
        ),
        (
            "unfinished chunked",
            request(method, path, b"5\r\n{}", {**auth, "Content-Length": None, "Transfer-Encoding": "chunked"}),
        ),
        ("long URL", request(method, path + "?" + "a" * 20000, json_body(example), auth)),
        ("odd path", request(method, "/%ff%fe/..%2f..%2fetc", json_body(example), auth)),
        ("surrogate in the path", request(method, path + "/%ED%A0%80", json_body(example), auth)),
    ]
    cases += [(case, post(json_body(example), **headers)) for case, headers in BROWSER_CASES.items()]
    for other in ("GET", "PUT", "DELETE", "PATCH", "POST"):
        if other != method:
            cases.append((f"wrong method {other}", request(other, path, json_body(example), auth)))
    for name in endpoint.fields:
        for label, value in (
            ("lone surrogate", "a \ud800 b"),
            ("escape sequence", "a \x1b[2J\x1b]0;owned\x07 b"),
            ("NUL", "a \x00 b"),
            ("deep", json.loads(deep(800))),
            ("number", 5),
            ("null", None),
            ("object", {"x": 1}),
            ("huge string", "x" * 200_000),
        ):
            body = dict(example, **{name: value})
            cases.append((f'"{name}": {label}', post(json.dumps(body).encode())))
    return cases


@dataclass
class Tally:
    """What one server answered."""

    sent: int = 0
    statuses: dict = field(default_factory=dict)
    slowest: float = 0.0
    failures: list = field(default_factory=list)  # (case, what went wrong)
    answers: dict = field(default_factory=dict)  # "METHOD /path case" -> status (None: closed or hung)

    def add(self, case: str, answer: Answer, allow_503: bool):
        self.sent += 1
        self.answers[case] = answer.status
        key = "hung" if answer.hung else ("closed" if answer.status is None else str(answer.status))
        self.statuses[key] = self.statuses.get(key, 0) + 1
        self.slowest = max(self.slowest, answer.seconds)
        if answer.hung:
            self.failures.append((case, f"no answer within {TIMEOUT_S:g} s"))
        elif answer.status is not None and answer.status >= 500 and not (allow_503 and answer.status == 503):
            self.failures.append((case, f"answered {answer.status}"))

    @property
    def server_errors(self) -> int:
        return sum(count for status, count in self.statuses.items() if status.isdigit() and int(status) >= 500)


def fuzz(port: int, endpoints, token: str | None = None, allow_503: bool = False, alive=None) -> Tally:
    """Send the whole corpus for every endpoint; `alive()` (optional) is asked after each request."""
    tally = Tally()
    for endpoint in endpoints:
        for case, raw in corpus(endpoint, token):
            try:
                answer = send(port, raw, half_close=case in INCOMPLETE)
            except OSError as error:
                tally.failures.append((f"{endpoint.path} {case}", f"could not connect: {error}"))
                continue
            tally.add(f"{endpoint.method} {endpoint.path} {case}", answer, allow_503)
            if alive is not None and not alive():
                tally.failures.append((f"{endpoint.path} {case}", "the server died"))
                return tally
    return tally


# --- what each server serves -----------------------------------------------------------------

BODY_ENDPOINTS = [
    Endpoint("POST", "/status", (), {}),
    Endpoint("POST", "/look", ("question",), {"question": "what is there?"}),
    Endpoint("POST", "/speak", ("text",), {"text": "hello"}),
    Endpoint("POST", "/express", ("emotion",), {"emotion": "happy"}),
]

# The robot's own addition beside Body Protocol (firmware/core/ota.py), served by the simulator (and a robot).
# /firmware/begin takes a text list and /firmware/file bytes, so the JSON corpus meets their refusals (415, 400,
# 413, the framing cases); /firmware/switch has nothing staged to switch to.
FIRMWARE_ENDPOINTS = [
    Endpoint("POST", "/firmware/info", (), {}),
    Endpoint("POST", "/firmware/begin", ("version",), {"version": "fuzz"}),
    Endpoint("POST", "/firmware/file?stage=1-fuzz&path=app.py&offset=0", (), {"x": "y"}),
    Endpoint("POST", "/firmware/switch", ("stage", "version"), {"stage": "1-fuzz", "version": "fuzz"}),
]
SIM_ENDPOINTS = BODY_ENDPOINTS + FIRMWARE_ENDPOINTS

SOUL_ENDPOINTS = [
    Endpoint("POST", "/nudge", ("reason", "words"), {"reason": "a face appeared"}),
    # An empty conversation is refused at once: a real one would start a turn (and a wait) per request.
    Endpoint("POST", "/v1/chat/completions", ("model",), {"model": "soul", "messages": []}),
    Endpoint("GET", "/health"),
    Endpoint("GET", "/v1/models"),
]

TTS_ENDPOINTS = [Endpoint("POST", "/tts", ("text", "voice"), {"text": "hello"})]

# ears takes 16 kHz PCM, not JSON: the JSON corpus meets its 415; the framing and size cases its stream.
EARS_ENDPOINTS = [Endpoint("POST", "/utterance", (), {}), Endpoint("GET", "/health")]

FLOCK_ENDPOINTS = [
    Endpoint(
        "POST", "/api/lists", ("text", "requester", "nest_id"), {"text": "- water the plants", "requester": "fuzz"}
    ),
    Endpoint(
        "POST", "/api/verdicts", ("item_id", "target"), {"item_id": "nope-1", "target": "triage", "approve": True}
    ),
    Endpoint("POST", "/api/nests", ("name",), {"name": "Fuzz nest", "crows": ["Hugin"]}),
    Endpoint(
        "POST",
        "/api/nests/todo/messages",
        ("author", "text", "to", "kind", "refers_to"),
        {"author": "owner", "text": "hello", "kind": "say"},
    ),
    Endpoint("POST", "/api/nests/todo/messages/todo-1/kind", ("kind",), {"kind": "say"}),
    Endpoint("GET", "/api/nests/todo/messages"),
    Endpoint("GET", "/api/trust"),
    Endpoint("GET", "/api/nests"),
    Endpoint("GET", "/api/crows"),
]


# --- the servers, as real `soulstack` processes ---------------------------------------------

SOULSTACK = [sys.executable, "-m", "soulstack.cli"]
TOKEN = "fuzz-token"


_GIVEN_PORTS: set = set()  # servers start side by side: no port is handed out twice before one listens
_PORTS_LOCK = threading.Lock()


def free_port() -> int:
    with _PORTS_LOCK:
        while True:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            if port not in _GIVEN_PORTS:
                _GIVEN_PORTS.add(port)
                return port


def free_port_pair() -> int:
    """A free port whose next one is free too (for servers that listen on PORT and PORT+1)."""
    while True:
        port = free_port()
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        with _PORTS_LOCK:
            if port + 1 in _GIVEN_PORTS:
                continue
            _GIVEN_PORTS.add(port + 1)
        return port


def call(port: int, method: str, path: str, body=None, token: str | None = None, timeout: float = 10.0):
    """(status, parsed JSON or raw bytes) of one clean request."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            raw = response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        raw, status = error.read(), error.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw


def wait_for_port(port: int, process, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[3:5]} exited with {process.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listened on {port} within {timeout:g} s")


@dataclass
class Server:
    name: str
    port: int
    process: subprocess.Popen
    endpoints: list
    token: str | None
    allow_503: bool = False  # bodies answer 503 honestly when they cannot act

    def alive(self) -> bool:
        return self.process.poll() is None


class Servers(contextlib.ExitStack):
    """Starts every host server (and the simulator behind the bridge) in a scratch folder."""

    def __init__(self, env: dict | None = None, soul_model: dict | None = None):
        super().__init__()
        self.env = dict(os.environ if env is None else env)
        self.env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{self.env.get('PATH', '')}"
        self.soul_model = soul_model or {"provider": "brainstem"}
        self.folder = Path(self.enter_context(tempfile.TemporaryDirectory(prefix="soulstack-fuzz-")))
        self.servers: dict[str, Server] = {}

    def _start(
        self, name, argv, port, endpoints, token, allow_503=False, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    ):
        log = open(self.folder / f"{name}.log", "ab")
        self.callback(log.close)
        process = subprocess.Popen(
            [*SOULSTACK, *argv], cwd=self.folder, env=self.env, stdin=stdin, stdout=stdout, stderr=log
        )
        self.callback(stop, process)
        server = Server(name, port, process, endpoints, token, allow_503)
        self.servers[name] = server
        return server

    def start_soul(self):
        port = free_port()
        config = self.folder / "soul.config.json"
        config.write_text(
            json.dumps(
                {
                    "soulDir": str(self.folder / "soul"),
                    "timezone": "UTC",
                    "model": {"retries": 0, **self.soul_model},
                    "persona": {"name": "Pip", "human": "Ana"},
                    # minIntervalSeconds 0: the fuzz's own valid nudges must not make the clean one after it
                    # wait a coalescing minute (host/soul/nudges/inbox.py) before it reaches the model.
                    "nudge": {"port": port, "token": TOKEN, "minIntervalSeconds": 0},
                    "loop": {"nightStartHour": 0, "nightEndHour": 0},
                }
            )
        )
        wait_for_port(port, self._start("soul", ["soul", "--config", str(config)], port, SOUL_ENDPOINTS, TOKEN).process)

    def start_terminal(self):
        port = free_port()
        server = self._start(
            "terminal",
            [
                "body",
                "terminal",
                "--port",
                str(port),
                "--token",
                TOKEN,
                "--nudge-url",
                f"http://127.0.0.1:{free_port()}/nudge",
            ],
            port,
            BODY_ENDPOINTS,
            TOKEN,
            allow_503=True,
            stdin=subprocess.PIPE,
        )
        wait_for_port(port, server.process)

    def start_sim_and_bridge(self):
        sim_port, bridge_port = free_port(), free_port()
        sim = self._start(
            "sim",
            ["body", "sim", "--serial", "--port", str(sim_port), "--token", TOKEN],
            sim_port,
            SIM_ENDPOINTS,
            TOKEN,
            allow_503=True,
            stdout=subprocess.PIPE,
        )
        pty = sim.process.stdout.readline().decode().split(": ", 1)[1].strip()
        # What the robot's screen shows keeps coming: drain it, or a full pipe would stall the simulator.
        threading.Thread(target=sim.process.stdout.read, daemon=True).start()
        wait_for_port(sim_port, sim.process)
        bridge = self._start(
            "bridge",
            ["bridge", "serial", "--device", pty, "--listen", f"127.0.0.1:{bridge_port}", "--token", TOKEN],
            bridge_port,
            BODY_ENDPOINTS,
            TOKEN,
            allow_503=True,
        )
        wait_for_port(bridge_port, bridge.process)
        wait_until(
            lambda: call(bridge_port, "POST", "/status", {}, TOKEN)[1].get("online") is True, "the bridge online"
        )

    def start_stackchan(self):
        """The xiaozhi adapter with no robot and no server behind it: its Body Protocol side still has to hold."""
        port, device_port = free_port(), free_port_pair()  # the adapter takes device_port + 1 for photos
        server = self._start(
            "stackchan",
            [
                "body",
                "stackchan",
                "--upstream",
                f"ws://127.0.0.1:{free_port()}/xiaozhi/v1/",
                "--port",
                str(port),
                "--token",
                TOKEN,
                "--device-listen",
                f"127.0.0.1:{device_port}",
                "--nudge-url",
                "",
            ],
            port,
            BODY_ENDPOINTS,
            TOKEN,
            allow_503=True,
        )
        wait_for_port(port, server.process)

    def start_tts(self):
        port = free_port()
        wait_for_port(
            port, self._start("tts", ["tts", "--port", str(port), "--token", TOKEN], port, TTS_ENDPOINTS, TOKEN).process
        )

    def start_ears(self):
        """ears with pocketsphinx, a soul and a body that are not there: what it hears still gets honest answers."""
        port = free_port()
        argv = ["ears", "--port", str(port), "--token", TOKEN, "--soul", f"http://127.0.0.1:{free_port()}"]
        argv += ["--body", f"stackchan=http://127.0.0.1:{free_port()}"]
        wait_for_port(port, self._start("ears", argv, port, EARS_ENDPOINTS, TOKEN).process)

    def start_flock(self):
        port = free_port()
        server = self._start(
            "flock",
            [
                "flock",
                "--port",
                str(port),
                "--data",
                str(self.folder / "crows"),
                "--provider",
                "brainstem",
                "--token",
                TOKEN,
            ],
            port,
            FLOCK_ENDPOINTS,
            TOKEN,
        )
        wait_for_port(port, server.process)

    def start_all(self):
        """Every server started side by side (each start waits for its own port), stopped side by side."""
        starts = (self.start_soul, self.start_terminal, self.start_sim_and_bridge, self.start_stackchan)
        starts += (self.start_tts, self.start_ears, self.start_flock)
        with ThreadPoolExecutor(len(starts)) as pool:
            errors = [error for error in pool.map(_raised, starts) if error is not None]
        self.callback(self._terminate_all)  # the last callback runs first: all are told, then each is waited for
        for error in errors:
            if not isinstance(error, RuntimeError):
                raise error
            # What the server said before it died is the why: its log's end (a dead one's, else the newest).
            logs = sorted(self.folder.glob("*.log"), key=lambda log: log.stat().st_mtime)
            dead = [self.folder / f"{s.name}.log" for s in self.servers.values() if s.process.poll() is not None]
            logs = [log for log in logs if log in dead] or logs
            said = logs[-1].read_text(errors="replace")[-1500:] if logs else ""
            raise RuntimeError(f"{error}; the log {logs[-1].name if logs else '-'} ends:\n{said}") from None
        return self

    def _terminate_all(self):
        for server in self.servers.values():
            if server.process.poll() is None:
                server.process.terminate()


def _raised(start):
    """The exception `start()` raised, or None."""
    try:
        start()
    except Exception as error:
        return error
    return None


def wait_until(condition, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            if condition():
                return
        time.sleep(0.2)
    raise RuntimeError(f"timed out waiting for {what}")


def stop(process: subprocess.Popen):
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --- after the fuzz: a clean request still does what it should ---------------------------------


def still_able(server: Server) -> str | None:
    """None when `server` still serves a clean scenario; else what failed."""
    port, token = server.port, server.token
    if server.name == "soul":
        status, answer = call(port, "POST", "/nudge", {"reason": "a clean nudge after the fuzz"}, token)
        if status != 202:
            return f"a clean nudge got {status} {answer}"
        status, answer = call(port, "GET", "/health", None, token)
        return None if status == 200 else f"/health got {status} {answer}"
    if server.name == "stackchan":  # no robot connected: it must say so honestly, and still answer
        status, answer = call(port, "POST", "/status", {}, token)
        if status != 200 or answer.get("online") is not False:
            return f"/status got {status} {answer}"
        status, answer = call(port, "POST", "/speak", {"text": "still here"}, token)
        return None if status == 503 else f"/speak with no robot got {status} {answer}"
    if server.name in ("terminal", "sim", "bridge"):
        status, answer = call(port, "POST", "/status", {}, token)
        if status != 200 or answer.get("online") is not True:
            return f"/status got {status} {answer}"
        if server.name == "terminal":
            status, answer = call(port, "POST", "/speak", {"text": "still here"}, token)
            return None if status == 200 else f"/speak got {status} {answer}"
        if server.name == "sim":  # the updater still answers, and the robot still runs the set it booted
            status, answer = call(port, "POST", "/firmware/info", {}, token)
            if status != 200 or answer.get("slot") != "root" or answer.get("restart_pending"):
                return f"/firmware/info got {status} {answer}"
        # The robot may still be saying the fuzz's long lines (its speech queue answers an honest 503
        # for minutes): its eyes show it still acts.
        status, answer = call(port, "POST", "/look", {"question": "still there?"}, token, timeout=30)
        return None if status == 200 and ("image" in answer or "text" in answer) else f"/look got {status} {answer}"
    if server.name == "tts":
        status, answer = call(port, "POST", "/tts", {"text": "still here"}, token, timeout=30)
        return None if status in (200, 503) else f"/tts got {status} {answer!r:.200}"  # 503: no espeak-ng here
    if server.name == "ears":  # a clean second of silence: heard, no words, said so (the soul is not there)
        headers = {"Content-Type": "audio/L16; rate=16000; channels=1", "X-Soulstack-Body": "stackchan"}
        headers["Authorization"] = f"Bearer {token}"
        req = urllib.request.Request(f"http://127.0.0.1:{port}/utterance", bytes(32000), headers, method="POST")
        try:
            urllib.request.urlopen(req, timeout=30)
            return "a second of silence was taken for words"
        except urllib.error.HTTPError as error:
            return None if error.code == 422 else f"a clean utterance got {error.code} {error.read()!r:.200}"
    if server.name == "flock":
        status, answer = call(
            port, "POST", "/api/lists", {"text": "- one clean item", "requester": "after-fuzz"}, token
        )
        return None if status == 202 else f"a clean list got {status} {answer}"
    return f"no clean scenario for {server.name}"


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="tools/fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated servers: soul,terminal,sim,bridge,stackchan,tts,ears,flock")
    args = parser.parse_args(argv)
    wanted = set(args.only.split(",")) if args.only else None
    print(f"{'server':<10} {'sent':>5} {'5xx':>4} {'slowest':>8}  answers by status")
    failed = 0
    with Servers() as servers:
        servers.start_all()
        for server in servers.servers.values():
            if wanted and server.name not in wanted:
                continue
            tally = fuzz(server.port, server.endpoints, server.token, server.allow_503, server.alive)
            problem = still_able(server) if server.alive() else "the server died"
            by_status = " ".join(f"{status}:{count}" for status, count in sorted(tally.statuses.items()))
            print(f"{server.name:<10} {tally.sent:>5} {tally.server_errors:>4} {tally.slowest:>7.2f}s  {by_status}")
            for case, what in tally.failures + ([("after the fuzz", problem)] if problem else []):
                failed += 1
                print(f"    FAIL {case}: {what}")
    print(f"fuzz_failures={failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
