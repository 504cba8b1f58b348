"""`soulstack body-check URL`: run the Body Protocol v1 conformance checks against a body."""

import asyncio

from soulstack.protocol import shapes as protocol


def parse_endpoints(text: str) -> tuple:
    from soulstack.errors import UsageError

    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in protocol.ENDPOINTS]
    if unknown or not names:
        raise UsageError(f"--endpoints takes a comma list of {','.join(protocol.ENDPOINTS)}; not {text!r}")
    return names


def check_url(url: str, what: str = "URL", example: str = "http://127.0.0.1:9310") -> str:
    """`url` without a trailing slash, or a UsageError naming `what` (e.g. --nudge-url) and an example.

    The one check of a URL a person gives a command (config_checks.split_url says what one is)."""
    from soulstack.config_checks import split_url
    from soulstack.errors import UsageError

    if split_url(url) is None:
        raise UsageError(f"{what} must look like {example}, not {url!r}")
    return url.rstrip("/")


def nudge_url(url: str, flag: str = "--nudge-url") -> str:
    """A --nudge-url checked as `check_url` does; one that names no path gets the soul's /nudge, and a
    note on stderr says so (the soul serves nothing at /, so every nudge would be a 404 unsaid)."""
    import sys
    from urllib.parse import urlsplit

    from soulstack.commandline import DEFAULT_NUDGE_URL

    checked = check_url(url, flag, DEFAULT_NUDGE_URL)
    parts = urlsplit(checked)
    if parts.path:
        return checked
    completed = parts._replace(path=urlsplit(DEFAULT_NUDGE_URL).path).geturl()
    print(f"note: {flag} {url} names no path: nudges go to {completed}", file=sys.stderr, flush=True)
    return completed


def body_check(args) -> int:
    from soulstack.errors import UsageError
    from soulstack.protocol.check import endpoint_in_url, run_checks, summary

    url = check_url(args.url)
    slip = endpoint_in_url(url)
    if slip:  # a mistake in the command, not the body's: one line, exit 2
        raise UsageError(slip)
    endpoints = parse_endpoints(args.endpoints)
    results = asyncio.run(run_checks(url, args.token, endpoints))
    for result in results:
        print(result.line(args.strict), flush=True)
    print(summary(url, results, args.strict))
    return 1 if any(result.fails(args.strict) for result in results) else 0


def register(subparsers):
    parser = subparsers.add_parser(
        "body-check",
        help="check that a body keeps Body Protocol v1 (exit 0 only if it does)",
        description="Run the Body Protocol v1 conformance checks against the body at URL. "
        "One line per check, then a summary. The v1 rules (what the protocol says a body MUST do, "
        "and honesty) decide PASS/FAIL and the exit code; our stricter rules print WARN "
        "unless --strict makes them fail.",
    )
    parser.add_argument("url", metavar="URL", help="the body's base URL, e.g. http://127.0.0.1:9310")
    from soulstack.commandline import add_secret

    add_secret(
        parser, "--token", "BODY_TOKEN", "the body's bearer token; also checks that a missing or wrong token is refused"
    )
    parser.add_argument(
        "--endpoints",
        default=",".join(protocol.ENDPOINTS),
        help="comma list of the endpoints the body implements (default: %(default)s)",
    )
    parser.add_argument("--strict", action="store_true", help="our stricter rules fail too (exit 1), not only warn")
    parser.set_defaults(func=body_check)
