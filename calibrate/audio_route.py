"""The browser's way to hear an item: an aiohttp handler that serves a `.wav` from under the
audio root to whoever holds the token, and refuses everyone else.

`calibrate serve` runs the app in a browser (textual-serve, on aiohttp), often on a remote
machine whose speakers nobody hears; this route lets the browser play the file instead. It is
kept apart from the serve command so the login there decides what a valid token is: the
handler only asks the `token_ok` callable it is given.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

AUDIO_ROUTE = "/audio/{path:.+}"


def request_token(request: web.Request) -> str | None:
    """The token sent as `?token=…` or as `Authorization: Bearer …`."""
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        return header.removeprefix("Bearer ").strip() or None
    return request.query.get("token") or None


def audio_handler(
    audio_root: Path, token_ok: Callable[[str | None], bool]
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """A handler for AUDIO_ROUTE: 403 unless `token_ok(token)`, 404 for anything that is not a
    `.wav` file inside `audio_root` (no way out through `..` or links), else the file."""
    root = Path(audio_root).resolve()

    async def serve_audio(request: web.Request) -> web.StreamResponse:
        if not token_ok(request_token(request)):
            raise web.HTTPForbidden(text="a valid token is needed to hear the audio")
        file = (root / request.match_info["path"]).resolve()
        if not file.is_relative_to(root) or file.suffix.lower() != ".wav" or not file.is_file():
            raise web.HTTPNotFound(text="no such audio file")
        return web.FileResponse(file, headers={"Content-Type": "audio/wav", "Cache-Control": "no-store"})

    return serve_audio
