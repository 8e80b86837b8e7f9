"""Secrets never stored or printed: the API key, and any user name or password written into
the judge server's URL (`https://user:pass@host/v1`).

A `Redactor` knows the secrets of one judge configuration and blanks them out of any text
before it is stored (error bodies that echo the key, raw outputs) or printed; `redact_url`
shows a URL without its credentials.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import quote, unquote, urlsplit, urlunsplit

MASK = "***"
MIN_SECRET = 4  # shorter "secrets" (a placeholder key like "x") would blank ordinary text


def url_credentials(url: str | None) -> list[str]:
    """The user name and password written into `url`, if any (decoded and as written)."""
    if not url:
        return []
    parts = urlsplit(url)
    found = []
    for value in (parts.username, parts.password):
        if value:
            found += [value, unquote(value)]
    return found


def redact_url(url: str | None) -> str:
    """`url` with its user name and password replaced by ***."""
    if not url:
        return ""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, f"{MASK}@{host}", parts.path, parts.query, parts.fragment))


class Redactor:
    """Blanks out known secrets (and their URL-encoded forms) from text."""

    def __init__(self, secrets: Iterable[str | None]):
        values = {s for s in secrets if s and len(s) >= MIN_SECRET}
        values |= {quote(s, safe="") for s in values}
        self.secrets = sorted(values, key=len, reverse=True)

    def __call__(self, text: str | None) -> str | None:
        if not text:
            return text
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        return text
