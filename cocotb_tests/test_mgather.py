"""MGATHER row and element modes, all four out-of-bounds modes, bit-exact against the golden machine.

Every case compares the whole UB with the golden machine (everything outside the destination is a
canary); UNDEFINED mode with out-of-range indices checks every defined byte and that nothing outside
the destination changed. Parameters: ``TILEVEC_ROUNDS``.
"""

import os

import cocotb
import numpy as np

from rtl.isa import DType, DTYPE_BYTES, gm_region, OobMode, Opcode, Status, tile
from golden.numerics import DTYPE_NUMPY

from .harness import Harness

#: The engines of the unit these tests simulate (``Config.engines``; sim.regress builds it): a
#: unit of only what the tests exercise simulates several times faster.
UNIT_ENGINES = ('transfer',)

TABLE = 0x0004_0000
IDX_GM = 0x0002_0000


def _indices(rng, n, size):
    """Edge values the issue names (0, S-1, S, 2^31, 2^32-1, negative int32) mixed with random ones."""
    edge = [0, size - 1, size, 1 << 31, (1 << 32) - 1, (1 << 32) - 5, size + 1, 2 * size + 3]
    out = [rng.choice(edge) if rng.random() < 0.35 else rng.randrange(size) for _ in range(n)]
    return np.array(out, dtype=np.uint64).astype(np.uint32)


async def _load_indices(h, base, values, shape, itype):
    """Write the index tile into the UB through GM + TLOAD (so the golden machine sees it too)."""
    rows, cols = shape
    h.put_matrix(IDX_GM, values.reshape(rows, cols).view(np.uint8).reshape(rows, cols * 4))
    t = tile(base, rows, cols, itype)
    rsp = await h.run({"opcode": Opcode.TLOAD, "dst": t, "gm": gm_region(IDX_GM, rows, cols, itype)},
                      label="index load")
    assert rsp["status"] == Status.OK
    return t


