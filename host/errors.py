"""User errors: the one exception every command raises for a mistake a person can fix.

`soulstack` prints its message as one line on stderr and exits 2. It lives on
the ground floor so features raise it without importing the command line.
"""

import os
import socket


class UsageError(Exception):
    """A mistake the user can fix; its message is the one line they see."""


def connection_failure(error: Exception) -> str:
    """A failed connection in a few words, for a line that names the address itself (asyncio's and
    aiohttp's own texts repeat it, and a resolver's errno is one strerror cannot name)."""
    if isinstance(error, TimeoutError):
        return "no answer in time"
    if isinstance(error, socket.gaierror):
        return "its host name does not resolve"
    number = getattr(error, "errno", None)
    return os.strerror(number) if number else str(error) or type(error).__name__
