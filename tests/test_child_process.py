"""Work run in a child process hands back its result, its own exception, or ChildWorkError when
the child dies without answering."""

from __future__ import annotations

import os
from concurrent.futures import Future

import pytest

from calibrate.child_process import ChildWorkError, a_core_is_free, call_named, in_child_process


def test_the_result_comes_back_from_another_process():
    future = Future()
    in_child_process(future, os.getpid, ())
    assert future.result(timeout=60) != os.getpid()


def test_the_works_own_exception_is_raised_where_the_result_is_taken():
    future = Future()
    in_child_process(future, int, ("not a number",))
    with pytest.raises(ValueError, match="not a number"):
        future.result(timeout=60)


def test_a_child_that_dies_without_answering_gives_child_work_error():
    future = Future()
    in_child_process(future, os._exit, (3,))  # the child ends at once, writing nothing back
    with pytest.raises(ChildWorkError, match="status 3"):
        future.result(timeout=60)


def test_a_child_runs_niced_unless_this_process_waits_for_it():
    niceness = {}
    for lower in (True, False):
        future = Future()
        in_child_process(future, os.nice, (0,), lower_priority=lower)
        niceness[lower] = future.result(timeout=60)
    here = os.nice(0)
    assert niceness == {True: min(here + 10, 19), False: here}


@pytest.mark.parametrize(("load", "cores", "free"), [(0.2, 2, True), (2.4, 2, True), (2.5, 2, False), (4.0, 2, False),
                                                     (0.0, 1, True), (1.6, 1, False)])
def test_a_core_is_free_while_the_load_is_below_the_cores_and_a_half(monkeypatch, load, cores, free):
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    assert a_core_is_free() is free


def test_work_named_by_module_runs_where_the_module_is_imported():
    future = Future()
    in_child_process(future, call_named, ("os", "getpid"))
    assert future.result(timeout=60) != os.getpid()
