"""GEMV MAC array products (rtl/engines/gemv/mac.py ``MacArray``, ``preset("default", gemv_lanes=32)``, P = 8) on
Verilator, bit for bit against ``golden.numerics.widening_product`` (exact product rounded once to fp32,
NaN canonical) and the exact int8 x int8 product.

Every step is a block of its own (tag real = first = final = last = 1, random q and bank), so a lane's
``fin_data`` is product + (-0.0) = the product; ``fin_valid`` / ``fin_q`` / ``fin_bank`` / ``fin_last``
are checked on every cycle (exactly ``mac_latency`` cycles after each step, never otherwise), with
1 cycle in 8 idle. One step: ``a`` and one B word, ``min(32, 32 / size)`` lanes.

* every fp8 pair in all four e4m3 / e5m2 combinations, every int8 x int8 pair (65 536 each);
* fp32: all special-class pairs + N_FP32 weighted random pairs (products near overflow and underflow,
  subnormal operands and results, rounding ties);
* fp16, bf16: all special-class pairs + N_16 weighted random pairs (every pair: test_gemv_mac_exhaustive.py);
* all kinds in one stream, kinds switched between drained groups.
"""

import numpy as np
import pytest

from rtl.fp import BF16, FP16, FP32
from rtl.engines.gemv.mac import OperandKind as K

from .checks import assert_bits_equal
from .gemv_vharness import KIND_SIZE, TAG_ALONE, ctrl_word, default_harness, pack_b, products, reference, \
    run_stream
from .ref import random_pairs, special_values

N_FP32 = 1_000_000
N_16 = 200_000
FP8 = [(K.E4M3, K.E4M3), (K.E4M3, K.E5M2), (K.E5M2, K.E4M3), (K.E5M2, K.E5M2)]


