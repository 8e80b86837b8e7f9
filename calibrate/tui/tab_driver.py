"""The Textual driver of a browser tab's app (`calibrate serve` names it in the app's environment):
Textual's web driver, ending the app when its input ends, and telling serve what waits to be saved.

A tab's app reads the browser's keys from a pipe that only `calibrate serve` writes to. When the
server is gone, however it ended (`kill -9` included, which leaves it no chance to end its tabs),
the kernel closes that pipe and the app reads end of file. Textual's web driver then only stops
reading: the app would run on with no one to use it, holding its item's lease and the database
open. This driver leaves the app as `q` does instead, which gives the held items back. End of
file is the server's death as the app itself sees it, at once and on any system; a watch of the
parent process would poll, and Linux's parent-death signal is Linux's only and follows the
server's thread that started the app, not the server.

When the tab closes, serve asks the app to quit and ends it soon after, unless the app has told
it (`unsaved`, a meta packet on the app's output, which serve reads until the app ends) that
something its person did waits for another writer to be saved: then serve gives it as long as a
closed terminal's app takes to save it (`LEFT_WAIT`), and names it in its log if it was not.
"""

from __future__ import annotations

from textual import messages
from textual.drivers.web_driver import WebDriver

from calibrate.model import UNSAVED_META


class TabDriver(WebDriver):
    def on_meta(self, packet_type: str, payload: dict[str, object]) -> None:
        """The tab was closed (serve says "quit"): the app leaves as it does when its terminal
        closes (`CalibrateApp.leave`: a decision waiting for another writer is saved first)."""
        if packet_type == "quit" and hasattr(self._app, "leave"):
            self._app.call_from_thread(self._app.leave)
        else:
            super().on_meta(packet_type, payload)

    def unsaved(self, what: str | None) -> None:
        """Tell serve what the person did that waits for another writer ("ana's label 'yes' on
        item #3"), or None once nothing does (it was saved, or refused)."""
        self.write_meta({"type": UNSAVED_META, "what": what})

    def run_input_thread(self) -> None:
        """Read the input until it ends; if the app was not stopping, its server is gone: leave."""
        super().run_input_thread()
        if not self.exit_event.is_set():
            self._app.post_message(messages.ExitApp())
