"""No cell outlives its budget, whatever it sends: the grader's windows measured from outside.

A :class:`Session` in a real sandbox runs a few cells with a budget of BUDGET CPU seconds each;
every wait of the grader (a cell, the names defined) is recorded with the CPU seconds the
sandbox used during it, read from /proc as the grader reads them. A cell that computes 60 CPU
seconds after half a message, or after a reply it forged for itself, is stopped within one
budget of the window it is in (plus the grader's polling interval), and the time it took past
its own cell is charged to the next one.
"""
import pytest

from course_lib.exercises import guard
from course_lib.grading.sandbox import Limits, claim_uid
from course_lib.grading.session import POLL, QUICK, Session
from _grading import IMPORTS, needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.sandbox]

BUDGET = 2.0
SLACK = QUICK + 2 * POLL + 0.25          # the first reading, one polling interval late, clock ticks

FRAME = """
import json, os, struct, sys, time
def frame(message):
    head = json.dumps(message).encode()
    return struct.pack("<QI", len(head), 0) + head
control = int(sys.argv[1])                # the runner's socket: the learner's code can write to it
"""
BURN = """
start = time.process_time()
while time.process_time() - start < 60:   # 60 CPU s
    pass
"""


def _graded(cells: list[str]):
    """(the session, its windows: (budget, CPU seconds used), what start() raised or returned)."""
    session = Session(cells, Limits(cell_seconds=BUDGET, memory_bytes=1 << 30, disk_bytes=16 << 20), claim_uid())
    windows, wait = [], session.wait

    def recorded(cpu_seconds, cpu_left, limit=1 << 30):
        before = session.sandbox.usage().cpu
        try:
            return wait(cpu_seconds, cpu_left, limit)
        finally:
            windows.append((min(cpu_seconds, cpu_left), session.sandbox.usage().cpu - before))
    session.wait = recorded
    try:
        outcome = session.start()
    except guard.Ended as ended:
        outcome = ended
    finally:
        session.kill()
    return session, windows, outcome


def _within_budgets(windows) -> None:
    assert windows, "no window recorded"
    assert max(used for _, used in windows) >= BUDGET - 0.1, windows          # it did compute
    for budget, used in windows:
        assert used <= budget + SLACK, windows


def test_half_a_message_then_computing_is_stopped_at_the_cells_budget():
    session, windows, outcome = _graded([IMPORTS, FRAME + 'os.write(control, frame({"cell": 2})[:7])\n' + BURN, "x = 1"])
    _within_budgets(windows)
    assert session.too_long == {2: f"cell 2 ran longer than {BUDGET:g} s"}, session.too_long
    assert isinstance(outcome, dict) and outcome["defined"]["x"] == "int", outcome      # the rest ran without it


def test_a_reply_forged_for_its_own_cell_only_moves_its_time_to_the_next_cell_and_no_further():
    forge = FRAME + 'os.write(control, frame({"cell": 2, "error": None, "line": None}))\n' + BURN
    session, windows, outcome = _graded([IMPORTS, forge, "x = 1"])
    _within_budgets(windows)
    assert session.too_long == {3: f"cell 3 ran longer than {BUDGET:g} s"}, session.too_long
    assert isinstance(outcome, guard.Ended), outcome         # the next try: the names' window, stopped too
