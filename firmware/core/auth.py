"""Bearer-token check for the Wi-Fi endpoints.

The compare takes the same time whether the first or the last byte differs, so
a neighbour on the Wi-Fi cannot guess the token byte by byte from response
timing. MicroPython has no hmac.compare_digest, hence the hand-written loop.
"""


def same_secret(given, expected):
    """True when the two strings are equal, compared in time that depends only on their lengths."""
    a = given.encode() if isinstance(given, str) else bytes(given)
    b = expected.encode() if isinstance(expected, str) else bytes(expected)
    diff = len(a) ^ len(b)
    if not b:
        return diff == 0
    for i in range(len(a)):
        diff |= a[i] ^ b[i % len(b)]
    return diff == 0


def bearer_ok(authorization, token):
    """Whether an Authorization header value carries `token`. No token configured: everyone may call."""
    if not token:
        return True
    if not authorization:
        return False
    prefix = "Bearer "
    if authorization[: len(prefix)].lower() != prefix.lower():
        return False
    return same_secret(authorization[len(prefix) :].strip(), token)