async def _case(h, dtype, row_mode, oob, itype, *, dst_base=0x000, idx_base=0x600):
    rng, size = h.rng, DTYPE_BYTES[dtype]
    R = rng.randrange(1, 9)
    rows = R + rng.randrange(0, 3)
    if row_mode:
        C = rng.randrange(1, 64 // size + 1)
        cols = C + rng.randrange(0, 3)
        S = rng.randrange(1, 40)
        stride = C * size + size * rng.choice([0, 0, 3, 17])
        h.gm_write(TABLE, bytes(rng.randrange(256) for _ in range(S * stride)))
        gm = gm_region(TABLE + size * rng.randrange(0, 8), S, C, dtype, row_stride=stride)
        idx_vals = _indices(rng, rows, S)
        t_idx = await _load_indices(h, idx_base, idx_vals, (rows, 1), itype)
        t_idx["valid_rows"] = R
        op = Opcode.MGATHER_ROW
    else:
        C = rng.randrange(1, 17)
        cols = C + rng.randrange(0, 3)
        S_rows, S_cols = rng.randrange(1, 20), rng.randrange(1, 20)
        S = S_rows * S_cols
        base = TABLE + size * rng.randrange(0, 8)
        h.gm_write(base, bytes(rng.randrange(256) for _ in range(S * size)))
        gm = gm_region(base, S_rows, S_cols, dtype)
        if rng.random() < 0.3:          # clustered: neighbouring elements, many in one beat
            start = rng.randrange(S)
            idx_vals = np.array([(start + k) % S for k in range(rows * cols)], dtype=np.uint32)
        else:
            idx_vals = _indices(rng, rows * cols, S)
        t_idx = await _load_indices(h, idx_base, idx_vals, (rows, cols), itype)
        t_idx["valid_rows"], t_idx["valid_cols"] = R, C
        op = Opcode.MGATHER_ELEM
    dst = tile(dst_base, rows, cols, dtype, valid=(R, C))
    cmd = {"opcode": op, "oob": oob, "dst": dst, "src0": t_idx, "gm": gm}
    if oob == OobMode.UNDEFINED:
        await h.run_masked(cmd)
    else:
        assert (await h.run(cmd))["status"] == Status.OK


@cocotb.parametrize(dtype=[d.name for d in DType])
async def mgather_random(dut, dtype):
    """One data type: row and element mode x CLAMP/WRAP/ZERO/UNDEFINED x int32/uint32 index tiles."""
    dtype = DType[dtype]
    h = await Harness.start(dut, backpressure=True)
    h.gm_write(0, bytes(h.rng.randrange(256) for _ in range(h.config.ub_bytes)))
    await h.run({"opcode": Opcode.TLOAD, "dst": tile(0, h.config.ub_bytes // 256, 256, DType.UINT8),
                 "gm": gm_region(0, h.config.ub_bytes // 256, 256, DType.UINT8)}, label="ub fill")
    for _ in range(int(os.environ.get("TILEVEC_ROUNDS", "1"))):
        for row_mode in (True, False):
            for oob in OobMode:
                for itype in (DType.INT32, DType.UINT32):
                    await _case(h, dtype, row_mode, oob, itype)
    await h.check_ub()


async def _seed_gather(h, table, indices, itype, op, oob, dst_shape):
    """A seed example: ``table`` (2-D numpy) in GM, ``indices`` (uint32 view) as the index tile at UB 0,
    the gather into a dst tile at 0x400; whole UB compared with the golden. Returns the dst values the
    golden machine holds (to be compared with the example's own expectation, independent of the golden)."""
    h.put_matrix(TABLE, table)
    shape = (indices.shape[0], indices.shape[1] if indices.ndim == 2 else 1)
    t_idx = await _load_indices(h, 0x000, indices, shape, itype)
    dtype = next(d for d in DType if DTYPE_NUMPY[d] == table.dtype)
    cmd = {"opcode": op, "oob": oob, "dst": tile(0x400, *dst_shape, dtype), "src0": t_idx,
           "gm": gm_region(TABLE, *table.shape, dtype)}
    assert (await h.run(cmd))["status"] == Status.OK
    await h.check_ub()
    n = dst_shape[0] * dst_shape[1] * table.dtype.itemsize
    return np.frombuffer(bytes(h.golden.ub[0x400:0x400 + n]), table.dtype).reshape(dst_shape)


@cocotb.test()
async def mgather_seed_embedding(dut):
    """Seed example: embedding lookup, 8 rows x 64 half, Clamp (table shrunk from 65536 to 1024 rows)."""
    h = await Harness.start(dut, backpressure=True)
    table = np.random.default_rng(7).standard_normal((1024, 64)).astype(np.float16)
    idx = np.array([0, 5, 1023, 1024, 70000, -1, 512, 3], dtype=np.int32).reshape(8, 1).view(np.uint32)
    got = await _seed_gather(h, table, idx, DType.INT32, Opcode.MGATHER_ROW, OobMode.CLAMP, (8, 64))
    want = table[np.clip(idx[:, 0], 0, 1023)]          # independent of the golden
    assert (got.view(np.uint16) == want.view(np.uint16)).all()


@cocotb.test()
async def mgather_seed_sparse_zero(dut):
    """Seed example: 16 x 16 float sparse gather from a 1024 x 64 table with Zero for OOB indices."""
    h = await Harness.start(dut, backpressure=True)
    rng = np.random.default_rng(8)
    data = rng.standard_normal((1024, 64)).astype(np.float32)
    idx = rng.integers(0, 1024 * 64, (16, 16)).astype(np.int64)
    idx[rng.random((16, 16)) < 0.2] = 1024 * 64 + 7          # out of range -> zero
    idx[0, 0], idx[1, 1] = -3, 1024 * 64 - 1
    idx32 = idx.astype(np.int64).astype(np.uint32)
    got = await _seed_gather(h, data, idx32, DType.INT32, Opcode.MGATHER_ELEM, OobMode.ZERO, (16, 16))
    flat = data.reshape(-1)
    want = np.where(idx32 < flat.size, flat[np.minimum(idx32, flat.size - 1)], np.float32(0))
    assert (got.view(np.uint32) == want.view(np.uint32)).all()


@cocotb.test()
async def mgather_seed_hash_wrap(dut):
    """Seed example: Wrap mode for hash tables (hash values far beyond the table, modulo its rows)."""
    h = await Harness.start(dut, backpressure=True)
    rng = np.random.default_rng(9)
    table = rng.integers(0, 1 << 31, (97, 16), dtype=np.int64).astype(np.int32)   # 97 rows: prime
    hashes = rng.integers(0, 1 << 32, 16, dtype=np.uint64).astype(np.uint32).reshape(16, 1)
    got = await _seed_gather(h, table, hashes, DType.UINT32, Opcode.MGATHER_ROW, OobMode.WRAP, (16, 16))
    assert (got == table[hashes[:, 0] % 97]).all()


def _legal_row():
    idx = tile(0x000, 4, 1, DType.INT32)
    return {"opcode": Opcode.MGATHER_ROW, "oob": OobMode.CLAMP, "dst": tile(0x100, 4, 8, DType.FP16),
            "src0": idx, "gm": gm_region(TABLE, 10, 8, DType.FP16)}


def _legal_elem():
    return {"opcode": Opcode.MGATHER_ELEM, "oob": OobMode.ZERO, "dst": tile(0x100, 4, 8, DType.FP16),
            "src0": tile(0x000, 4, 8, DType.UINT32), "gm": gm_region(TABLE, 10, 8, DType.FP16)}


def _violations():
    """(expected status, command) for every MGATHER constraint of docs/semantics.md."""
    out = []

    def case(status, base, **changes):
        cmd = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base().items()}
        for path, value in changes.items():
            slot, _, field = path.partition("__")
            if field:
                cmd[slot][field] = value
            else:
                cmd[slot] = value
        out.append((status, cmd))

    for base in (_legal_row, _legal_elem):
        case(Status.DTYPE_INVALID, base, dst__dtype=12, gm__dtype=12)
        case(Status.DTYPE_INVALID, base, src0__dtype=14)
        case(Status.DTYPE_MISMATCH, base, gm__dtype=DType.BF16)
        case(Status.INDEX_DTYPE, base, src0__dtype=DType.INT16)
        case(Status.UB_MISALIGNED, base, dst__base=0x108)
        case(Status.UB_MISALIGNED, base, src0__base=0x004)
        case(Status.UB_OUT_OF_RANGE, base, dst__base=4096 - 32)
        case(Status.VALID_EXCEEDS_STATIC, base, src0__valid_rows=5)
        case(Status.LAYOUT_UNSUPPORTED, base, dst__layout=1)
        case(Status.LAYOUT_UNSUPPORTED, base, src0__layout=1)
        case(Status.SHAPE_MISMATCH, base, src0__rows=3, src0__valid_rows=3)
        case(Status.DIM_OUT_OF_RANGE, base, gm__rows=0)
        case(Status.GM_MISALIGNED, base, gm__base=TABLE + 1)
        case(Status.GM_OUT_OF_RANGE, base, gm__base=(1 << 32) - 64)
    case(Status.SHAPE_MISMATCH, _legal_row, gm__cols=7)
    case(Status.SHAPE_MISMATCH, _legal_row, src0__cols=2, src0__valid_cols=2)
    case(Status.GM_MISALIGNED, _legal_row, gm__row_stride=17)
    case(Status.SHAPE_MISMATCH, _legal_elem, src0__valid_cols=7)
    return out


@cocotb.test()
async def mgather_errors(dut):
    """Every MGATHER constraint: the RTL answers the golden's status, changes nothing, and the next
    (legal) MGATHER is exact."""
    h = await Harness.start(dut, backpressure=True)
    h.gm_write(TABLE, bytes(h.rng.randrange(256) for _ in range(4096)))
    h.gm_write(IDX_GM, bytes(h.rng.randrange(0, 12) for _ in range(512)))
    for status, cmd in _violations():
        rsp = await h.run(cmd)
        assert rsp["status"] == status, f"expected {status.name}, got {rsp['status']} for {cmd}"
        legal = _legal_row() if cmd["opcode"] == Opcode.MGATHER_ROW else _legal_elem()
        await h.run({"opcode": Opcode.TLOAD, "dst": legal["src0"],
                     "gm": gm_region(IDX_GM, legal["src0"]["rows"], legal["src0"]["cols"], legal["src0"]["dtype"])})
        assert (await h.run(legal))["status"] == Status.OK
    await h.check_ub()
