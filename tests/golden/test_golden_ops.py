"""Each instruction's array-level function against an independently written per-element loop."""

import numpy as np
import pytest

from rtl.isa import DType, DTYPE_BYTES, Layout, OobMode, Profile, Status
from golden.numerics import DTYPE_NUMPY
from golden import ops
from golden.errors import IsaError, UndefinedResult

import golden_oracle as oracle
from golden_helpers import ALL_TYPES, rand_tile, rand_values, same_bits, ubits

ROW, COL = Layout.ROW_MAJOR, Layout.COL_MAJOR
FLOATS = {DType.FP16, DType.BF16, DType.FP32, DType.FP8E4M3, DType.FP8E5M2}


def expect_unchanged_outside(new, old, valid):
    r, c = valid
    m = np.ones(old.shape, bool)
    m[:r, :c] = False
    assert np.array_equal(ubits(new)[m], ubits(old)[m])


def elementwise_ref(dt, x, y, opname):
    """Bits of x op y for one element pair by the oracle (op: add, sub, mul, max, min)."""
    return oracle.elementwise(x, y, dt, opname)


#: The TROWEXPAND* / TPART* array functions by element operation.
TROWEXPAND = {"mul": ops.trowexpandmul, "add": ops.trowexpandadd, "sub": ops.trowexpandsub,
              "max": ops.trowexpandmax, "min": ops.trowexpandmin}
TPART = {"add": ops.tpartadd, "mul": ops.tpartmul, "max": ops.tpartmax, "min": ops.tpartmin}


# ------------------------------------------------------------------------------------------------ TLOAD / TSTORE

@pytest.mark.parametrize("dt", ALL_TYPES)
def test_tload_tstore_move_bits(dt):
    rng = np.random.default_rng(dt.value)
    dst = rand_tile(rng, dt, (5, 7))
    block = rand_tile(rng, dt, (3, 4))
    new = ops.tload(dst, (3, 4), block)
    assert same_bits(new[:3, :4], block)
    expect_unchanged_outside(new, dst, (3, 4))
    assert same_bits(ops.tstore(new, (3, 4)), block)
    assert ops.tstore(new, (0, 4)).shape == (0, 4)


def test_tload_keeps_nan_payload_and_negative_zero():
    block = np.array([[0x7F800001, 0xFFC12345, 0x80000000]], np.uint32).view(np.float32)
    new = ops.tload(np.zeros((1, 3), np.float32), (1, 3), block)
    assert list(ubits(new)[0]) == [0x7F800001, 0xFFC12345, 0x80000000]


# ------------------------------------------------------------------------------------------------ MGATHER

EDGE = lambda size: [0, size - 1, size, 2 ** 31, 2 ** 32 - 1]


def mgather_row_ref(dst, R, C, idx_u32, table, oob):
    out = ubits(dst).copy()
    tb = ubits(table)
    rows = table.shape[0]
    for i in range(R):
        k = int(idx_u32[i])
        if k >= rows:
            if oob == OobMode.CLAMP:
                k = rows - 1
            elif oob == OobMode.WRAP:
                k = k % rows
            elif oob == OobMode.ZERO:
                for j in range(C):
                    out[i, j] = 0
                continue
            else:
                continue
        for j in range(C):
            out[i, j] = tb[k, j]
    return out


def mgather_elem_ref(dst, R, C, idx_u32, flat, oob):
    out = ubits(dst).copy()
    fb = ubits(flat)
    n = len(flat)
    for i in range(R):
        for j in range(C):
            k = int(idx_u32[i, j])
            if k >= n:
                if oob == OobMode.CLAMP:
                    k = n - 1
                elif oob == OobMode.WRAP:
                    k %= n
                elif oob == OobMode.ZERO:
                    out[i, j] = 0
                    continue
                else:
                    continue
            out[i, j] = fb[k]
    return out


