"""The Textual driver of the app in a terminal: Textual's own, writing to a terminal that may go
away while the app runs.

When the terminal closes (a dropped SSH connection, a killed pane or window) the app is hung
up on and leaves as `q` does. Textual writes the screen from a thread of its own through a
queue of 30 writes; the first write to the gone terminal fails, that thread dies, and the app,
drawing its last frames and restoring the terminal as it leaves, waits forever for room in a
queue no one empties: the process would stay, holding the database open and its item's lease.
Here the thread's writes to a terminal that is gone are dropped instead (there is no one left
to read them), so the app ends.

The hang-up comes with a SIGCONT, which Textual takes for the end of a Ctrl-Z: it starts the
terminal over (a second writer thread, a second input thread, the whole screen laid out and
drawn again). Here only a SIGCONT after Textual's own stop does that.
"""

from __future__ import annotations

from typing import IO

from textual.drivers.linux_driver import LinuxDriver


class _UntilGone:
    """A text stream that passes writes to `stream` until one fails (the terminal is gone),
    then drops them."""

    def __init__(self, stream: IO[str]):
        self.stream = stream
        self.gone = False

    def write(self, text: str) -> None:
        if not self.gone:
            try:
                self.stream.write(text)
            except OSError:
                self.gone = True

    def flush(self) -> None:
        if not self.gone:
            try:
                self.stream.flush()
            except OSError:
                self.gone = True

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()


class TerminalDriver(LinuxDriver):
    def __init__(self, *args, **kwargs) -> None:
        self._stopped = False  # whether Textual stopped the app (Ctrl-Z: SIGTSTP) and resumes it on SIGCONT
        super().__init__(*args, **kwargs)
        self._file = _UntilGone(self._file)  # what Textual's writer thread writes to

    def _sigtstp_application(self, *args) -> None:
        self._stopped = self._auto_restart
        super()._sigtstp_application(*args)

    def _sigcont_application(self, *args) -> None:
        if self._stopped:  # not a hang-up's, nor a `kill -CONT` of a process that was not stopped
            self._stopped = False
            super()._sigcont_application(*args)
