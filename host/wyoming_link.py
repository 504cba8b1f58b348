"""What ears and tts share of Home Assistant's Wyoming protocol: a server's address and its `describe`.

Wyoming (PyPI `wyoming`, MIT) is one JSON header line per event, then its data
and payload. `soulstack ears --recogniser wyoming` speaks it to a speech-to-text
server (port 10300), `soulstack tts --voice wyoming:` to a text-to-speech one
(port 10200); both take the address the same way and ask `describe` at start.
"""

from urllib.parse import urlparse

CONNECT_S = 5.0


def uri_problem(uri: str) -> str | None:
    """What is wrong with a Wyoming server's address (None: tcp://HOST:PORT or unix://PATH)."""
    problem = f"{uri} is no Wyoming server's address: give tcp://HOST:PORT"
    try:
        parsed = urlparse(uri)  # raises on some (an unclosed IPv6 bracket: tcp://[::1)
        port = parsed.port  # and reading this on others (tcp://HOST:x)
    except ValueError:
        return problem
    if (parsed.scheme == "tcp" and parsed.hostname and port) or (parsed.scheme == "unix" and parsed.path):
        return None
    return problem


def client(uri: str, read_timeout: float):
    from wyoming.client import AsyncClient

    return AsyncClient.from_uri(uri, connect_timeout=CONNECT_S, read_timeout=read_timeout)


async def describe(uri: str, read_timeout: float = 10.0):
    """The server's `info` (wyoming.info.Info); OSError or asyncio.TimeoutError when it cannot be had
    (ConnectionError when it hangs up before answering)."""
    from wyoming.info import Describe, Info

    async with client(uri, read_timeout) as connection:
        await connection.write_event(Describe().event())
        while True:
            event = await connection.read_event()
            if event is None:
                raise ConnectionError("it hung up before describing itself")
            if Info.is_type(event.type):
                return Info.from_event(event)