def grid(av, bv, u):
    """Steps pairing every a in ``av`` with every b in ``bv``: a (steps,), b (steps, u) (bv padded by
    wrapping to whole steps)."""
    per = -(-len(bv) // u)
    b = np.resize(np.asarray(bv, np.uint64), per * u).reshape(per, u)
    return np.repeat(np.asarray(av, np.uint64), per), np.tile(b, (len(av), 1))


def weighted_steps(fmt, n_pairs, u, rng):
    """~n_pairs weighted random pairs (tests/fp/ref.random_pairs) as steps of one a and u b values. Each
    step takes its a from the first of its u pairs; the other lanes' b exponents are shifted so that each
    pair keeps its exponent sum (when both stay normal), which keeps the products near overflow / underflow
    where random_pairs put them; the tie slice (short significands) stays whole per step."""
    n = -(-n_pairs // u)
    A, B = (x.reshape(n, u) for x in random_pairs(fmt, n * u, rng))
    f, emax = fmt.frac_bits, (1 << fmt.exp_bits) - 1
    ea = (A >> np.uint64(f) & np.uint64(emax)).astype(np.int64)
    eb = (B >> np.uint64(f) & np.uint64(emax)).astype(np.int64)
    e = eb + ea - ea[:, :1]
    normal = lambda x: (x > 0) & (x < emax)
    ok = normal(ea) & normal(ea[:, :1]) & normal(eb) & normal(e)
    mask = np.uint64(emax << f)
    B = np.where(ok, (B & ~mask) | (np.maximum(e, 0).astype(np.uint64) << np.uint64(f)), B)
    return A[:, 0], B


def check(h, a_kind, b_kind, a, b, rng, what):
    """All steps through the array (1 in 8 cycles idle), products compared bit for bit."""
    n = len(a)
    pos = np.arange(n) + np.cumsum(rng.random(n) < 1 / 8)     # an idle cycle before 1 step in 8
    valid = np.zeros(pos[-1] + 1, np.uint32)
    valid[pos] = 1
    aa = np.zeros(len(valid), np.uint64)
    bb = np.zeros((len(valid), b.shape[1]), np.uint64)
    aa[pos], bb[pos] = a, b
    tags = rng.integers(0, 1 << 11, len(valid)).astype(np.uint32) & ~np.uint32(0xF)
    got = products(h, a_kind, b_kind, aa, bb, tags=tags, valid=valid)
    want = reference(a_kind, b_kind, a[:, None], b)
    assert_bits_equal(got.ravel(), want.ravel(), np.repeat(a, b.shape[1]), b.ravel(), what)
    return got.size


@pytest.mark.parametrize("kinds", FP8, ids=lambda k: f"{k[0].name}x{k[1].name}")
def test_fp8_all_pairs(kinds):
    h = default_harness()
    a, b = grid(np.arange(256), np.arange(256), h.used_lanes(kinds[1]))
    assert check(h, *kinds, a, b, np.random.default_rng(1), f"{kinds[0].name} x {kinds[1].name}") == 1 << 16


def test_int8_all_pairs():
    h = default_harness()
    a, b = grid(np.arange(256), np.arange(256), h.used_lanes(K.INT8))
    assert check(h, K.INT8, K.INT8, a, b, np.random.default_rng(2), "int8") == 1 << 16


def product_classes(a, b):
    """Counts of the interesting fp32 products among pairs (a, b) of fp32 bit patterns."""
    with np.errstate(all="ignore"):
        fa, fb = (np.asarray(x, np.uint32).view(np.float32).astype(np.float64) for x in (a, b))
        p64 = fa * fb                                     # exact
        p32 = p64.astype(np.float32)
        fin = np.isfinite(p32)
        nb = np.nextafter(p32, np.where(p64 > p32, np.float32(np.inf), np.float32(-np.inf)))
        tie = fin & (p64 != p32) & (2 * p64 == p32.astype(np.float64) + nb.astype(np.float64))
    tiny = np.float32(2.0 ** -126)
    return {"ties": int(tie.sum()), "inexact": int((fin & (p64 != p32)).sum()),
            "overflows": int((np.isinf(p32) & np.isfinite(p64)).sum()),
            "subnormal results": int((fin & (p32 != 0) & (np.abs(p32) < tiny)).sum()),
            "underflows to zero": int(((p32 == 0) & (p64 != 0)).sum()),
            "NaN": int(np.isnan(p64).sum())}


def test_fp32():
    h = default_harness()
    rng = np.random.default_rng(3)
    u = h.used_lanes(K.FP32)
    s = special_values(FP32)
    sa, sb = grid(s, s, u)
    ra, rb = weighted_steps(FP32, N_FP32, u, rng)
    a, b = np.concatenate([sa, ra]), np.concatenate([sb, rb])
    n = check(h, K.FP32, K.FP32, a, b, rng, "fp32")
    assert n >= N_FP32
    print(f"\nfp32: {n} products,", product_classes(np.repeat(ra, u), rb.ravel()))


@pytest.mark.parametrize("kind", [K.FP16, K.BF16], ids=lambda k: k.name)
def test_16bit(kind):
    h = default_harness()
    rng = np.random.default_rng(4 + kind.value)
    fmt = {K.FP16: FP16, K.BF16: BF16}[kind]
    u = h.used_lanes(kind)
    s = special_values(fmt)
    sa, sb = grid(s, s, u)
    ra, rb = weighted_steps(fmt, N_16, u, rng)
    assert check(h, kind, kind, np.concatenate([sa, ra]), np.concatenate([sb, rb]), rng, kind.name) >= N_16


def test_kinds_switched():
    """All kind pairs in one stream, random order, a few hundred products each; kinds change after the
    previous group has drained (they are constant during an instruction)."""
    h = default_harness()
    rng = np.random.default_rng(5)
    pairs = FP8 + [(K.INT8, K.INT8), (K.FP32, K.FP32), (K.FP16, K.FP16), (K.BF16, K.BF16)]
    L = h.latency
    aa, bb, cc, groups = [], [], [], []
    pos = 0
    for i in rng.permutation(2 * len(pairs)):
        a_kind, b_kind = pairs[i % len(pairs)]
        u = h.used_lanes(b_kind)
        n = 20
        a = rng.integers(0, 1 << (8 * KIND_SIZE[a_kind]), n, dtype=np.uint64)
        b = rng.integers(0, 1 << (8 * KIND_SIZE[b_kind]), (n, u), dtype=np.uint64)
        acc = int(a_kind == K.INT8)
        aa += [a, np.zeros(L, np.uint64)]
        bb += [pack_b(b, KIND_SIZE[b_kind], h.bw), np.zeros((L, h.bw), np.uint32)]
        cc += [ctrl_word(1, acc, a_kind.value, b_kind.value, np.full(n, TAG_ALONE)),
               ctrl_word(0, acc, a_kind.value, b_kind.value, np.zeros(L))]
        groups.append((pos, a_kind, b_kind, a, b))
        pos += n + L
    finw, data = run_stream(h, np.concatenate(aa), np.concatenate(bb), np.concatenate(cc))
    expect_valid = np.zeros(len(finw), bool)
    for start, a_kind, b_kind, a, b in groups:
        expect_valid[start + L:start + L + len(a)] = True
        got = data[start + L:start + L + len(a), :b.shape[1]]
        want = reference(a_kind, b_kind, a[:, None], b)
        assert_bits_equal(got.ravel(), want.ravel(), np.repeat(a, b.shape[1]), b.ravel(),
                          f"{a_kind.name} x {b_kind.name}")
    assert ((finw & 1) == expect_valid).all()
