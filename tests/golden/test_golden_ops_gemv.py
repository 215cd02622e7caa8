"""TGEMV / TGEMV_ACC / TGEMV_BIAS against the oracle's per-element accumulation (docs/semantics.md)."""

import numpy as np
import pytest

from rtl.isa import DType, Profile, Status
from golden.numerics import DTYPE_NUMPY
from golden import ops
from golden.errors import IsaError

import golden_oracle as oracle
from golden_helpers import rand_tile, rand_values, ubits

F32 = DType.FP32
TRIPLES = [(DType.INT32, DType.INT8, DType.INT8), (F32, DType.FP16, DType.FP16), (F32, DType.BF16, DType.BF16),
           (F32, F32, F32), (F32, DType.FP8E4M3, DType.FP8E4M3), (F32, DType.FP8E4M3, DType.FP8E5M2),
           (F32, DType.FP8E5M2, DType.FP8E4M3), (F32, DType.FP8E5M2, DType.FP8E5M2)]


def ref_column(ct, at, bt, a, b, init, P):
    if ct == DType.INT32:
        s = int(init) if init is not None else 0
        for x, y in zip(a, b):
            s += int(x) * int(y)
        s %= 1 << 32
        return s - (1 << 32) if s >= 1 << 31 else s
    ib = oracle.to_bits(init, F32) if init is not None else 0
    return oracle.gemv_float([oracle.to_bits(x, at) for x in a], [oracle.to_bits(y, bt) for y in b], ib, at, bt, P)


def run(variant, ct, at, bt, K, N, P, rng, gen=rand_values):
    a = gen(rng, at, (1, K + 1))
    b = gen(rng, bt, (K + 1, N + 2))
    c = rand_tile(rng, ct, (1, N + 2))
    init = gen(rng, ct, (1, N + 2)) if variant else None
    kw = dict(partial_sums=P)
    if variant == "acc":
        got = ops.tgemv_acc(c, (1, N), init, (1, N), a, (1, K), b, (K, N), **kw)
    elif variant == "bias":
        got = ops.tgemv_bias(c, (1, N), init, (1, N), a, (1, K), b, (K, N), **kw)
    else:
        got = ops.tgemv(c, (1, N), a, (1, K), b, (K, N), **kw)
    for j in range(N):
        want = ref_column(ct, at, bt, a[0, :K], b[:K, j], None if init is None else init[0, j], P)
        g = int(ubits(got)[0, j]) if ct == F32 else int(got[0, j])
        assert g == want, f"column {j}: got {g:#x} want {want:#x}"
    assert np.array_equal(ubits(got)[0, N:], ubits(c)[0, N:])
    return got


@pytest.mark.parametrize("triple", TRIPLES, ids=lambda t: "-".join(x.name for x in t))
@pytest.mark.parametrize("variant", ["", "acc", "bias"])
def test_gemv_values(triple, variant):
    rng = np.random.default_rng(sum(t.value for t in triple) + len(variant))
    run(variant, *triple, K=13, N=5, P=4, rng=rng)


@pytest.mark.parametrize("P", [1, 2, 4, 8, 64])
@pytest.mark.parametrize("triple", [TRIPLES[1], TRIPLES[3], TRIPLES[5]], ids=["fp16", "fp32", "fp8mix"])
def test_gemv_partial_sums_and_specials(triple, P):
    rng = np.random.default_rng(P)
    run("acc", *triple, K=37, N=4, P=P, rng=rng, gen=rand_tile)       # raw bits: NaN, inf, subnormals


