"""GM faults in the golden machine (golden/faults.py, ``Machine.faults``; docs/semantics.md, "AXI errors"):
which transfers meet a fault (reads by whole bus words, writes by the bytes written), the status, what is
left undefined, and that nothing else changes."""

import numpy as np
import pytest

from golden import AmbiguousFault, GmFaults, Machine
from golden.faults import bus_hull
from rtl.config import preset
from rtl.isa import DType, OobMode, Opcode, Status

from golden_cmds import cmd, gm, tile

CFG = preset("small")
W = CFG.axi_data_bytes              # 16: the bus word
O = Opcode


def machine(faults=None, seed=1):
    m = Machine(CFG, faults=faults)
    rng = np.random.default_rng(seed)
    m.ub[:] = rng.integers(0, 256, CFG.ub_bytes, dtype=np.uint8)
    m.gm.write(0x1000, rng.integers(0, 256, 0x1000, dtype=np.uint8).tobytes())
    return m


def test_bus_hull():
    assert bus_hull(0x1003, 0x1005, 16) == (0x1000, 0x1010)
    assert bus_hull(0x1010, 0x1021, 16) == (0x1010, 0x1030)
    assert bus_hull(0x1010, 0x1010, 16) == (0x1010, 0x1010)


def test_windows_are_checked():
    with pytest.raises(ValueError, match="empty"):
        GmFaults(read=((0x10, 0x10),))
    f = GmFaults(read=[[1, 2]], write=[(3, 9)])
    assert f.read == ((1, 2),) and GmFaults.from_json(f.to_json()) == f
    assert not GmFaults() and f


# a TLOAD of 3 lines of 6 uint8 at 0x1002 + 32 * line: each line lies in the bus word [0x1000 + 32 l, +16)
T = tile(0x100, 3, 6, DType.UINT8)
TLOAD = {"opcode": O.TLOAD, "dst": T, "gm": gm(0x1002, 3, 6, 32, DType.UINT8)}


@pytest.mark.parametrize("window,hit", [
    ((0x1020, 0x1021), True),       # line 1's bus word, before its bytes: the whole word is read
    ((0x104f, 0x1050), True),       # line 2's bus word, after its bytes
    ((0x1010, 0x1020), False),      # between line 0's word and line 1's: never read
    ((0x1060, 0x2000), False),      # after the last line's word
])
def test_tload_read_fault_by_bus_word(window, hit):
    clean, m = machine(), machine(GmFaults(read=(window,)))
    ub = m.ub.copy()
    status = m.execute(TLOAD)
    assert clean.execute(TLOAD) == Status.OK
    if hit:
        assert status == Status.AXI_READ_ERROR
        assert (m.last_undefined == m.footprint(T)).all()           # the destination's valid region
        assert (m.ub == ub).all()                                   # left as it was here
    else:
        assert status == Status.OK and m.last_undefined is None
        assert (m.ub == clean.ub).all()
    assert m.last_gm_undefined == []


@pytest.mark.parametrize("window,hit", [
    ((0x3025, 0x3026), True),       # line 1's fifth byte
    ((0x3026, 0x3030), False),      # line 1's bus word after its bytes: strobed off, not written
    ((0x3000, 0x3020), True),       # all of line 0
])
def test_tstore_write_fault_by_bytes(window, hit):
    st = {"opcode": O.TSTORE, "src0": T, "gm": gm(0x3000, 3, 6, 32, DType.UINT8)}
    clean, m = machine(), machine(GmFaults(write=(window,)))
    status = m.execute(st)
    assert clean.execute(st) == Status.OK
    if hit:
        assert status == Status.AXI_WRITE_ERROR
        assert m.last_gm_undefined == [(0x3000, 0x3006), (0x3020, 0x3026), (0x3040, 0x3046)]
        assert m.gm.read(0x3000, 0x60) == bytes(0x60)              # nothing written here
    else:
        assert status == Status.OK and m.last_gm_undefined == []
        assert m.gm.read(0x3000, 0x60) == clean.gm.read(0x3000, 0x60)
    assert m.last_undefined is None


def test_read_fault_does_not_touch_tstore_and_write_fault_not_tload():
    m = machine(GmFaults(read=((0x3000, 0x3100),), write=((0x1000, 0x1100),)))
    assert m.execute(TLOAD) == Status.OK
    assert m.execute({"opcode": O.TSTORE, "src0": T, "gm": gm(0x3000, 3, 6, 32, DType.UINT8)}) == Status.OK


def _gather_row(oob, indices):
    c = cmd(O.MGATHER_ROW, oob=oob)                 # table: 10 rows of 8 fp16 (16 bytes) at 0x2000, stride 32
    return c, np.array([[i] for i in indices] + [[0]] * (4 - len(indices)), np.int32)


@pytest.mark.parametrize("oob,indices,window,status", [
    (OobMode.CLAMP, [1, 4, 4], (0x2080, 0x2081), Status.AXI_READ_ERROR),   # row 4's first byte
    (OobMode.CLAMP, [1, 4, 4], (0x2060, 0x2061), Status.OK),               # row 3: not indexed
    (OobMode.CLAMP, [1, 4, 40], (0x2120, 0x2130), Status.AXI_READ_ERROR),  # 40 clamps to row 9
    (OobMode.WRAP, [1, 4, 13], (0x2060, 0x2070), Status.AXI_READ_ERROR),   # 13 wraps to row 3
    (OobMode.ZERO, [1, 4, 13], (0x2120, 0x2130), Status.OK),               # 13 reads nothing
])
def test_mgather_row_reads_only_indexed_rows(oob, indices, window, status):
    c, idx = _gather_row(oob, indices)
    m = machine(GmFaults(read=(window,)))
    m.write_tile(c["src0"], idx, region=(3, 1))
    ub = m.ub.copy()
    assert m.execute(c) == status
    if status != Status.OK:
        assert (m.last_undefined == m.footprint(c["dst"])).all() and (m.ub == ub).all()


def test_mgather_elem_reads_by_bus_word():
    c = cmd(O.MGATHER_ELEM, oob=OobMode.CLAMP)      # table: 80 fp16 at 0x2000
    idx = np.zeros((4, 8), np.uint32)
    idx[:3, :6] = 17                                # element 17: bytes 0x2022-0x2023, bus word 0x2020
    for window, status in (((0x202f, 0x2030), Status.AXI_READ_ERROR), ((0x2030, 0x2040), Status.OK)):
        m = machine(GmFaults(read=(window,)))
        m.write_tile(c["src0"], idx, region=(3, 6))
        assert m.execute(c) == status


def test_undefined_gather_with_a_table_fault_is_ambiguous():
    c, idx = _gather_row(OobMode.UNDEFINED, [1, 40, 2])
    m = machine(GmFaults(read=((0x2100, 0x2101),)))     # row 8: not indexed, but 40 reads who knows what
    m.write_tile(c["src0"], idx, region=(3, 1))
    with pytest.raises(AmbiguousFault, match="MGATHER_ROW"):
        m.execute(c, on_undefined="mask")
    m.faults = GmFaults(read=((0x4000, 0x4001),))       # outside the table: no question
    assert m.execute(c, on_undefined="mask") == Status.OK and m.last_undefined is not None


def test_illegal_commands_meet_no_fault():
    m = machine(GmFaults(read=((0, 1 << 20),), write=((0, 1 << 20),)))
    bad = dict(TLOAD, gm=gm(0x1001, 3, 6, 32, DType.UINT16))          # type mismatch: rejected first
    assert m.execute(bad) not in (Status.OK, Status.AXI_READ_ERROR)