@pytest.mark.parametrize("dt", ALL_TYPES)
@pytest.mark.parametrize("oob", [OobMode.CLAMP, OobMode.WRAP, OobMode.ZERO])
@pytest.mark.parametrize("idx_t", [DType.INT32, DType.UINT32])
def test_mgather_row_all_modes(dt, oob, idx_t):
    rng = np.random.default_rng(dt.value * 7 + oob.value)
    table = rand_tile(rng, dt, (9, 5))
    dst = rand_tile(rng, dt, (12, 6))
    raw = np.array(EDGE(9) + [3, 8, 2 ** 31 + 5, 0xFFFFFFFE, 1, 4], np.uint32)    # 2^32-1 == int32 -1
    idx = raw.view(DTYPE_NUMPY[idx_t]).reshape(11, 1)
    idx = np.vstack([idx, idx[:1]])
    new = ops.mgather_row(dst, (11, 5), idx, (11, 1), table, oob)
    assert np.array_equal(ubits(new), mgather_row_ref(dst, 11, 5, ubits(idx)[:, 0].astype(np.uint32), table, oob))


@pytest.mark.parametrize("dt", ALL_TYPES)
@pytest.mark.parametrize("oob", [OobMode.CLAMP, OobMode.WRAP, OobMode.ZERO])
def test_mgather_elem_all_modes(dt, oob):
    rng = np.random.default_rng(dt.value * 11 + oob.value)
    flat = rand_tile(rng, dt, (4 * 6,))
    dst = rand_tile(rng, dt, (4, 8))
    raw = rng.integers(0, 40, (4, 8)).astype(np.uint32)
    raw.flat[:5] = EDGE(24)
    raw.flat[5] = 0x80000001
    idx = raw.view(np.int32)
    new = ops.mgather_elem(dst, (3, 7), idx, (3, 7), flat, oob)
    assert np.array_equal(ubits(new), mgather_elem_ref(dst, 3, 7, ubits(idx), flat, oob))


def test_mgather_undefined_raises_with_mask_and_partial():
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    dst = np.full((3, 3), -1, np.float32)
    idx = np.array([[1], [4], [-1]], np.int32)
    with pytest.raises(UndefinedResult) as e:
        ops.mgather_row(dst, (3, 3), idx, (3, 1), table, OobMode.UNDEFINED)
    assert e.value.elements[:, 0].tolist() == [False, True, True]
    assert e.value.partial[0].tolist() == [3, 4, 5] and e.value.partial[1].tolist() == [-1, -1, -1]
    ok = ops.mgather_row(dst, (3, 3), np.array([[3], [0], [2]], np.int32), (3, 1), table, OobMode.UNDEFINED)
    assert ok[:, 0].tolist() == [9, 0, 6]
    with pytest.raises(UndefinedResult):
        ops.mgather_elem(np.zeros((1, 2), np.float32), (1, 2), np.array([[0, 12]], np.uint32), (1, 2),
                         table.reshape(-1), OobMode.UNDEFINED)


def test_seed_embedding_lookup_clamp():
    """Seed: IdxTile int32 8 x 1, DstTile half 8 x 64, table (TableRows, 64) half, Clamp (table shrunk)."""
    rng = np.random.default_rng(5)
    table = rand_values(rng, DType.FP16, (300, 64))
    idx = np.array([[0], [299], [300], [65535], [-1], [17], [2 ** 31 - 1], [150]], np.int32)
    dst = np.zeros((8, 64), np.float16)
    new = ops.mgather_row(dst, (8, 64), idx, (8, 1), table, OobMode.CLAMP)
    want = [0, 299, 299, 299, 299, 17, 299, 150]
    assert same_bits(new, table[want])


def test_seed_sparse_gather_zero():
    """Seed: float data 1024 x 64 (linear 65536 elements), int32 16 x 16 indices, Zero."""
    rng = np.random.default_rng(6)
    data = rng.standard_normal((1024, 64)).astype(np.float32)
    idx = rng.integers(-5, 70000, (16, 16)).astype(np.int32)
    new = ops.mgather_elem(np.full((16, 16), 7, np.float32), (16, 16), idx, (16, 16), data.reshape(-1),
                           OobMode.ZERO)
    u = idx.view(np.uint32).astype(np.int64)
    want = np.where(u < 65536, data.reshape(-1)[np.minimum(u, 65535)], 0).astype(np.float32)
    assert same_bits(new, want)


