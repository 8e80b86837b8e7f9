"""The browser's way to hear an item: an aiohttp handler that serves one clip of one item, for
`calibrate serve`, whose login middleware refuses every request without the token first.

`calibrate serve` runs the app in a browser (textual-serve, on aiohttp), often on a remote
machine whose speakers nobody hears; this route lets the browser play the file instead. A URL
names an item and the position of its clip (`/audio/17/0`), never a path, so nothing but the
stored clips can be fetched; the lookup is the caller's (`find_clip`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web


def audio_handler(find_clip: Callable[[int, int], Path | None]) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """A handler for AUDIO_ROUTE: 404 unless `find_clip(item, position)` names an existing
    `.wav`, else the file (the login is checked before, by serve's middleware)."""

    async def serve_audio(request: web.Request) -> web.StreamResponse:
        try:
            item_id, position = int(request.match_info["item"]), int(request.match_info["position"])
        except ValueError:
            raise web.HTTPNotFound(text="no such audio clip") from None
        file = find_clip(item_id, position)
        if file is None or file.suffix.lower() != ".wav" or not file.is_file():
            raise web.HTTPNotFound(text="no such audio clip")
        return web.FileResponse(file, headers={"Content-Type": "audio/wav", "Cache-Control": "no-store"})

    return serve_audio
