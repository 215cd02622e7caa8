"""Property-based tests (hypothesis) over shapes, valid regions, data types and whole command words."""

import numpy as np
from hypothesis import HealthCheck, assume, event, given, settings, strategies as st

from rtl.config import preset
from rtl.isa import Command, COMMAND_BITS, decode, DType, Layout, OobMode, Opcode, Status
from golden.numerics import DTYPE_NUMPY
from golden import Machine, UndefinedResult, check, ops

import golden_oracle as oracle
from golden_cmds import gm, legal_command, tile
from golden_helpers import rand_tile, ubits

CFG = preset("small")
SET = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
seeds = st.integers(0, 2 ** 32 - 1)


@SET
@given(dt=st.sampled_from(list(DType)), layout=st.sampled_from(list(Layout)), rows=st.integers(0, 9),
       cols=st.integers(0, 9), data=st.data(), seed=seeds)
def test_tload_tstore_round_trip(dt, layout, rows, cols, data, seed):
    vr, vc = data.draw(st.integers(0, rows)), data.draw(st.integers(0, cols))
    size = DTYPE_NUMPY[dt].itemsize
    lines, line_len = (vr, vc) if layout == Layout.ROW_MAJOR else (vc, vr)
    stride = (line_len + data.draw(st.integers(0, 4))) * size
    rng = np.random.default_rng(seed)
    m = Machine(CFG)
    m.ub[:] = rng.integers(0, 256, CFG.ub_bytes, dtype=np.uint8)
    img = rand_tile(rng, dt, (lines, line_len))
    for l in range(lines):
        m.gm.write(0x4000 + l * stride, ubits(img[l]).tobytes())
    base = data.draw(st.integers(0, (CFG.ub_bytes - rows * cols * size) // 32)) * 32
    t = tile(base, rows, cols, dt, vr, vc, layout)
    ub = m.ub.copy()
    assert m.execute({"opcode": Opcode.TLOAD, "dst": t, "gm": gm(0x4000, vr, vc, stride, dt)}) == Status.OK
    fp = m.footprint(t)
    assert (m.ub[~fp] == ub[~fp]).all()
    assert m.execute({"opcode": Opcode.TSTORE, "src0": t, "gm": gm(0x9000, vr, vc, stride, dt)}) == Status.OK
    for l in range(lines):
        assert m.gm.read(0x9000 + l * stride, line_len * size) == ubits(img[l]).tobytes()


TPART = {"add": ops.tpartadd, "mul": ops.tpartmul, "max": ops.tpartmax, "min": ops.tpartmin}


@SET
@given(dt=st.sampled_from([DType.INT8, DType.UINT16, DType.INT32, DType.FP16, DType.BF16, DType.FP32]),
       opname=st.sampled_from(list(TPART)), R=st.integers(0, 5), C=st.integers(0, 5), data=st.data(), seed=seeds)
def test_tpart_patterns(dt, opname, R, C, data, seed):
    full = (R, C)
    other = (data.draw(st.integers(0, R)), data.draw(st.integers(0, C)))
    v0, v1 = (full, other) if data.draw(st.booleans()) else (other, full)
    rng = np.random.default_rng(seed)
    a, b, d = (rand_tile(rng, dt, (R + 1, C + 1)) for _ in range(3))
    got = TPART[opname](d, full, a, v0, b, v1)
    for i in range(R):
        for j in range(C):
            in0, in1 = i < v0[0] and j < v0[1], i < v1[0] and j < v1[1]
            if in0 and in1:
                want = oracle.elementwise(a[i, j], b[i, j], dt, opname)
            else:
                want = int(ubits(a if in0 else b)[i, j])
            assert int(ubits(got)[i, j]) == want


@SET
@given(dt=st.sampled_from(list(DType)), oob=st.sampled_from(list(OobMode)), R=st.integers(1, 6),
       C=st.integers(1, 6), n=st.integers(1, 40), seed=seeds)
def test_mgather_elem_random(dt, oob, R, C, n, seed):
    rng = np.random.default_rng(seed)
    flat = rand_tile(rng, dt, (n,))
    idx = rng.integers(0, 2 * n, (R, C)).astype(np.uint32)
    d = rand_tile(rng, dt, (R, C))
    try:
        got = ops.mgather_elem(d, (R, C), idx, (R, C), flat, oob)
    except UndefinedResult as e:
        assert oob == OobMode.UNDEFINED and (idx >= n).any()
        assert (e.elements == (idx >= n)).all()
        return
    for i in range(R):
        for j in range(C):
            k = int(idx[i, j])
            if k >= n:
                k = {OobMode.CLAMP: n - 1, OobMode.WRAP: k % n, OobMode.ZERO: None}[oob]
            assert int(ubits(got)[i, j]) == (0 if k is None else int(ubits(flat)[k]))


@SET
@given(triple=st.sampled_from([(DType.FP16, DType.FP16), (DType.BF16, DType.BF16), (DType.FP32, DType.FP32),
                               (DType.FP8E4M3, DType.FP8E5M2)]),
       K=st.integers(1, 20), P=st.sampled_from([1, 2, 4, 8, 16]), seed=seeds, raw=st.booleans())
def test_gemv_order_random(triple, K, P, seed, raw):
    at, bt = triple
    rng = np.random.default_rng(seed)
    if raw:
        a, b = rand_tile(rng, at, (1, K)), rand_tile(rng, bt, (K, 2))
    else:
        a = rng.standard_normal((1, K)).astype(np.float32).astype(DTYPE_NUMPY[at])
        b = (rng.standard_normal((K, 2)) * 8).astype(np.float32).astype(DTYPE_NUMPY[bt])
    init = rng.standard_normal((1, 2)).astype(np.float32)
    got = ops.tgemv_acc(np.zeros((1, 2), np.float32), (1, 2), init, (1, 2), a, (1, K), b, (K, 2), partial_sums=P)
    for j in range(2):
        want = oracle.gemv_float([int(x) for x in ubits(a)[0]], [int(x) for x in ubits(b)[:, j]],
                                 oracle.to_bits(init[0, j], DType.FP32), at, bt, P)
        assert int(ubits(got)[0, j]) == want


@settings(max_examples=300, deadline=None)
@given(word=st.integers(0, 2 ** COMMAND_BITS - 1), op=st.sampled_from([o.value for o in Opcode] + [0, 0x13]))
def test_random_command_words(word, op):
    """Any word: check() answers a Status, execute() agrees, an illegal command changes nothing."""
    cmd = decode(Command, word)
    cmd["opcode"] = Opcode(op) if op in [o.value for o in Opcode] else op
    status = check(cmd, CFG)
    assert isinstance(status, Status)
    m = Machine(CFG)
    if status != Status.OK:
        assert m.execute(cmd) == status
        assert not m.ub.any() and not m.gm.pages


@settings(max_examples=200, deadline=None)
@given(op=st.sampled_from(list(Opcode)), data=st.data())
def test_plausible_commands_check_equals_execute(op, data):
    """Small, mostly legal descriptors: execute() returns check()'s status and writes only dst's valid bytes."""
    dt = lambda: data.draw(st.sampled_from(list(DType)))
    def t():
        r, c = data.draw(st.integers(0, 17)), data.draw(st.integers(0, 17))
        return tile(data.draw(st.integers(0, 3)) * 0x200, r, c, dt(), data.draw(st.integers(0, r)),
                    data.draw(st.integers(0, c)), data.draw(st.sampled_from(list(Layout))))
    cmd = {"opcode": op, "dst": t(), "src0": t(), "src1": t(), "src2": t(),
           "oob": data.draw(st.sampled_from(list(OobMode))), "nepi_log2": data.draw(st.integers(0, 6)),
           "num_valid": data.draw(st.integers(0, 40)),
           "gm": gm(data.draw(st.integers(0, 8)) * 0x100, data.draw(st.integers(0, 17)),
                    data.draw(st.integers(0, 17)), data.draw(st.integers(0, 8)) * 16, dt())}
    m = Machine(CFG)
    m.ub[:] = np.random.default_rng(1).integers(0, 256, CFG.ub_bytes, dtype=np.uint8)
    ub = m.ub.copy()
    status = check(cmd, CFG)
    try:
        got = m.execute(cmd)
    except UndefinedResult as e:
        assert status == Status.OK and (m.ub == ub).all()
        return
    assert got == status
    if status != Status.OK or op == Opcode.TSTORE:
        assert (m.ub == ub).all()
    else:
        fp = m.footprint(cmd["dst"])
        assert (m.ub[~fp] == ub[~fp]).all()


@settings(max_examples=150, deadline=None)
@given(op=st.sampled_from([o for o in Opcode if o not in (Opcode.TLOAD, Opcode.TSTORE)]), data=st.data(),
       seed=seeds)
def test_legal_commands_execute(op, data, seed):
    cmd = legal_command(op, data.draw)
    assume(cmd is not None)
    assert check(cmd, CFG) == Status.OK, cmd
    rng = np.random.default_rng(seed)
    m = Machine(CFG)
    m.ub[:] = rng.integers(0, 256, CFG.ub_bytes, dtype=np.uint8)
    m.gm.write(0x1000, rng.integers(0, 256, 1024, dtype=np.uint8).tobytes())
    if op in (Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM):        # indices around the table size
        size = cmd["gm"]["rows"] * (1 if op == Opcode.MGATHER_ROW else cmd["gm"]["cols"])
        t = cmd["src0"]
        m.write_tile(t, rng.integers(0, 2 * size, (t["rows"], t["cols"])).astype(np.uint32).view(np.int32)
                     .view(DTYPE_NUMPY[t["dtype"]]), region=(t["rows"], t["cols"]))
    if op == Opcode.LOCAL_GATHER:
        t = cmd["src1"]
        m.write_tile(t, rng.integers(0, cmd["src0"]["cols"], (t["rows"], t["cols"])).astype(np.uint16))
    ub = m.ub.copy()
    try:
        assert m.execute(cmd) == Status.OK
    except UndefinedResult as e:
        event("undefined")
        assert (m.ub == ub).all() and e.ub_mask is not None
        assert m.execute(cmd, on_undefined="mask") == Status.OK
        fp = m.footprint(cmd["dst"])
        assert not (m.last_undefined & ~fp).any()
        assert (m.ub[~fp] == ub[~fp]).all()
        return
    event(f"{op.name} OK, dst valid bytes {int(m.footprint(cmd['dst']).sum())}")
    fp = m.footprint(cmd["dst"])
    assert (m.ub[~fp] == ub[~fp]).all()
