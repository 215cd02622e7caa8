"""``sim.timeline``: each pipe's busy share of a schedule, and the drawing ``python -m sim run --timeline``
writes. (The schedule of a real RTL run is checked in tests/test_pto_rtl.py.)"""

import subprocess
import sys
from pathlib import Path

import pytest

from rtl.isa import Opcode, Pipe
from sim.timeline import draw, overlapping, utilization


def test_utilization_is_the_union_of_each_pipes_intervals():
    schedule = [(Opcode.TLOAD, 0, 40), (Opcode.MGATHER_ROW, 30, 60),      # GM -> UB: [0, 60), overlapping
                (Opcode.TPARTADD, 60, 80), (Opcode.LOCAL_GATHER, 90, 100),  # vector: 30 cycles
                (Opcode.TSTORE, 80, 100)]                                  # UB -> GM: 20
    util = utilization(schedule)
    assert util == {Pipe.GM_TO_UB: 0.6, Pipe.UB_TO_GM: 0.2, Pipe.VECTOR: 0.3, Pipe.MATRIX: 0.0}
    assert utilization([]) == {p: 0.0 for p in Pipe}
    # over the program's cycles, from the first acceptance: the wait before the first start is nobody's
    assert utilization(schedule, accepted=[-100, 0, 0, 0, 0])[Pipe.GM_TO_UB] == pytest.approx(60 / 200)


def test_overlapping_counts_instructions_that_share_a_cycle_with_another_pipe():
    schedule = [(Opcode.TLOAD, 0, 40), (Opcode.MGATHER_ROW, 40, 60),      # same pipe, back to back: no
                (Opcode.TPARTADD, 50, 80),                                 # with MGATHER_ROW: both count
                (Opcode.TSTORE, 80, 90),                                   # starts as TPARTADD ends: no
                (Opcode.TSYNC, 90, 91), (Opcode.TGEMV, 95, 99)]            # TSYNC: in no pipe, not counted
    assert overlapping(schedule) == (2, 5)
    assert overlapping([]) == (0, 0)
    # an instruction no engine ran (start = end: rejected) neither overlaps nor is overlapped
    assert overlapping([(Opcode.TLOAD, 10, 10), (Opcode.TPARTADD, 0, 40)]) == (0, 2)
    assert overlapping([(Opcode.TLOAD, 0, 40), (Opcode.TPARTADD, 20, 20)]) == (0, 2)


def test_pipes_of_the_instruction_table():
    """The pipes issue #33 names: GM -> UB (TLOAD, MGATHER), UB -> GM (TSTORE), vector (the elementwise
    family, local_gather), matrix (the TGEMV family)."""
    from rtl.isa import INSTRUCTIONS
    want = {"transfer": None, "mgather": Pipe.GM_TO_UB, "local_gather": Pipe.VECTOR, "elementwise": Pipe.VECTOR,
            "gemv": Pipe.MATRIX}
    assert INSTRUCTIONS[Opcode.TSYNC].pipe is None          # the barrier: in no pipe, it waits for all
    for op, ins in INSTRUCTIONS.items():
        if op == Opcode.TSYNC:
            continue
        expect = want[ins.family] or (Pipe.GM_TO_UB if op == Opcode.TLOAD else Pipe.UB_TO_GM)
        assert ins.pipe == expect, op


def test_draw_writes_a_png(tmp_path):
    out = tmp_path / "t.png"
    util = draw([(Opcode.TLOAD, 0, 10), (int(Opcode.TGEMV.value), 10, 30), (Opcode.TSYNC, 30, 34)], out, title="x")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert util[Pipe.MATRIX] == pytest.approx(20 / 34)     # the barrier counts in the run, in no pipe
    # with the acceptances, each wait drawn as a line up to its bar, the run counted from the first one
    util = draw([(Opcode.TLOAD, 1, 10), (Opcode.TPARTADD, 12, 30)], out, accepted=[0, 1])
    assert util[Pipe.VECTOR] == pytest.approx(18 / 30)


def test_timeline_needs_an_rtl_run(tmp_path):
    # (from the repository's root, wherever pytest runs: ``-m sim`` and the example path need it)
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-m", "sim", "run", str(root / "examples/tpartadd.pto"), "--sim", "none",
                        "--timeline", str(tmp_path / "t.png")], capture_output=True, text=True, cwd=root)
    assert r.returncode == 2 and "--timeline draws an RTL run" in r.stderr, r.stderr


def test_instructions_in_flight_at_once_get_rows_of_their_own():
    """A pipe's instructions whose bars overlap (a concurrent unit's queue, an engine that overlaps) are drawn
    in different rows of its lane; one that starts after a row's bar has ended takes that row again; another
    pipe's rows are its own."""
    from sim.timeline import MAX_ROWS, _rows
    S, L = Opcode.TSTORE, Opcode.TLOAD
    rows, depth = _rows([(S, 0, 10), (S, 5, 15), (S, 10, 20), (L, 0, 30), (S, 16, 25)])
    assert rows == [0, 1, 0, 0, 1] and depth[Pipe.UB_TO_GM] == 2 and depth[Pipe.GM_TO_UB] == 1
    rows, depth = _rows([(S, k, 100) for k in range(MAX_ROWS + 2)])
    assert rows == [k % MAX_ROWS for k in range(MAX_ROWS + 2)] and depth[Pipe.UB_TO_GM] == MAX_ROWS