def test_seed_hash_table_wrap():
    rng = np.random.default_rng(7)
    table = rand_tile(rng, DType.BF16, (13, 16))
    idx = rng.integers(0, 2 ** 32, (32, 1), dtype=np.uint64).astype(np.uint32)
    new = ops.mgather_row(np.zeros((32, 16), table.dtype), (32, 16), idx, (32, 1), table, OobMode.WRAP)
    assert same_bits(new, table[idx[:, 0].astype(np.int64) % 13])


# ------------------------------------------------------------------------------------------------ local_gather

def seed_local_gather(src_buffer, index, num_elem_per_idx, num_valid_indices):
    """A transcription of the seed's numpy loop (src_buffer (P, F, nepi), index (P, X) in units of nepi)."""
    num_gpsimd_cores = index.shape[0] // 16
    num_partitions_per_core = 16
    num_valid_indices = num_valid_indices if num_valid_indices else index.size // num_gpsimd_cores
    output_np = np.ndarray(shape=(index.shape[0], num_valid_indices, num_elem_per_idx), dtype=src_buffer.dtype)
    for i_core in range(num_gpsimd_cores):
        start_par = i_core * num_partitions_per_core
        end_par = (i_core + 1) * num_partitions_per_core
        indices_1d = index[start_par:end_par].flatten(order="F")[0:num_valid_indices]
        output_np[start_par:end_par, :, :] = np.take(src_buffer[start_par:end_par], indices_1d, axis=1)
    return output_np


def test_local_gather_seed_example():
    rng = np.random.default_rng(8)
    src_buffer = np.random.default_rng(9).random((128, 512, 4)).astype(np.float32)
    index_per_core = rng.integers(0, 512, size=(16, 4), dtype=np.uint16)
    index = np.tile(index_per_core, (8, 1))
    nepi = 4
    index_hw = (index * nepi).astype(np.uint16)
    ref = seed_local_gather(src_buffer, index, nepi, 64).reshape(128, 4, 16, 4)
    src = src_buffer.reshape(128, 512 * 4)
    dst = np.zeros((128, 64 * 4), np.float32)
    got = ops.local_gather(dst, (128, 256), src, (128, 2048), index_hw, (128, 4), nepi, 64)
    assert same_bits(got.reshape(128, 4, 16, 4), ref)


