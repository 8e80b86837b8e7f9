"""Secrets never stored or printed: the API key, and any user name or password written into
the judge server's URL (`https://user:pass@host/v1`).

A `Redactor` knows the secrets of one judge configuration and blanks them out of any text
before it is stored (raw outputs, the model name the server reports, error bodies that echo
them) or printed, in every form a server may echo them: as written, percent-encoded, JSON-escaped,
and the `Basic` header the client builds from the URL's user and password (base64 of
`user:password`). Whatever the configuration, it also blanks what looks like a credential
anywhere: an `Authorization: Basic` value that decodes to `user:password`, a long `Bearer`
token, a URL's `user:password@`, and API keys of the well-known shapes (`sk-…`, `hf_…`,
`AIza…`, `gsk_…`), so rows from another database (`calibrate merge`) are cleaned too.
`redact_url` shows a URL without its credentials.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable
from urllib.parse import quote, unquote, urlsplit, urlunsplit

MASK = "***"
MIN_SECRET = 4  # shorter "secrets" (a placeholder key like "x") would blank ordinary text

_BASIC = re.compile(r"\b(Basic\s+)([A-Za-z0-9+/]{4,}={0,2})")
_LOOKS_LIKE_A_CREDENTIAL = re.compile(
    r"\b(?P<keep>Bearer\s+)[A-Za-z0-9._~+/-]{16,}=*"  # a bearer token
    r"|(?<=://)[^/\s@:]+:[^/\s@]*(?=@)"  # user:password@ in a URL
    r"|\b(?:sk-|hf_|gsk_|AIza)[A-Za-z0-9_-]{16,}"  # OpenAI, Anthropic, DeepSeek; Hugging Face; Groq; Google
)


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


def basic_credentials(url: str | None) -> list[str]:
    """The values of the `Authorization: Basic` header a client builds from `url`'s user and
    password (base64 of `user:password`, decoded or as written)."""
    if not url:
        return []
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return []
    user, password = parts.username or "", parts.password or ""
    pairs = {f"{user}:{password}", f"{unquote(user)}:{unquote(password)}"}
    return [base64.b64encode(pair.encode()).decode() for pair in pairs]


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


def _basic_value(match: re.Match) -> str:
    """A `Basic` header value blanked when it decodes to `user:password`, else left alone
    (the word "Basic" in a judge's prose)."""
    try:
        decoded = base64.b64decode(match.group(2), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return match.group(0)
    return match.group(1) + MASK if ":" in decoded and decoded.isprintable() else match.group(0)


class Redactor:
    """Blanks out known secrets (as written, percent-encoded and JSON-escaped) and anything
    that looks like a credential from text."""

    def __init__(self, secrets: Iterable[str | None] = ()):
        values = {s for s in secrets if s and len(s) >= MIN_SECRET}
        values |= {quote(s, safe="") for s in values} | {json.dumps(s)[1:-1] for s in values}
        self.secrets = sorted(values, key=len, reverse=True)

    @classmethod
    def for_judge(cls, api_key: str | None, url: str | None) -> Redactor:
        """The secrets of one judge configuration: its key, and its URL's user and password
        (and the Basic header made of them)."""
        return cls([api_key, *url_credentials(url), *basic_credentials(url)])

    def __call__(self, text: str | None) -> str | None:
        if not text:
            return text
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        text = _BASIC.sub(_basic_value, text)
        return _LOOKS_LIKE_A_CREDENTIAL.sub(lambda match: (match.group("keep") or "") + MASK, text)

    def fields(self, values: dict) -> dict:
        """`values` with every text value redacted (the fields of a row about to be stored)."""
        return {name: self(value) if isinstance(value, str) else value for name, value in values.items()}
