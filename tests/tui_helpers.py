"""Helpers for driving the annotation app in tests."""

from __future__ import annotations

import html
import re
from pathlib import Path

from calibrate.store import Store
from calibrate.tui import CalibrateApp
from calibrate.tui.status_bar import StatusBar


def make_app(db: Path, **options) -> CalibrateApp:
    """The app on `db`; on the demo, system sdm-alpha's items unless told otherwise (the screens
    and queues these tests check were drawn before the demo had a second system)."""
    options.setdefault("annotator", "tester")
    store = Store(db)
    try:
        if "sdm-alpha" in store.systems():
            options.setdefault("system", "sdm-alpha")
    finally:
        store.close()
    return CalibrateApp(str(db), **options)


def screen_text(app: CalibrateApp) -> str:
    """What the terminal shows, as plain text (from the screenshot export)."""
    svg = app.export_screenshot()
    lines = re.findall(r'<text[^>]*>(.*?)</text>', svg, flags=re.S)
    return html.unescape("".join(lines)).replace("\xa0", " ")


def status(app: CalibrateApp) -> str:
    return str(app.screen.query_one(StatusBar).content)


def told(app: CalibrateApp) -> list[str]:
    """The messages the app has shown as notifications."""
    return [n.message for n in app._notifications]


def current_item_id(app: CalibrateApp) -> int | None:
    view = app.screen.view
    return view.item.id if view else None


def rows(db: Path, sql: str = "SELECT action, label FROM annotations ORDER BY id") -> list[tuple]:
    store = Store(db)
    try:
        return [tuple(r) for r in store.conn.execute(sql)]
    finally:
        store.close()
