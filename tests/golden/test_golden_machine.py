"""golden.Machine: byte-exact UB/GM effects, illegal commands change nothing, undefined results, overlap."""

import numpy as np
import pytest

from rtl.config import preset
from rtl.isa import Command, decode, DType, encode, Layout, OobMode, Opcode, Status
from golden.numerics import DTYPE_NUMPY
from golden import Machine, UndefinedResult, ops

from golden_cmds import OPERAND_OPS, cmd, gm, tile, base_cmds
from golden_helpers import rand_tile, ubits, same_bits
import golden_oracle as oracle

CFG = preset("small")
ROW, COL = Layout.ROW_MAJOR, Layout.COL_MAJOR
O, D = Opcode, DType


def fresh(seed=0):
    m = Machine(CFG)
    m.ub[:] = np.random.default_rng(seed).integers(0, 256, CFG.ub_bytes, dtype=np.uint8)
    return m


@pytest.mark.parametrize("dt", list(DType))
@pytest.mark.parametrize("layout", [ROW, COL])
def test_tload_tstore_strided_exact_bytes(dt, layout):
    m = fresh(dt.value)
    rng = np.random.default_rng(dt.value + 50)
    size = DTYPE_NUMPY[dt].itemsize
    vr, vc = 3, 5
    lines, line_len = (vr, vc) if layout == ROW else (vc, vr)
    stride = (line_len + 3) * size
    img = rand_tile(rng, dt, (lines, line_len))
    for l in range(lines):
        m.gm.write(0x1000 + l * stride, ubits(img[l]).tobytes())
    gm_before = m.gm.copy()
    t = tile(0x120, 4, 7, dt, vr, vc, layout)
    before = m.ub.copy()
    assert m.execute({"opcode": O.TLOAD, "dst": t, "gm": gm(0x1000, vr, vc, stride, dt)}) == Status.OK
    logical = img if layout == ROW else img.T
    assert same_bits(m.read_tile(t)[:vr, :vc], logical)
    changed = np.nonzero(m.ub != before)[0]
    allowed = m.footprint(t)
    assert allowed[changed].all()                          # nothing outside the valid region
    assert (m.ub[~allowed] == before[~allowed]).all()
    # element (i, j) at base + (i * cols + j) * size (row-major) / base + (j * rows + i) * size (col-major)
    i, j = 2, 4
    off = (i * 7 + j) if layout == ROW else (j * 4 + i)
    assert bytes(m.ub[0x120 + off * size: 0x120 + (off + 1) * size]) == ubits(logical[i:i + 1, j]).tobytes()
    # TSTORE to another region with a different stride, canaries in the gaps stay
    m.gm.write(0x3000, b"\xAA" * 4096)
    st = stride + 2 * size
    assert m.execute({"opcode": O.TSTORE, "src0": t, "gm": gm(0x3000, vr, vc, st, dt)}) == Status.OK
    for l in range(lines):
        assert m.gm.read(0x3000 + l * st, line_len * size) == ubits(img[l]).tobytes()
        assert m.gm.read(0x3000 + l * st + line_len * size, 2 * size) == b"\xAA" * 2 * size
    assert m.gm.read(0x1000, 256) == gm_before.read(0x1000, 256)


def test_tstore_overlapping_lines_later_wins():
    m = Machine(CFG)
    t = tile(0, 2, 4, D.UINT8)
    m.write_tile(t, np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.uint8))
    assert m.execute({"opcode": O.TSTORE, "src0": t, "gm": gm(0x100, 2, 4, 2, D.UINT8)}) == Status.OK
    assert m.gm.read(0x100, 6) == bytes([1, 2, 5, 6, 7, 8])


@pytest.mark.parametrize("op", OPERAND_OPS)
def test_illegal_commands_change_nothing(op):
    m = fresh(3)
    m.gm.write(0x2000, bytes(range(256)) * 4)
    ub, pages = m.ub.copy(), m.gm.image()
    c = cmd(op, **{"dst.base": 0x101, "src0.base": 0x101})
    assert m.execute(c) == Status.UB_MISALIGNED
    assert (m.ub == ub).all() and m.gm.image() == pages
    assert m.execute({"opcode": 0x55}) == Status.UNKNOWN_OPCODE
    assert (m.ub == ub).all()


def test_tsync_changes_nothing_and_ignores_its_fields():
    """TSYNC has no operands: whatever its other fields hold (here a misaligned, out-of-range tile and a
    reserved dtype), it answers OK and changes nothing, also in a configuration without any engine."""
    m = fresh(4)
    ub, pages = m.ub.copy(), m.gm.image()
    junk = dict(cmd(O.TPARTADD, **{"dst.base": 0x101, "src0.dtype": 13}), opcode=O.TSYNC)
    assert m.execute(junk) == Status.OK
    assert (m.ub == ub).all() and m.gm.image() == pages
    assert Machine(CFG, supported={O.TSYNC}).execute({"opcode": O.TSYNC}) == Status.OK
    assert Machine(CFG, supported=set()).execute({"opcode": O.TSYNC}) == Status.UNSUPPORTED


