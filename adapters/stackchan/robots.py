"""Which robots may connect, and which one is the soul's body.

How a xiaozhi robot proves itself (checked against the real peers):

- xiaozhi-esp32 sends `Authorization: Bearer <token>`, `Device-Id` (its Wi-Fi
  MAC) and `Client-Id` (a UUID kept in flash) on every WebSocket it opens. The
  token is whatever `websocket.token` its OTA answer last gave it: xiaozhi-server
  hands out "" (no token, no header) unless `server.auth.enabled`, and then a
  token it signs for that one robot: HMAC-SHA256 under `server.auth_key` of
  `client_id|device_id|timestamp`, URL-safe base64 without padding, then
  `.timestamp`; it refuses one older than `server.auth.expire_seconds` (30 days
  by default). The adapter checks those with the same key (`--device-auth-key`);
  such a token also proves the Device-Id, which no one else can claim.
- py-xiaozhi sends `Bearer <SYSTEM_OPTIONS.NETWORK.WEBSOCKET_ACCESS_TOKEN>` from
  its config.json (its settings window edits it; an OTA answer with a token
  overwrites it): a fixed token, checked against `--device-token`.
- Browser clients cannot set headers, so xiaozhi-server also reads
  `device-id`, `client-id` and `authorization` from the query string; so do we.

Pairing: robots other than the body's are still relayed to the server (see
`RobotGate`), but only the paired robot acts as the body or nudges the soul.
"""

import base64
import hashlib
import hmac
import logging
import time
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from soulstack.serving import bearer_matches

log = logging.getLogger(__name__)

XIAOZHI_TOKEN_MAX_AGE_S = 30 * 24 * 3600  # xiaozhi-server's default server.auth.expire_seconds
CLOCK_SLACK_S = 300  # a server whose clock runs ahead of ours signs "future" tokens


@dataclass(frozen=True)
class Robot:
    """Who is at the other end of one robot connection."""

    device_id: str  # "" when it sent none
    client_id: str
    peer: str  # its address, for the log
    authenticated: bool  # a token was required and it had the right one

    def __str__(self):
        return f"{self.device_id or '(no Device-Id)'} from {self.peer}"


def same_device(device_id: str) -> str:
    """A Device-Id as it is compared: trimmed, lower case, a MAC's dashes as colons."""
    return device_id.strip().lower().replace("-", ":")


def sign_xiaozhi_token(auth_key: str, client_id: str, device_id: str, timestamp: int | None = None) -> str:
    """A token as xiaozhi-server's OTA hands it to one robot (core/auth.py AuthManager.generate_token)."""
    timestamp = int(time.time()) if timestamp is None else timestamp
    digest = hmac.new(auth_key.encode(), f"{client_id}|{device_id}|{timestamp}".encode(), hashlib.sha256).digest()
    return f"{base64.urlsafe_b64encode(digest).decode().rstrip('=')}.{timestamp}"


def xiaozhi_token_valid(token: str, auth_key: str, client_id: str, device_id: str, now: float | None = None) -> bool:
    signature, _, stamp = token.partition(".")
    if not stamp.isdigit() or not client_id or not device_id:
        return False
    age = (time.time() if now is None else now) - int(stamp)
    if not -CLOCK_SLACK_S <= age <= XIAOZHI_TOKEN_MAX_AGE_S:
        return False
    expected = sign_xiaozhi_token(auth_key, client_id, device_id, int(stamp)).partition(".")[0]
    return hmac.compare_digest(signature.encode("utf-8", "surrogatepass"), expected.encode())


def robot_header(request, name: str) -> str:
    """A header the robot sent, or the same-named query parameter (browser clients), or ""."""
    value = request.headers.get(name)
    if value is None:
        values = parse_qs(urlsplit(request.path).query).get(name.lower())
        value = values[0] if values else ""
    return value.strip()


class RobotGate:
    """Who may open a robot conversation (the token), and which robot is the body (the pairing).

    A robot other than the body's, with the right token, is still relayed to the
    xiaozhi-server, not refused: the server's OTA points every robot it serves at
    this adapter, so refusing would silently take the owner's other robots (a
    second StackChan, py-xiaozhi on a laptop) off their own server. Relayed,
    they talk to it as they did before the adapter existed, and the server
    authenticates them itself; they just never act as the body (no /look,
    /speak, /express through them) and never nudge the soul.
    """

    def __init__(self, device_token: str | None = None, auth_key: str | None = None, device_id: str | None = None):
        self.device_token = device_token or None
        self.auth_key = auth_key or None
        # --device-id: the one robot the owner chose. A MAC copied from a router's page is often upper
        # case or dashed; the robot sends lower case with colons, so both are compared as `same_device` reads.
        self.pinned = same_device(device_id or "") or None
        self.paired: str | None = self.pinned

    @property
    def checks_tokens(self) -> bool:
        return bool(self.device_token or self.auth_key)

    def identify(self, request, peer: str) -> Robot:
        return Robot(
            robot_header(request, "Device-Id"),
            robot_header(request, "Client-Id"),
            peer,
            authenticated=self.checks_tokens,
        )

    def refusal(self, request) -> tuple[int, str] | None:
        """Why a robot's WebSocket upgrade is refused (status, text), or None to let it in."""
        if request.headers.get("Origin") is not None:
            # Robots send no Origin; a browser always does, and a web page may open a
            # WebSocket to any address (no CORS for WebSockets): it must not pose as a robot.
            return 403, "a web page may not connect as a robot\n"
        if not self.checks_tokens:
            return None
        authorization = robot_header(request, "Authorization")
        if self.device_token and bearer_matches(authorization, self.device_token):
            return None
        scheme, _, token = authorization.partition(" ")
        if (
            self.auth_key
            and scheme.lower() == "bearer"
            and xiaozhi_token_valid(
                token.strip(), self.auth_key, robot_header(request, "Client-Id"), robot_header(request, "Device-Id")
            )
        ):
            return None
        return 401, "wrong or missing device token (see the robot's websocket token in docs/stackchan-xiaozhi.md)\n"

    def is_body(self, robot: Robot) -> bool:
        """Whether `robot` is (or now becomes) the body: the pinned robot, else the first to come online."""
        if not robot.device_id:
            log.warning("robot %s sent no Device-Id: relayed, but it cannot be the body", robot)
            return False
        if self.paired is None:
            self.paired = same_device(robot.device_id)
            log.info("paired with robot %s; pass --device-id to choose", robot.device_id)
        if same_device(robot.device_id) == self.paired:
            return True
        log.info("robot %s is relayed to the server but is not the body (the body is %s)", robot, self.paired)
        return False
