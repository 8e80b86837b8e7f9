"""Work that takes seconds, run in a fresh interpreter while the app goes on showing items.

A thread of the app's own process would hold the interpreter's lock for much of that work and
keys would wait behind it; `multiprocessing` cannot start a child from inside Textual's
terminal driver. So the work and its arguments are pickled into a `python -c` child through its
standard input, and its result (or the exception it raised) comes back through its standard
output, to a `Future` that a waiting thread fills.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future


class ChildWorkError(RuntimeError):
    """The child process ended without handing back a result (killed, or it could not start)."""


def a_core_is_free() -> bool:
    """Whether the machine has a core to spare for a child process to do work at the same time
    as this one: the load average of the last minute below the number of cores plus a half (as
    `make -l` decides whether to start another job). On an oversubscribed machine a second
    process only adds the cost of its own interpreter and imports (`export c3` at a million
    items on 2 cores: 3.5-4.8 s with its child against 4.5-7.7 s without at load 1.9-2.0,
    9.5-11.7 s against 8.9-10.2 s at load 4)."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this system: assume the machine is not busy
        return True
    return load < (os.cpu_count() or 1) + 0.5


def call_named(module: str, function: str, *args):
    """`module.function(*args)`, the module imported where this runs: work handed to
    `in_child_process` by name, so that the parent never imports its module (the corrected
    scores' statistics take about a second to import)."""
    return getattr(importlib.import_module(module), function)(*args)


def in_child_process(future: Future, work: Callable, args: tuple, *, lower_priority: bool = True) -> None:
    """Run `work(*args)` in a fresh interpreter and hand its result, or its exception, to
    `future` from a thread that waits for it; a child that cannot finish gives `ChildWorkError`.
    A child still running when this process exits is ended. `lower_priority`: the child runs
    niced, behind this process (the app showing items); without it, at this process's priority
    (work this process will wait for)."""
    child = subprocess.Popen([sys.executable, "-c", "from calibrate.child_process import _child_main; _child_main()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    end = functools.partial(_end_child, child)
    atexit.register(end)

    def wait() -> None:
        try:
            out, _ = child.communicate(pickle.dumps((work, args, lower_priority)))
            ok, value = pickle.loads(out)
        except Exception as exc:  # noqa: BLE001 - whatever it is, the caller raises it where it takes the result
            end()
            future.set_exception(ChildWorkError(f"status {child.returncode}: {exc}"))
        else:
            (future.set_result if ok else future.set_exception)(value)
        atexit.unregister(end)

    threading.Thread(target=wait, name="calibrate child process", daemon=True).start()


def _end_child(child: subprocess.Popen) -> None:
    if child.poll() is None:
        child.kill()
        child.wait()


def _child_main() -> None:
    """The child process of `in_child_process`: one pickled (work, args, lower_priority) in, one
    pickled (True, result) or (False, exception) out."""
    work, args, lower_priority = pickle.loads(sys.stdin.buffer.read())
    if lower_priority and hasattr(os, "nice"):
        os.nice(10)  # the app showing items meanwhile comes first
    try:
        result = (True, work(*args))
    except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it where the result is taken
        result = (False, exc)
    sys.stdout.buffer.write(pickle.dumps(result))
