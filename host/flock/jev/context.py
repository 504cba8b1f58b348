"""What Jev may know about a nest message besides its words (the contract's context, docs/events.md).

- `author_role`: "owner" or "crow";
- `to_role`: who it is addressed to: "owner", "crow" or "" (nobody, the room);
- `refers_kind`: the kind of the message its `refers_to` names ("" without one);
- `recent_kinds`: the kinds of the nest's last RECENT messages before it, oldest first;
- `open_request`: the nest's latest request in the last WINDOW messages, seen from the author:
  "claimed_by_me" (the author claimed it since), "to_me" (addressed to the author), "to_room"
  (addressed to nobody), "to_other" (to someone else), "mine" (the author asked it), or "".

The harness computes it from the stored nest (`nest_context`), and the data sets from their
written conversations (soulstack.flock.jev.dataset), with this one function, so Jev trains on the
context it is later asked with. A crow's message right after an open request addressed to it is
likely a claim, a decline or a delivery; after its own claim, likely a delivery.
"""

OWNER_KINDS = ("say", "request", "refer")  # what the owner may post; claim, deliver and decline are a crow's
RECENT = 3
WINDOW = 6


def role(name: str) -> str:
    if not name:
        return ""
    return "owner" if name == "owner" else "crow"


def open_request(earlier: list, author: str) -> str:
    """`earlier`: the nest's messages before this one, oldest first (dicts with kind, author, to)."""
    window = earlier[-WINDOW:]
    latest = next((i for i in range(len(window) - 1, -1, -1) if window[i]["kind"] == "request"), None)
    if latest is None:
        return ""
    request = window[latest]
    if request["author"] == author:
        return "mine"
    if any(m["author"] == author and m["kind"] == "claim" for m in window[latest + 1 :]):
        return "claimed_by_me"
    if request["to"] == author:
        return "to_me"
    return "to_room" if not request["to"] else "to_other"


def nest_context(earlier: list, author: str, to: str, referred: dict | None) -> dict:
    return {
        "author_role": role(author) or "crow",
        "to_role": role(to),
        "refers_kind": referred["kind"] if referred else "",
        "recent_kinds": [m["kind"] for m in earlier[-RECENT:]],
        "open_request": open_request(earlier, author),
    }


def context_words(
    author_role: str = "", to_role: str = "", refers_kind: str = "", recent_kinds=(), open_request: str = ""
) -> list:
    """The context as words beside the text's: each field alone, and the pairs that carry the most
    (who writes after what), so a linear model can weigh "a crow, right after a request to it"."""
    author, last = author_role or "none", (list(recent_kinds)[-1:] or ["none"])[0]
    words = [
        f"ctx_author_{author}",
        f"ctx_to_{to_role or 'none'}",
        f"ctx_ref_{refers_kind or 'none'}",
        f"ctx_last_{last}",
        f"ctx_open_{open_request or 'none'}",
        f"ctx_author_ref_{author}_{refers_kind or 'none'}",
        f"ctx_author_open_{author}_{open_request or 'none'}",
        f"ctx_author_last_{author}_{last}",
    ]
    return words + [f"ctx_recent_{kind}" for kind in dict.fromkeys(recent_kinds)]