@pytest.mark.parametrize("op", [o for o in OPERAND_OPS if o not in (O.TLOAD, O.TSTORE)])
def test_execute_equals_array_function_and_touches_only_dst_valid(op):
    m = fresh(op.value)
    rng = np.random.default_rng(op.value)
    m.gm.write(0x2000, rng.integers(0, 256, 2048, dtype=np.uint8).tobytes())
    c = cmd(op)
    if op in (O.MGATHER_ROW, O.MGATHER_ELEM):     # legal indices
        idx = rng.integers(0, 10 if op == O.MGATHER_ROW else 80, (4, 8)).astype(np.uint32)
        m.write_tile(tile(c["src0"]["base"], c["src0"]["rows"], c["src0"]["cols"], D.UINT32), idx[:, :c["src0"]["cols"]],
                     region=(c["src0"]["rows"], c["src0"]["cols"]))
    if op == O.LOCAL_GATHER:
        m.write_tile(c["src1"], rng.integers(0, 15, (16, 2)).astype(np.uint16))
    before = m.ub.copy()
    dst = c["dst"]
    assert m.execute(c) == Status.OK
    changed = np.nonzero(m.ub != before)[0]
    assert m.footprint(dst)[changed].all()
    # against the array function on the tiles as read before
    m2 = Machine(CFG)
    m2.ub[:] = before
    m2.gm = m.gm
    if op == O.TPARTADD:
        r = lambda s: m2.read_tile(c[s])
        v = lambda s: (c[s]["valid_rows"], c[s]["valid_cols"])
        want = ops.tpartadd(r("dst"), v("dst"), r("src0"), v("src0"), r("src1"), v("src1"))
        assert same_bits(m.read_tile(dst), want)


EW_OPNAME = {O.TROWEXPANDMUL: "mul", O.TROWEXPANDADD: "add", O.TROWEXPANDSUB: "sub", O.TROWEXPANDMAX: "max",
             O.TROWEXPANDMIN: "min", O.TPARTADD: "add", O.TPARTMUL: "mul", O.TPARTMAX: "max", O.TPARTMIN: "min"}


@pytest.mark.parametrize("op", list(EW_OPNAME), ids=lambda o: o.name)
def test_elementwise_execute_per_element(op):
    """Every TROWEXPAND* / TPART* base command (types, modes, placements differ) against a per-element loop
    over the tiles as they were: dst[i, j] = op(src0 value, src1 value), the expanded operand broadcast; a
    TPART* element with one valid source is that source's bits."""
    m = fresh(op.value + 100)
    c = cmd(op)
    t = {s: c[s] for s in ("dst", "src0", "src1")}
    before = {s: m.read_tile(t[s]) for s in t}
    ub = m.ub.copy()
    assert m.execute(c) == Status.OK
    got = ubits(m.read_tile(t["dst"]))
    dt = t["dst"]["dtype"]
    R, C = t["dst"]["valid_rows"], t["dst"]["valid_cols"]
    v = {s: (t[s]["valid_rows"], t[s]["valid_cols"]) for s in t}
    want = ubits(before["dst"]).copy()
    for i in range(R):
        for j in range(C):
            if op.name.startswith("TPART"):
                in0 = i < v["src0"][0] and j < v["src0"][1]
                in1 = i < v["src1"][0] and j < v["src1"][1]
                if not (in0 and in1):
                    want[i, j] = ubits(before["src0" if in0 else "src1"])[i, j]
                    continue
                x, y = before["src0"][i, j], before["src1"][i, j]
            else:
                full = "src0" if v["src0"] == (R, C) else "src1"
                exp = "src1" if full == "src0" else "src0"
                k = 0 if t[exp]["layout"] == COL else j % t[exp]["valid_cols"]
                x, y = before[full][i, j], before[exp][i, k]
                if full == "src1":
                    x, y = y, x
            want[i, j] = oracle.elementwise(x, y, dt, EW_OPNAME[op])
    assert np.array_equal(got, want)
    fp = m.footprint(t["dst"])
    assert (m.ub[~fp] == ub[~fp]).all()


def test_tgemv_acc_in_place():
    m = Machine(CFG)
    c = cmd(O.TGEMV_ACC)
    m.write_tile(c["src0"], np.ones((1, 16), np.float16), region=(1, 16))
    m.write_tile(c["src1"], np.ones((16, 8), np.float16), region=(16, 8))
    m.write_tile(c["dst"], np.full((1, 8), 0.5, np.float32), region=(1, 8))
    assert m.execute(c) == Status.OK
    assert m.read_tile(c["dst"])[0].tolist() == [12.5] * 5 + [0.5] * 3


