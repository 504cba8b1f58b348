"""Where the robot uploads photos: the vision URL the adapter gave it in MCP `initialize`.

xiaozhi-esp32's `self.camera.take_photo` POSTs multipart form data (`question`,
and `file` = camera.jpg), often with chunked transfer encoding, to the vision
URL with `Authorization: Bearer <vision token>`, and hands whatever text the
server answers back as the tool's result. Each robot session gets its own path
(`/vision/<secret>`), so an upload is tied to its session without trusting a
header. An upload the adapter asked for (a /look) resolves that look; any other
goes to upstream's original vision URL unchanged, and its answer comes back.
"""

import email.parser
import email.policy
import logging
import secrets

import aiohttp
from aiohttp import web

from soulstack.serving import error_response, make_server_app, read_body

log = logging.getLogger(__name__)

SESSIONS_KEY = web.AppKey("vision_sessions", dict)
MAX_UPLOAD = 4 * 1024 * 1024
FORWARDED_HEADERS = ("Content-Type", "Authorization", "Device-Id", "Client-Id", "User-Agent")


def new_secret() -> str:
    return secrets.token_urlsafe(16)


def form_fields(content_type: str, body: bytes) -> dict:
    """{field name: bytes} of a multipart/form-data body; ValueError when it is not one."""
    if not content_type.lower().startswith("multipart/form-data"):
        raise ValueError(f"expected multipart/form-data, got {content_type or 'no Content-Type'}")
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
    if not message.is_multipart():
        raise ValueError("the multipart body has no parts")
    fields = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name:
            fields[name] = part.get_payload(decode=True) or b""
    return fields


async def upload(request: web.Request) -> web.Response:
    session = request.app[SESSIONS_KEY].get(request.match_info["secret"])
    if session is None:
        return error_response(404, "no robot conversation has this vision URL (it ended, or the URL is wrong)")
    body = await read_body(request, max_bytes=MAX_UPLOAD)  # bounded in size and in time to arrive
    try:
        fields = form_fields(request.headers.get("Content-Type", ""), body)
    except ValueError as error:
        return error_response(400, f"the upload is not a photo form: {error}")
    question = fields.get("question", b"").decode(errors="replace")
    if session.claims_upload(question):
        photo = fields.get("file", b"")
        if not photo.startswith(b"\xff\xd8"):
            session.photo_failed("the robot's upload held no JPEG photo")
            return error_response(400, 'the upload needs a JPEG in the "file" field')
        session.photo_arrived(photo)
        return web.json_response({"success": True, "response": "The photo reached the soul, who will look at it."})
    return await forward(session.original_vision, request, body)


async def forward(original: dict | None, request: web.Request, body: bytes) -> web.Response:
    """Pass an upload we did not ask for to upstream's own vision URL, unchanged; relay its answer."""
    if not original:
        return error_response(404, "no upstream vision service was configured for this robot")
    headers = {name: request.headers[name] for name in FORWARDED_HEADERS if name in request.headers}
    try:
        async with aiohttp.ClientSession() as http:
            async with http.post(
                original["url"], data=body, headers=headers, timeout=aiohttp.ClientTimeout(total=60)
            ) as answer:
                return web.Response(status=answer.status, body=await answer.read(), content_type=answer.content_type)
    except (aiohttp.ClientError, TimeoutError) as error:
        log.warning("upstream vision at %s failed: %s", original["url"], error)
        return error_response(502, f"the upstream vision service is unreachable ({type(error).__name__})")


def make_vision_app(sessions: dict) -> web.Application:
    # No bearer token: the robot sends upstream's vision token, not ours. The secret
    # path (one per robot conversation, handed only to that robot) is this app's
    # lock, so it may listen on the LAN address beside the robot port.
    app = make_server_app(client_max_size=MAX_UPLOAD, locked=True)
    app[SESSIONS_KEY] = sessions
    app.router.add_post("/vision/{secret}", upload)
    return app
