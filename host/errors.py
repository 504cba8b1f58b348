"""User errors: the one exception every command raises for a mistake a person can fix.

`soulstack` prints its message as one line on stderr and exits 2. It lives on
the ground floor so features raise it without importing the command line.
"""


class UsageError(Exception):
    """A mistake the user can fix; its message is the one line they see."""
