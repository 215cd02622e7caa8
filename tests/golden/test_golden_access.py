"""``golden.access``: the footprint of every instruction covers what the golden machine touches.

For random legal commands of every opcode, on two machines that agree inside the command's read ranges and
differ (random bytes) everywhere else: no byte outside the write ranges changes on either, and every byte
either one writes comes out the same on both (so nothing outside the read ranges reaches the result).
Then the hazard rules on hand-made pairs."""

import numpy as np
from hypothesis import HealthCheck, assume, event, given, settings, strategies as st

from golden import Machine, check
from golden.access import Access, access, hazards, tile_span
from golden.check import tile_view
from rtl.config import preset
from rtl.isa import DType, Layout, Opcode, Status

from golden_cmds import gm, legal_command, tile

CFG = preset("small")
GM_WINDOW = (0, 0x4000)           # every legal_command's GM lies in here


def _mask(ranges, size, offset=0):
    m = np.zeros(size, bool)
    for lo, hi in ranges:
        m[max(lo - offset, 0):max(hi - offset, 0)] = True
    return m


def _fill_indices(m, cmd, rng):
    """Indices around the table (MGATHER, out-of-range ones included) or within the source (LOCAL_GATHER)."""
    op = cmd["opcode"]
    if op in (Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM):
        size = cmd["gm"]["rows"] * (1 if op == Opcode.MGATHER_ROW else cmd["gm"]["cols"])
        t = cmd["src0"]
        m.write_tile(t, rng.integers(0, 2 * size, (t["rows"], t["cols"])).astype(np.uint32)
                     .view(np.int32 if t["dtype"] == DType.INT32 else np.uint32), region=(t["rows"], t["cols"]))
    if op == Opcode.LOCAL_GATHER:
        t = cmd["src1"]
        m.write_tile(t, rng.integers(0, cmd["src0"]["cols"], (t["rows"], t["cols"])).astype(np.uint16))


def _gm_bytes(m):
    lo, hi = GM_WINDOW
    return np.frombuffer(m.gm.read(lo, hi - lo), np.uint8).copy()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op=st.sampled_from(list(Opcode)), data=st.data(), seed=st.integers(0, 2 ** 32 - 1))
def test_access_covers_what_the_machine_touches(op, data, seed):
    cmd = legal_command(op, data.draw)
    assume(cmd is not None and check(cmd, CFG) == Status.OK)
    acc = access(cmd, CFG)
    rng = np.random.default_rng(seed)
    a = Machine(CFG)
    a.ub[:] = rng.integers(0, 256, CFG.ub_bytes, dtype=np.uint8)
    a.gm.write(GM_WINDOW[0], rng.integers(0, 256, GM_WINDOW[1] - GM_WINDOW[0], dtype=np.uint8).tobytes())
    _fill_indices(a, cmd, rng)
    b = Machine(CFG)
    ub_read, gm_read = _mask(acc.ub_reads, CFG.ub_bytes), _mask(acc.gm_reads, GM_WINDOW[1], GM_WINDOW[0])
    b.ub[:] = np.where(ub_read, a.ub, rng.integers(0, 256, CFG.ub_bytes, dtype=np.uint8))
    b.gm.write(GM_WINDOW[0], np.where(gm_read, _gm_bytes(a), rng.integers(0, 256, len(gm_read), dtype=np.uint8))
               .astype(np.uint8).tobytes())
    before = [(m.ub.copy(), _gm_bytes(m)) for m in (a, b)]
    for m in (a, b):
        assert m.execute(cmd, on_undefined="mask") == Status.OK
    after = [(m.ub.copy(), _gm_bytes(m)) for m in (a, b)]
    ub_write, gm_write = _mask(acc.ub_writes, CFG.ub_bytes), _mask(acc.gm_writes, GM_WINDOW[1], GM_WINDOW[0])
    for space, write, k in (("UB", ub_write, 0), ("GM", gm_write, 1)):
        changed = (before[0][k] != after[0][k]) | (before[1][k] != after[1][k])
        outside = np.flatnonzero(changed & ~write)
        assert not len(outside), f"{op.name} changed {space} byte {outside[0]:#x} outside its writes {acc}\n{cmd}"
        differ = np.flatnonzero(changed & (after[0][k] != after[1][k]))
        assert not len(differ), (f"{op.name}: {space} byte {differ[0]:#x} depends on a byte outside its reads "
                                 f"{acc}\n{cmd}")
    event(f"{op.name}: {'writes' if changed.any() or (before[0][0] != after[0][0]).any() else 'no change'}")


def test_tile_span_row_and_column_major():
    row = tile_view({"t": tile(0x100, 4, 8, DType.FP32, 3, 5)}, "t")
    assert tile_span(row) == (0x100, 0x100 + (2 * 8 + 5) * 4)
    col = tile_view({"t": tile(0x100, 4, 8, DType.FP16, 3, 5, Layout.COL_MAJOR)}, "t")
    assert tile_span(col) == (0x100, 0x100 + (4 * 4 + 3) * 2)
    assert tile_span(tile_view({"t": tile(0x100, 4, 8, DType.FP32, 0, 5)}, "t")) is None


def test_access_of_each_kind():
    f32 = DType.FP32
    load = {"opcode": Opcode.TLOAD, "dst": tile(0x400, 2, 8, f32), "gm": gm(0x1000, 2, 8, 64, f32)}
    assert access(load) == Access(ub_reads=((0x400, 0x440),), ub_writes=((0x400, 0x440),),
                                  gm_reads=((0x1000, 0x1060),))
    store = {"opcode": Opcode.TSTORE, "src0": tile(0x400, 2, 8, f32), "gm": gm(0x2000, 2, 8, 32, f32)}
    assert access(store) == Access(ub_reads=((0x400, 0x440),), gm_writes=((0x2000, 0x2040),))
    gather = {"opcode": Opcode.MGATHER_ROW, "dst": tile(0, 4, 8, f32, 3, 8),
              "src0": tile(0x100, 4, 1, DType.INT32, 3, 1), "gm": gm(0x3000, 10, 8, 64, f32)}
    acc = access(gather)
    assert acc.gm_reads == ((0x3000, 0x3000 + 9 * 64 + 32),) and not acc.gm_writes   # the whole table
    assert acc.ub_writes == ((0, 3 * 32),) and (0x100, 0x10C) in acc.ub_reads


def test_hazards():
    f32 = DType.FP32
    load = access({"opcode": Opcode.TLOAD, "dst": tile(0x400, 2, 8, f32), "gm": gm(0x1000, 2, 8, 64, f32)})
    store_it = access({"opcode": Opcode.TSTORE, "src0": tile(0x400, 2, 8, f32), "gm": gm(0x1000, 2, 8, 64, f32)})
    store_other = access({"opcode": Opcode.TSTORE, "src0": tile(0x800, 2, 8, f32),
                          "gm": gm(0x8000, 2, 8, 32, f32)})
    assert hazards(load, store_it) == {"RAW", "WAR"}        # UB: reads the loaded tile; GM: writes what it read
    assert hazards(store_it, load) == {"WAR", "RAW"}        # UB: overwrites what the store reads; GM: reads it
    assert hazards(load, store_other) == set()
    assert hazards(load, load) == {"RAW", "WAR", "WAW"}
    assert hazards(store_other, store_other) == {"WAW"}     # same GM lines; reading the same UB is no hazard