def test_gemv_order_matters_and_is_the_documented_one():
    """The worked example of docs/semantics.md: K = 6, P = 4, fp32."""
    a = np.array([[1.0, 1.0, 1.0, 1.0, 1.0, 1.0]], np.float32)
    b = np.array([[2.0 ** 24], [1.0], [1.0], [1.0], [-(2.0 ** 24)], [1.0]], np.float32)
    c = np.zeros((1, 1), np.float32)
    # partial sums: s0 = (-0 + 2^24) + -2^24 = 0; s1 = 1 + 1 = 2; s2 = 1; s3 = 1; tree: (0 + 2) + (1 + 1) = 4
    assert ops.tgemv(c, (1, 1), a, (1, 6), b, (6, 1), partial_sums=4)[0, 0] == 4.0
    # P = 1: ((((2^24 + 1) + 1) + 1) - 2^24) + 1: 2^24 + 1 rounds to 2^24 each time -> 0 + 1 = 1
    assert ops.tgemv(c, (1, 1), a, (1, 6), b, (6, 1), partial_sums=1)[0, 0] == 1.0
    # P = 2: s0 = 2^24 + 1 + -2^24 -> (2^24 + 1 -> 2^24) -> 0 ; s1 = 1 + 1 + 1 = 3 -> 3
    assert ops.tgemv(c, (1, 1), a, (1, 6), b, (6, 1), partial_sums=2)[0, 0] == 3.0


def test_gemv_negative_zero_identity_and_init_sign():
    a = np.array([[-1.0, 1.0]], np.float32)
    b = np.array([[0.0], [-0.0]], np.float32)
    c = np.zeros((1, 1), np.float32)
    # every product is -0: the sum is -0; TGEMV adds it to +0 -> +0; ACC with C_in = -0 -> -0
    assert ubits(ops.tgemv(c, (1, 1), a, (1, 2), b, (2, 1)))[0, 0] == 0
    neg = np.array([[-0.0]], np.float32)
    assert ubits(ops.tgemv_acc(c, (1, 1), neg, (1, 1), a, (1, 2), b, (2, 1)))[0, 0] == 0x80000000


def test_gemv_int8_wraps():
    a = np.full((1, 4095), -128, np.int8)
    b = np.full((4095, 1), -128, np.int8)
    init = np.array([[2 ** 31 - 1]], np.int32)
    got = ops.tgemv_bias(np.zeros((1, 1), np.int32), (1, 1), init, (1, 1), a, (1, 4095), b, (4095, 1))
    want = (2 ** 31 - 1 + 4095 * 16384) % 2 ** 32
    assert int(got[0, 0]) == want - 2 ** 32 if want >= 2 ** 31 else want


def test_gemv_acc_in_place_and_overflow_to_inf():
    a = np.array([[3e38, 3e38]], np.float32)
    b = np.array([[1.0], [1.0]], np.float32)
    c = np.array([[1.0]], np.float32)
    got = ops.tgemv_acc(c, (1, 1), c, (1, 1), a, (1, 2), b, (2, 1))
    assert np.isinf(got[0, 0]) and got[0, 0] > 0
    a = np.array([[np.inf, -np.inf]], np.float32)
    assert ubits(ops.tgemv(c, (1, 1), a, (1, 2), b, (2, 1)))[0, 0] == 0x7FC00000


@pytest.mark.parametrize("K,N,status", [(0, 3, Status.DIM_OUT_OF_RANGE), (4096, 1, Status.DIM_OUT_OF_RANGE),
                                        (3, 0, Status.DIM_OUT_OF_RANGE)])
def test_gemv_dims(K, N, status):
    a = np.zeros((1, max(K, 1)), np.float16)
    b = np.zeros((max(K, 1), max(N, 1)), np.float16)
    c = np.zeros((1, max(N, 1)), np.float32)
    with pytest.raises(IsaError) as e:
        ops.tgemv(c, (1, N), a, (1, K), b, (K, N))
    assert e.value.status == status


def test_gemv_types():
    z = lambda t, s: np.zeros(s, DTYPE_NUMPY[t])
    with pytest.raises(IsaError) as e:          # fp8 not in A2A3
        ops.tgemv(z(F32, (1, 2)), (1, 2), z(DType.FP8E4M3, (1, 2)), (1, 2), z(DType.FP8E4M3, (2, 2)), (2, 2),
                  profile=Profile.A2A3)
    assert e.value.status == Status.DTYPE_UNSUPPORTED
    with pytest.raises(IsaError) as e:          # half x bf16 is not a triple
        ops.tgemv(z(F32, (1, 2)), (1, 2), z(DType.FP16, (1, 2)), (1, 2), z(DType.BF16, (2, 2)), (2, 2))
    assert e.value.status == Status.DTYPE_MISMATCH
