"""BodyClient: how the soul (and the checker, and the bridge's tests) call a body.

Every failure — a non-2xx answer, a timeout, a refused connection, an answer of
the wrong shape — raises one `BodyError(status, message)`, so callers handle a
body that did not respond in exactly one place and never mistake it for success.
A request the protocol forbids (an empty `speak`, one over the cap) is refused
here, the one check on the caller's side, before anything is sent: `ProtocolError`
naming the problem (the body checks again on its side).
"""

import aiohttp

from soulstack.errors import connection_failure
from soulstack.protocol import shapes as protocol

DEFAULT_TIMEOUT_S = 60.0


class BodyError(Exception):
    """The body did not do what was asked. `status` is the HTTP status, or 0 when none came back."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status
        self.message = message


class BodyClient:
    """Talks Body Protocol v1 to one body.

    `endpoints` maps endpoint name -> URL (as in soul.config.json's
    `body.endpoints`); `BodyClient.at(base_url)` builds the usual `/status`,
    `/look`, ... URLs. Use as an async context manager, or call `close()`.
    """

    def __init__(self, endpoints: dict, token: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S):
        self.endpoints = dict(endpoints)
        self.token = token
        self.timeout_s = timeout_s
        self._session: aiohttp.ClientSession | None = None

    @classmethod
    def at(
        cls, base_url: str, token: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S, endpoints=protocol.ENDPOINTS
    ):
        base = base_url.rstrip("/")
        return cls({name: f"{base}/{name}" for name in endpoints}, token=token, timeout_s=timeout_s)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def close(self):
        if self._session is not None:
            await self._session.close()
            self._session = None

    def has(self, endpoint: str) -> bool:
        return endpoint in self.endpoints

    def _headers(self):
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    async def call(self, endpoint: str, payload: dict, timeout_s: float | None = None) -> dict:
        """POST `payload` to `endpoint`; returns the validated answer or raises BodyError.

        ProtocolError, before anything is sent, when `payload` is not a request the protocol allows."""
        url = self.endpoints.get(endpoint)
        if url is None:
            raise BodyError(0, f"this body has no /{endpoint} endpoint")
        payload = protocol.validate_request(endpoint, payload)
        if self._session is None:
            self._session = aiohttp.ClientSession()
        timeout = aiohttp.ClientTimeout(total=timeout_s or self.timeout_s)
        try:
            async with self._session.post(url, json=payload, headers=self._headers(), timeout=timeout) as response:
                try:
                    answer = await response.json(content_type=None)
                except ValueError:
                    answer = None
                if not 200 <= response.status < 300:
                    message = answer.get("message") if isinstance(answer, dict) else None
                    raise BodyError(response.status, message or response.reason or "the body refused")
        except TimeoutError:
            raise BodyError(0, f"/{endpoint} did not answer within {timeout.total:g} s") from None
        except aiohttp.ClientConnectorError as error:  # its own text is aiohttp's, "ssl:default" and all
            why = connection_failure(error.os_error)
            raise BodyError(0, f"/{endpoint} at {url} could not be reached ({why})") from None
        except aiohttp.ClientError as error:
            raise BodyError(0, f"/{endpoint} could not be reached: {error}") from None
        if answer is None:
            raise BodyError(response.status, f"/{endpoint} answered without a JSON body")
        try:
            return protocol.validate_response(endpoint, answer)
        except protocol.ProtocolError as error:
            raise BodyError(response.status, f"/{endpoint} answered in the wrong shape: {error}") from None

    async def status(self, timeout_s: float | None = None) -> dict:
        return await self.call("status", {}, timeout_s)

    async def look(self, question: str = "") -> dict:
        return await self.call("look", {"question": question})

    async def speak(self, text: str) -> dict:
        return await self.call("speak", {"text": text})

    async def express(self, emotion: str) -> dict:
        return await self.call("express", {"emotion": emotion})