def local_gather_loop(dst, src, C, idx, X, R, nepi, n):
    out = ubits(dst).copy()
    sb = ubits(src)
    for g in range(R // 16):
        flat = []
        for x in range(X):             # partition-first: column by column
            for p in range(16):
                flat.append(int(idx[g * 16 + p, x]))
        flat = flat[:n]
        for p in range(g * 16, g * 16 + 16):
            for k, o in enumerate(flat):
                for e in range(nepi):
                    out[p, k * nepi + e] = sb[p, o + e]
    return out


@pytest.mark.parametrize("dt", [DType.INT8, DType.FP16, DType.FP32, DType.FP8E5M2])
@pytest.mark.parametrize("nepi,nv", [(1, 0), (2, 5), (8, 17), (32, 1), (4, 48)])
def test_local_gather_loop(dt, nepi, nv):
    rng = np.random.default_rng(nepi * 100 + nv)
    R, C, X = 32, 40, 3
    n = nv or 16 * X
    src = rand_tile(rng, dt, (R + 3, C + 2))
    idx = rng.integers(0, C - nepi + 1, (R + 1, X + 1)).astype(np.uint16)
    dst = rand_tile(rng, dt, (R + 2, n * nepi + 3))
    got = ops.local_gather(dst, (R, n * nepi), src, (R, C), idx, (R, X), nepi, nv)
    assert np.array_equal(ubits(got), local_gather_loop(dst, src, C, idx, X, R, nepi, n))


def test_local_gather_out_of_range_offset_is_undefined():
    src = np.arange(16 * 8, dtype=np.int16).reshape(16, 8)
    idx = np.zeros((16, 1), np.uint16)
    idx[3, 0] = 7                    # 7 + 2 > 8
    with pytest.raises(UndefinedResult) as e:
        ops.local_gather(np.zeros((16, 32), np.int16), (16, 32), src, (16, 8), idx, (16, 1), 2, 0)
    assert e.value.elements[:, 6:8].all() and e.value.elements.sum() == 32
    assert e.value.partial[0, :2].tolist() == [0, 1]


# ------------------------------------------------------------------------------------------------ TROWEXPANDMUL

A5_REM = [DType.FP16, DType.FP32, DType.BF16, DType.INT8, DType.INT16, DType.INT32, DType.UINT8, DType.UINT16,
          DType.UINT32]


@pytest.mark.parametrize("opname", ["mul", "add", "sub", "max", "min"])
@pytest.mark.parametrize("dt", A5_REM)
@pytest.mark.parametrize("mode", [1, 2])
@pytest.mark.parametrize("expanded", [0, 1])
def test_trowexpand_loop(opname, dt, mode, expanded):
    """TROWEXPANDMUL and its siblings: dst[i, j] = op(src0 value, src1 value), the expanded one broadcast,
    for both placements."""
    rng = np.random.default_rng(dt.value * 5 + mode + 17 * expanded)
    R, C = 4, 21
    blk = 32 // DTYPE_BYTES[dt]
    full = rand_tile(rng, dt, (5, 22))
    if mode == 1:
        exp, ev, el = rand_tile(rng, dt, (6, 1)), (R, 1), COL
    else:
        exp, ev, el = rand_tile(rng, dt, (4, blk)), (R, blk), ROW
    dst = rand_tile(rng, dt, (4, 23))
    if expanded == 1:
        got = TROWEXPAND[opname](dst, (R, C), full, (R, C), ROW, exp, ev, el)
    else:
        got = TROWEXPAND[opname](dst, (R, C), exp, ev, el, full, (R, C), ROW)
    want = ubits(dst).copy()
    for i in range(R):
        for j in range(C):
            e = exp[i, 0] if mode == 1 else exp[i, j % blk]
            x, y = (full[i, j], e) if expanded == 1 else (e, full[i, j])
            want[i, j] = elementwise_ref(dt, x, y, opname)
    assert np.array_equal(ubits(got), want)


def test_trowexpandsub_operand_order_hand_written():
    """TROWEXPANDSUB is src0 - src1 whichever source is expanded."""
    full = np.array([[10.0, 20.0, 30.0], [1.0, 2.0, 3.0]], np.float32)
    e = np.array([[1.0], [0.5]], np.float32)
    d = np.zeros((2, 3), np.float32)
    got = ops.trowexpandsub(d, (2, 3), full, (2, 3), ROW, e, (2, 1), COL)          # src1 expanded
    assert got.tolist() == [[9.0, 19.0, 29.0], [0.5, 1.5, 2.5]]
    got = ops.trowexpandsub(d, (2, 3), e, (2, 1), COL, full, (2, 3), ROW)          # src0 expanded
    assert got.tolist() == [[-9.0, -19.0, -29.0], [-0.5, -1.5, -2.5]]
    # mode 2, int16: block of 16 per row, repeating
    full = np.arange(40, dtype=np.int16).reshape(2, 20)
    blk = np.arange(100, 132, dtype=np.int16).reshape(2, 16)
    got = ops.trowexpandsub(np.zeros((2, 20), np.int16), (2, 20), blk, (2, 16), ROW, full, (2, 20), ROW)
    assert got[0].tolist() == [100 + (j % 16) - j for j in range(20)]
    assert got[1].tolist() == [116 + (j % 16) - (20 + j) for j in range(20)]
    # signed zeros: (+0) - (+0) = +0, (-0) - (+0) = -0 and (+0) - (-0) = +0
    z = np.array([[0.0, -0.0]], np.float32)
    got = ops.trowexpandsub(np.ones((1, 2), np.float32), (1, 2), z, (1, 2), ROW, np.zeros((1, 1), np.float32),
                            (1, 1), COL)
    assert ubits(got)[0].tolist() == [0x00000000, 0x80000000]
    got = ops.trowexpandsub(np.ones((1, 2), np.float32), (1, 2), np.zeros((1, 1), np.float32), (1, 1), COL,
                            z, (1, 2), ROW)
    assert ubits(got)[0].tolist() == [0x00000000, 0x00000000]


def test_trowexpand_max_min_specials_fp32():
    nan_p = 0x7F800123                                   # signalling NaN with a payload
    full = np.array([[0x00000000, 0x80000000, nan_p, 0x00000001, 0xFF800000, 0x3F800000]], np.uint32)
    full = full.view(np.float32)
    e = np.array([[0x80000000]], np.uint32).view(np.float32)            # -0 in every row
    d = np.zeros((1, 6), np.float32)
    mx = ops.trowexpandmax(d, (1, 6), full, (1, 6), ROW, e, (1, 1), COL)
    mn = ops.trowexpandmin(d, (1, 6), e, (1, 1), COL, full, (1, 6), ROW)
    assert ubits(mx)[0].tolist() == [0x00000000, 0x80000000, 0x7FC00000, 0x00000001, 0x80000000, 0x3F800000]
    assert ubits(mn)[0].tolist() == [0x80000000, 0x80000000, 0x7FC00000, 0x80000000, 0xFF800000, 0x80000000]


def test_trowexpand_both_full_mode1_one_column():
    """Both sources have dst's valid shape (R, 1): src1 (column-major) is the expanded operand, mode 1."""
    a = np.array([[5], [7], [-3]], np.int32)
    b = np.array([[2], [10], [4]], np.int32)
    d = np.zeros((3, 1), np.int32)
    assert ops.trowexpandsub(d, (3, 1), a, (3, 1), ROW, b, (3, 1), COL).tolist() == [[3], [-3], [-7]]
    assert ops.trowexpandmul(d, (3, 1), a, (3, 1), ROW, b, (3, 1), COL).tolist() == [[10], [70], [-12]]
    assert ops.trowexpandmax(d, (3, 1), a, (3, 1), ROW, b, (3, 1), COL).tolist() == [[5], [10], [4]]
    # src0 is then the full operand and must be row-major
    with pytest.raises(IsaError) as e:
        ops.trowexpandadd(d, (3, 1), a, (3, 1), COL, b, (3, 1), COL)
    assert e.value.status == Status.LAYOUT_UNSUPPORTED and "TROWEXPANDADD" in str(e.value)


def test_trowexpand_both_full_mode2_eight_fp32_columns():
    """An 8-column fp32 multiply (R, 8) x (R, 8), both row-major: src1 is the expanded mode-2 block, so
    dst[i, j] = src0[i, j] op src1[i, j mod 8] = src0[i, j] op src1[i, j]."""
    a = np.arange(16, dtype=np.float32).reshape(2, 8)
    b = np.array([[1, 2, 3, 4, 5, 6, 7, 8], [-1, -2, -3, -4, -5, -6, -7, -8]], np.float32)
    d = np.full((2, 9), 99, np.float32)
    got = ops.trowexpandmul(d, (2, 8), a, (2, 8), ROW, b, (2, 8), ROW)
    assert got[0].tolist() == [0, 2, 6, 12, 20, 30, 42, 56, 99]
    assert got[1].tolist() == [-8, -18, -30, -44, -60, -78, -98, -120, 99]
    got = ops.trowexpandsub(d, (2, 8), a, (2, 8), ROW, b, (2, 8), ROW)
    assert got[0].tolist() == [-1, -1, -1, -1, -1, -1, -1, -1, 99]
    assert got[1].tolist() == [9, 11, 13, 15, 17, 19, 21, 23, 99]
    # int8: the block is 32 values
    a8 = np.full((1, 32), 3, np.int8)
    b8 = np.arange(32, dtype=np.int8).reshape(1, 32)
    got = ops.trowexpandmin(np.zeros((1, 32), np.int8), (1, 32), a8, (1, 32), ROW, b8, (1, 32), ROW)
    assert got[0].tolist() == [min(3, j) for j in range(32)]


@pytest.mark.parametrize("fn", list(TROWEXPAND.values()), ids=list(TROWEXPAND))
@pytest.mark.parametrize("shape,layout1", [((2, 5), ROW), ((2, 5), COL), ((2, 1), ROW), ((2, 16), ROW)])
def test_trowexpand_both_full_not_the_mode_shape(fn, shape, layout1):
    """Both sources at dst's valid shape, but src1's shape is not its mode's ((R, 1) col-major, (R, 8) fp32
    row-major): SHAPE_MISMATCH."""
    a = np.zeros((2, 16), np.float32)
    with pytest.raises(IsaError) as e:
        fn(np.zeros((2, 16), np.float32), shape, a, shape, ROW, a, shape, layout1)
    assert e.value.status == Status.SHAPE_MISMATCH
    assert fn.__name__.upper() in str(e.value)


@pytest.mark.parametrize("fn", list(TROWEXPAND.values()), ids=list(TROWEXPAND))
def test_trowexpand_siblings_errors(fn):
    a = np.zeros((4, 8), np.float32)
    cases = [  # (src0 valid, src0 layout, src1 valid, src1 layout, dst layout, status)
        ((3, 5), ROW, (3, 1), COL, COL, Status.LAYOUT_UNSUPPORTED),        # dst column-major
        ((3, 1), COL, (3, 5), COL, ROW, Status.LAYOUT_UNSUPPORTED),        # full operand src1 column-major
        ((3, 4), ROW, (3, 1), COL, ROW, Status.SHAPE_MISMATCH),            # no source at dst's valid shape
        ((3, 5), ROW, (2, 1), COL, ROW, Status.SHAPE_MISMATCH),            # mode 1 rows
        ((3, 5), ROW, (3, 4), ROW, ROW, Status.SHAPE_MISMATCH),            # mode 2 block
    ]
    for v0, l0, v1, l1, ld, status in cases:
        with pytest.raises(IsaError) as e:
            fn(a, (3, 5), a, v0, l0, a, v1, l1, dst_layout=ld)
        assert e.value.status == status, (v0, v1)
        assert fn.__name__.upper() in str(e.value)
    with pytest.raises(IsaError) as e:
        fn(a, (3, 5), a, (3, 5), ROW, a.astype(np.float16), (3, 1), COL)
    assert e.value.status == Status.DTYPE_MISMATCH
    with pytest.raises(IsaError) as e:
        fn(a.astype(np.int8), (3, 5), a.astype(np.int8), (3, 5), ROW, a.astype(np.int8), (3, 1), COL,
           profile=Profile.A2A3)
    assert e.value.status == Status.DTYPE_UNSUPPORTED


def test_trowexpandmul_specials_fp16():
    full = np.array([[0.0, -0.0, np.inf, 65504.0, 6e-8, np.nan, 1.0, -2.0]], np.float16)
    s = np.array([[-2.0]], np.float16)
    got = ops.trowexpandmul(np.zeros((1, 8), np.float16), (1, 8), full, (1, 8), ROW, s, (1, 1), COL)
    assert list(ubits(got)[0]) == [0x8000, 0x0000, 0xFC00, 0xFC00, 0x8002, 0x7E00, 0xC000, 0x4400]


# ------------------------------------------------------------------------------------------------ TPARTADD

TPA_A5 = [DType.UINT8, DType.INT8, DType.UINT16, DType.INT16, DType.UINT32, DType.INT32, DType.FP16, DType.FP32,
          DType.BF16]


@pytest.mark.parametrize("opname", list(TPART))
@pytest.mark.parametrize("dt", TPA_A5)
@pytest.mark.parametrize("v0,v1", [((4, 6), (4, 6)), ((4, 6), (2, 3)), ((1, 6), (4, 6)), ((4, 6), (4, 0)),
                                   ((4, 6), (0, 0)), ((3, 6), (4, 6)), ((4, 6), (4, 5))])
def test_tpart_loop(opname, dt, v0, v1):
    rng = np.random.default_rng(dt.value)
    a, b, dst = rand_tile(rng, dt, (5, 7)), rand_tile(rng, dt, (4, 8)), rand_tile(rng, dt, (4, 6))
    got = TPART[opname](dst, (4, 6), a, v0, b, v1)
    want = ubits(dst).copy()
    for i in range(4):
        for j in range(6):
            in0 = i < v0[0] and j < v0[1]
            in1 = i < v1[0] and j < v1[1]
            if in0 and in1:
                want[i, j] = elementwise_ref(dt, a[i, j], b[i, j], opname)
            elif in0:
                want[i, j] = ubits(a)[i, j]
            else:
                want[i, j] = ubits(b)[i, j]
    assert np.array_equal(ubits(got), want)


def test_tpartadd_copy_keeps_payload_sum_canonicalizes():
    a = np.array([[0x7F800001, 0xFF800002]], np.uint32).view(np.float32)
    b = np.array([[0x3F800000, 0]], np.uint32).view(np.float32)
    got = ops.tpartadd(np.zeros((1, 2), np.float32), (1, 2), a, (1, 2), b, (1, 1))
    assert list(ubits(got)[0]) == [0x7FC00000, 0xFF800002]


@pytest.mark.parametrize("fn", list(TPART.values()), ids=list(TPART))
@pytest.mark.parametrize("v0,v1", [((3, 6), (4, 5)), ((5, 6), (4, 6)), ((4, 6), (4, 7)), ((2, 2), (2, 2))])
def test_tpart_bad_patterns(fn, v0, v1):
    a = np.zeros((8, 8), np.int32)
    with pytest.raises(IsaError) as e:
        fn(np.zeros((8, 8), np.int32), (4, 6), a, v0, a, v1)
    assert e.value.status == Status.VALIDITY_PATTERN
    assert fn.__name__.upper() in str(e.value)


@pytest.mark.parametrize("fn", list(TPART.values()), ids=list(TPART))
def test_tpart_zero_dst_region_returns_early(fn):
    a = np.ones((4, 4), np.int32)
    got = fn(np.zeros((4, 4), np.int32), (0, 4), a, (3, 3), a, (1, 1))
    assert not got.any()


def test_tpart_siblings_hand_written():
    a = np.array([[0x00000000, 0x7F800001, 0x00000001, 0xC0000000],
                  [0xFFC00005, 0x80000000, 0x3F800000, 0x40400000]], np.uint32).view(np.float32)
    b = np.array([[0x80000000, 0x3F800000, 0x80000001, 0x40000000],
                  [0x00000000, 0x00000000, 0x00000000, 0x00000000]], np.uint32).view(np.float32)
    d = np.zeros((2, 4), np.float32)
    # row 0: both valid; row 1: only src0 valid (src1 valid shape (1, 4)) -> bit-exact copies of src0
    mx = ops.tpartmax(d, (2, 4), a, (2, 4), b, (1, 4))
    mn = ops.tpartmin(d, (2, 4), a, (2, 4), b, (1, 4))
    ml = ops.tpartmul(d, (2, 4), a, (2, 4), b, (1, 4))
    assert ubits(mx)[0].tolist() == [0x00000000, 0x7FC00000, 0x00000001, 0x40000000]
    assert ubits(mn)[0].tolist() == [0x80000000, 0x7FC00000, 0x80000001, 0xC0000000]
    assert ubits(ml)[0].tolist() == [0x80000000, 0x7FC00000, 0x80000000, 0xC0800000]
    for got in (mx, mn, ml):
        assert ubits(got)[1].tolist() == [0xFFC00005, 0x80000000, 0x3F800000, 0x40400000]
    # unsigned compare for unsigned types, signed for signed ones
    u = np.array([[200, 5]], np.uint8)
    v = np.array([[100, 250]], np.uint8)
    assert ops.tpartmax(np.zeros((1, 2), np.uint8), (1, 2), u, (1, 2), v, (1, 2)).tolist() == [[200, 250]]
    assert ops.tpartmin(np.zeros((1, 2), np.int8), (1, 2), u.view(np.int8), (1, 2), v.view(np.int8),
                        (1, 2)).tolist() == [[-56, -6]]
    assert ops.tpartmul(np.zeros((1, 2), np.uint8), (1, 2), u, (1, 2), v, (1, 2)).tolist() == [[32, 226]]