def test_undefined_raise_and_mask():
    m = fresh(9)
    m.gm.write(0x2000, bytes(range(160)))
    c = cmd(O.MGATHER_ROW, oob=OobMode.UNDEFINED)
    m.write_tile(c["src0"], np.array([[1], [10], [2], [0]], np.int32), region=(4, 1))
    ub = m.ub.copy()
    with pytest.raises(UndefinedResult) as e:
        m.execute(c)
    assert (m.ub == ub).all()
    mask = e.value.ub_mask
    assert mask.sum() == 8 * 2 and mask[0x200 + 16:0x200 + 32].all()      # row 1 of the half dst
    assert m.execute(c, on_undefined="mask") == Status.OK
    assert (m.last_undefined == mask).all()
    assert bytes(m.ub[0x200:0x210]) == bytes(range(32, 48))               # row 0 <- table row 1
    assert bytes(m.ub[0x220:0x230]) == bytes(range(64, 80))               # row 2 <- table row 2
    assert (m.ub[mask] == ub[mask]).all()


def test_overlap_is_undefined_except_identical_elementwise():
    m = fresh(1)
    c = cmd(O.TPARTADD, **{"src0.base": 0x000})          # src0 identical to dst: fine
    assert m.execute(c) == Status.OK
    c = cmd(O.TPARTADD, **{"src1.base": 0x020})          # partial overlap
    with pytest.raises(UndefinedResult):
        m.execute(c)
    c = cmd(O.TGEMV, **{"src0.base": 0x000})             # A overlaps C
    with pytest.raises(UndefinedResult):
        m.execute(c)


@pytest.mark.parametrize("op", [O.TROWEXPANDMUL, O.TROWEXPANDADD, O.TROWEXPANDSUB, O.TROWEXPANDMAX,
                                O.TROWEXPANDMIN], ids=lambda o: o.name)
def test_trowexpand_identical_full_operand_only(op):
    """The full operand may be the destination tile itself, the expanded one never (even when both sources
    have dst's valid shape: src1 is then the expanded one)."""
    c = cmd(op)
    full = "src0" if (c["src0"]["valid_rows"], c["src0"]["valid_cols"]) == \
        (c["dst"]["valid_rows"], c["dst"]["valid_cols"]) else "src1"
    exp = "src1" if full == "src0" else "src0"
    m = fresh(2)
    c[full] = dict(c["dst"])
    assert m.execute(c) == Status.OK
    c = cmd(op)
    c[exp] = dict(c[exp], base=c["dst"]["base"])            # expanded operand overlaps dst
    with pytest.raises(UndefinedResult):
        fresh(2).execute(c)
    # both full (mode 2, fp32, 8 columns): src0 identical is fine, src1 identical is not
    t8 = tile(0x000, 4, 8, D.FP32, 3, 8)
    both = {"opcode": op, "dst": t8, "src0": tile(0x100, 4, 8, D.FP32, 3, 8), "src1": tile(0x200, 4, 8, D.FP32, 3, 8)}
    assert fresh(3).execute(both) == Status.OK
    m = fresh(3)
    assert m.execute(dict(both, src0=dict(t8))) == Status.OK
    with pytest.raises(UndefinedResult):
        fresh(3).execute(dict(both, src1=dict(t8)))


@pytest.mark.parametrize("op", [O.TPARTADD, O.TPARTMUL, O.TPARTMAX, O.TPARTMIN], ids=lambda o: o.name)
def test_tpart_identical_sources(op):
    c = cmd(op)
    for slot in ("src0", "src1"):
        c2 = dict(c, **{slot: dict(c[slot], base=c["dst"]["base"], rows=c["dst"]["rows"], cols=c["dst"]["cols"],
                                   layout=c["dst"]["layout"])})
        assert fresh(5).execute(c2) == Status.OK
    c2 = dict(c, src1=dict(c["src1"], base=c["dst"]["base"], cols=2 * c["dst"]["cols"]))   # overlap, not identical
    with pytest.raises(UndefinedResult):
        fresh(5).execute(c2)


def test_wire_format_round_trip_executes_the_same():
    m1, m2 = fresh(4), fresh(4)
    c = cmd(O.TROWEXPANDMUL)
    assert m1.execute(c) == m2.execute(decode(Command, encode(Command, c))) == Status.OK
    assert (m1.ub == m2.ub).all()


def test_sparse_memory():
    from golden import SparseMemory
    g = SparseMemory(16)
    g.write(4090, b"abcdefgh")
    assert g.read(4088, 12) == b"\0\0abcdefgh\0\0"
    with pytest.raises(ValueError):
        g.read(65530, 7)
    g.write_array(0x100, np.arange(4, dtype=np.int16))
    assert g.read_array(0x100, np.int16, (2, 2)).tolist() == [[0, 1], [2, 3]]
