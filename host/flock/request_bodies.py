"""What the flock accepts in request bodies, and how a list's text becomes items.

Every function raises BadRequest with a message that says what to fix.
"""

import re

from soulstack.serving import BadRequest

MAX_ITEMS = 50
ITEM_MAX = 2000
REQUESTER_MAX = 100

# Leading list markers, as people stack them: "- ", "* ", "1. ", "2) ", "(3) ", then "[ ]"/"[x]".
# A bullet or number needs a space after it, so "-5 degrees" and "2.5 kg of flour" keep their text.
MARKER = re.compile(r"^(?:[-*+•·‣◦]\s+|\(?\d{1,3}[.)]\s+)?(?:\[[ xX✓✔-]?\]\s*)?")


def items_from_text(text: str) -> list:
    """One item per non-blank line, list markers and surrounding space removed."""
    items = []
    for number, line in enumerate(text.splitlines(), 1):
        # The added space lets a lone marker ("-", "1.") match, so it counts as a blank line.
        item = MARKER.sub("", line.strip() + " ", count=1).strip()
        if not item:
            continue
        if len(item) > ITEM_MAX:
            raise BadRequest(f"line {number} is {len(item)} characters; an item holds at most {ITEM_MAX}")
        items.append(item)
    if not items:
        raise BadRequest("text has no items: write one task per line")
    if len(items) > MAX_ITEMS:
        raise BadRequest(f"text has {len(items)} items; a list holds at most {MAX_ITEMS}")
    return items


def require_object(body) -> dict:
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    return body


def list_body(body) -> tuple:
    """-> (items, requester, nest_id) from a POST /api/lists body."""
    body = require_object(body)
    text, requester, nest_id = body.get("text"), body.get("requester"), body.get("nest_id", "todo")
    if not isinstance(text, str):
        raise BadRequest('"text" must be a string: the todo list, one item per line')
    if not isinstance(requester, str) or not (1 <= len(requester.strip()) <= REQUESTER_MAX):
        raise BadRequest(f'"requester" must be a string of 1-{REQUESTER_MAX} characters naming who asks')
    if not isinstance(nest_id, str):
        raise BadRequest('"nest_id" must be a string naming a nest')
    return items_from_text(text), requester.strip(), nest_id


def verdict_body(body) -> tuple:
    """-> (item_id, target, approve) from a POST /api/verdicts body."""
    body = require_object(body)
    item_id, target = body.get("item_id"), body.get("target")
    if not isinstance(item_id, str) or not item_id:
        raise BadRequest('"item_id" must be a string like "<list_id>-<n>"')
    if target not in ("triage", "output", "flag"):
        raise BadRequest('"target" must be "triage", "output" or "flag" (a nest flag\'s msg_id as item_id)')
    if "approve" not in body:
        raise BadRequest('"approve" is required (true or false); a missing answer is never read as a no')
    if not isinstance(body["approve"], bool):
        raise BadRequest('"approve" must be true or false')
    return item_id, target, body["approve"]


CORRECTABLE = ("say", "request", "claim", "deliver", "refer", "decline")


def kind_body(body) -> str:
    """-> the kind from a POST .../messages/{msg_id}/kind body (the owner's correction)."""
    kind = require_object(body).get("kind")
    if kind not in CORRECTABLE:
        raise BadRequest(f'"kind" must be one of {", ".join(CORRECTABLE)}')
    return kind
