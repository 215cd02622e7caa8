"""The GEMV MAC array (rtl/engines/gemv/mac.py, its operands rtl/engines/gemv/operands.py) in the Amaranth
simulator, bit for bit against golden.numerics.

* ``e4m3_to_fp16`` on all 256 inputs against ml_dtypes (float8_e4m3fn -> float16).
* Products: every operand kind (fp32, bf16, fp16, the four e4m3 / e5m2 pairs, int8) with special-class
  and weighted random operands, each step a block of its own (``fin_data`` = product + (-0.0) = the
  product), in one stream with the kinds switched between drained groups, valid gaps, ``fin_*`` timing
  checked on every cycle.
* Accumulation: blocks of K products into P partial sums (P = 1, 2, 8; dummy steps when P < ADD_DEPTH,
  valid gaps inside the blocks, blocks back to back): the finished partial sums on ``fin`` against
  numpy computed as golden.ops.gemv_reduce's step 2 (start at -0.0, add in increasing k, fp32 RNE).

The bulk sweeps (all fp8 and int8 pairs, 10^6 fp32 pairs, all 2^32 fp16 / bf16 pairs) run on Verilator:
tests/fp/test_gemv_mac_verilator.py and test_gemv_mac_exhaustive.py.
"""

import ml_dtypes
import numpy as np
import pytest
from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.sim import Simulator

from golden import numerics
from rtl.config import preset
from rtl.fp import BF16, FP8E4M3, FP8E5M2, FP16, FP32
from rtl.isa import DType
from rtl.engines.gemv.mac import MacArray, mac_latency, ring_length
from rtl.engines.gemv.operands import OperandKind, e4m3_to_fp16
from tests.fp.gemv_vharness import KIND_SIZE, reference
from tests.fp.ref import random_pairs, special_values

K = OperandKind
FMT = {K.FP32: FP32, K.BF16: BF16, K.FP16: FP16, K.E4M3: FP8E4M3, K.E5M2: FP8E5M2}
#: The operand kind pairs of the GEMV triples (docs/semantics.md): (A kind, B kind).
KIND_PAIRS = [(K.FP32, K.FP32), (K.BF16, K.BF16), (K.FP16, K.FP16), (K.E4M3, K.E4M3), (K.E4M3, K.E5M2),
              (K.E5M2, K.E4M3), (K.E5M2, K.E5M2), (K.INT8, K.INT8)]
LANES = 8


def tag(real=1, first=1, final=1, last=1, q=0, bank=0):
    return real | first << 1 | final << 2 | last << 3 | q << 4 | bank << 10


# ---- e4m3 -> fp16 ---------------------------------------------------------------------------------

class _E4M3(Elaboratable):
    def __init__(self):
        self.x = Signal(8)
        self.y = Signal(16)

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.y.eq(e4m3_to_fp16(m, self.x))
        return m


def test_e4m3_to_fp16_all():
    dut = _E4M3()
    got = []

    async def bench(ctx):
        for x in range(256):
            ctx.set(dut.x, x)
            got.append(ctx.get(dut.y))

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    got = np.array(got, np.uint16)
    want = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float16).view(np.uint16)
    nan = np.isnan(want.view(np.float16))
    assert nan.sum() == 2                                    # S.1111.111
    assert np.isnan(got[nan].view(np.float16)).all(), [hex(v) for v in got[nan]]
    bad = np.nonzero(~nan & (got != want))[0]
    assert not len(bad), [(hex(x), hex(got[x]), hex(want[x])) for x in bad[:8]]
    assert got[0x00] == 0x0000 and got[0x80] == 0x8000       # signed zeros kept


# ---- driving the array -------------------------------------------------------------------------------

def simulate(dut, cycles):
    """Drive one dict per cycle (keys valid, tag, a, b, a_kind, b_kind, acc_int; missing: previous value,
    valid 0), then ``MacArray.LATENCY`` idle cycles; returns per cycle (fin_valid, fin_q, fin_bank,
    fin_last, [fin_data lanes])."""
    lanes = dut.lanes
    out = []
    extra = dut.LATENCY + 2

    async def bench(ctx):
        for i in range(len(cycles) + extra):
            c = cycles[i] if i < len(cycles) else {}
            ctx.set(dut.valid, c.get("valid", 0))
            for k in ("a", "b", "a_kind", "b_kind", "acc_int"):
                if k in c:
                    ctx.set(getattr(dut, k), c[k])
            if "tag" in c:
                ctx.set(dut.tag.as_value(), c["tag"])
            d = ctx.get(dut.fin_data)
            out.append((ctx.get(dut.fin_valid), ctx.get(dut.fin_q), ctx.get(dut.fin_bank), ctx.get(dut.fin_last),
                        [d >> (32 * j) & 0xFFFFFFFF for j in range(lanes)]))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return out


def pack(elems, size):
    """B word (int) with lane j's element in bytes j * size .."""
    return sum(int(e) << (8 * size * j) for j, e in enumerate(elems))


def operands(a_kind, b_kind, rng, n_steps, lanes):
    """(a (steps,), b (steps, lanes)) element bit patterns: special values against special values, then
    weighted random pairs (tests/fp/ref.random_pairs) with one a per step."""
    if a_kind == K.INT8:
        ext = np.array([0, 1, 2, 0x7F, 0x80, 0x81, 0xFF, 0xFE, 0x40, 0xC0], np.uint64)
        a = np.concatenate([ext, rng.integers(0, 256, n_steps, dtype=np.uint64)])
        b = np.concatenate([np.resize(ext, (len(ext), lanes)), rng.integers(0, 256, (n_steps, lanes), dtype=np.uint64)])
        return a, b
    fa, fb = FMT[a_kind], FMT[b_kind]
    sa, sb = special_values(fa), special_values(fb)
    per = -(-len(sb) // lanes)
    a = [np.repeat(sa, per)]
    b = [np.tile(np.resize(sb, per * lanes).reshape(per, lanes), (len(sa), 1))]
    if fa == fb:
        ra, rb = random_pairs(fa, n_steps * lanes, rng)
        a.append(ra[::lanes])
        b.append(rb.reshape(n_steps, lanes))
    else:
        ra, _ = random_pairs(fa, n_steps, rng)
        _, rb = random_pairs(fb, n_steps * lanes, rng)
        a.append(ra)
        b.append(rb.reshape(n_steps, lanes))
    return np.concatenate(a), np.concatenate(b)


def test_products_all_kinds():
    """Special and random products of every kind pair; kinds switched between drained groups; 1 cycle in 6
    idle; every step its own block with a random q and bank (they must come out on fin_q / fin_bank)."""
    rng = np.random.default_rng(7)
    dut = MacArray(preset("default", gemv_lanes=LANES))
    L = dut.LATENCY
    cycles, steps = [], []          # steps: (cycle index, a_kind, b_kind, a, b row, tag)
    for a_kind, b_kind in KIND_PAIRS:
        u = min(LANES, 32 // KIND_SIZE[b_kind])
        a, b = operands(a_kind, b_kind, rng, 40, u)
        kinds = dict(a_kind=a_kind.value, b_kind=b_kind.value, acc_int=int(a_kind == K.INT8))
        for i in range(len(a)):
            if rng.random() < 1 / 6:
                cycles.append(dict(kinds, valid=0, a=int(rng.integers(1 << 32)), b=0, tag=tag()))
            t = tag(q=int(rng.integers(64)), bank=int(rng.integers(2)))
            steps.append((len(cycles), a_kind, b_kind, a[i], b[i], t))
            cycles.append(dict(kinds, valid=1, a=int(a[i]), b=pack(b[i], KIND_SIZE[b_kind]), tag=t))
        cycles += [dict(kinds, valid=0)] * L          # drain before the kinds change
    out = simulate(dut, cycles)
    step_at = {st[0] + L: st for st in steps}
    bad, n = [], 0
    for i, (fv, fq, fb, fl, data) in enumerate(out):
        st = step_at.get(i)
        assert fv == (st is not None), f"cycle {i}: fin_valid={fv}"
        if st is None:
            continue
        _, a_kind, b_kind, a, brow, t = st
        assert (fq, fb, fl) == (t >> 4 & 63, t >> 10 & 1, 1), f"cycle {i}: fin_q/bank/last"
        want = reference(a_kind, b_kind, a, brow)
        for j, e in enumerate(brow):
            n += 1
            if data[j] != int(want[j]):
                bad.append(f"{a_kind.name} x {b_kind.name}: a={int(a):#x} b={int(e):#x} "
                           f"got={data[j]:#010x} want={int(want[j]):#010x}")
    assert not bad, f"{len(bad)} of {n} products differ:\n" + "\n".join(bad[:10])
    assert n > 8 * 300


# ---- accumulation -------------------------------------------------------------------------------------

def block_steps(K_, P, R, rng, bank, gap):
    """The steps of one block of K products as the engine issues them: tag per product k (first k < P,
    final k >= K - P, last k = K - 1, q = k mod P), R - P dummy steps after every P products but the
    last group; idle cycles (valid 0) inserted with probability ``gap``. Returns a list of
    (valid, tag, k or None)."""
    out = []
    for k in range(K_):
        while rng.random() < gap:
            out.append((0, 0, None))
        out.append((1, tag(first=int(k < P), final=int(k >= K_ - P), last=int(k == K_ - 1), q=k % P,
                           bank=bank), k))
        if R > P and k % P == P - 1 and k != K_ - 1:
            out += [(1, tag(real=0, first=0, final=0, last=0), None)] * (R - P)
    return out


def partial_sums(prods, P):
    """golden.ops.gemv_reduce step 2: s_q starts at -0.0 and adds products k = q, q + P, ... (fp32)."""
    s = np.full((P,) + prods.shape[1:], -0.0, np.float32)
    with np.errstate(all="ignore"):
        for k in range(len(prods)):
            s[k % P] = s[k % P] + prods[k]
    return numerics.canonicalize_nan(s, DType.FP32)


def fp32_column_values(rng, n):
    """fp32 values whose sums round (mixed magnitudes, cancellations) and a few specials."""
    v = rng.standard_normal(n).astype(np.float32) * np.float32(2.0) ** rng.integers(-8, 25, n).astype(np.float32)
    v[rng.random(n) < 0.05] = np.float32(2.0 ** 24)
    v[rng.random(n) < 0.05] = -np.float32(2.0 ** 24)
    return v


@pytest.mark.parametrize("P", [1, 2, 8])
def test_accumulation(P):
    """Float blocks (fp32 and bf16 operands, two back to back, valid gaps inside) and an int8 block: the P
    finished partial sums of every lane on fin (fin_q = q, fin_bank = the block's bank, fin_last only
    with the last product's sum) equal gemv_reduce's step 2."""
    rng = np.random.default_rng(100 + P)
    lanes = 4
    dut = MacArray(preset("default", gemv_lanes=lanes, gemv_partial_sums=P))
    R = ring_length(dut._config)
    assert R == max(P, MacArray.ADD_DEPTH)
    L = mac_latency(dut._config)
    blocks = []        # (kinds, a (K,), b (K, u) bit patterns, expected sums (P, u) uint32)
    cycles = []
    plan = [(K.FP32, 21, 0.0), (K.FP32, 13, 0.3), (K.BF16, 2 * P + 3, 0.2), (K.INT8, 3 * P + 1, 0.2)]
    prev = None
    for bank, (kind, K_, gap) in enumerate(plan):
        u = min(lanes, 32 // KIND_SIZE[kind])
        if kind == K.INT8:
            a = rng.integers(0, 256, K_).astype(np.uint64)
            b = rng.integers(0, 256, (K_, u)).astype(np.uint64)
            b[0] = 0x80
            a[0] = 0x80                             # -128 * -128
        elif kind == K.FP32:
            a = fp32_column_values(rng, K_).view(np.uint32).astype(np.uint64)
            b = fp32_column_values(rng, K_ * u).view(np.uint32).astype(np.uint64).reshape(K_, u)
            if bank == 1:
                b[K_ // 2, 0] = 0x7F800000          # an infinity in lane 0, a NaN in lane 1
                b[1, 1] = 0x7FC00001
        else:
            a = (fp32_column_values(rng, K_).view(np.uint32) >> 16).astype(np.uint64)
            b = (fp32_column_values(rng, K_ * u).view(np.uint32) >> 16).astype(np.uint64).reshape(K_, u)
        kinds = dict(a_kind=kind.value, b_kind=kind.value, acc_int=int(kind == K.INT8))
        if prev is not None and prev != kinds:      # drain before the kinds change
            cycles += [dict(prev, valid=0)] * L
        prev = kinds
        start = len(cycles)
        for valid, t, k in block_steps(K_, P, R, rng, bank & 1, gap):
            if k is None:
                cycles.append(dict(kinds, valid=valid, tag=t, a=int(rng.integers(1 << 32)),
                                   b=int.from_bytes(rng.bytes(32), "little")))
            else:
                cycles.append(dict(kinds, valid=1, tag=t, a=int(a[k]), b=pack(b[k], KIND_SIZE[kind])))
        prods = reference(kind, kind, a[:, None], b)
        if kind == K.INT8:
            s = np.zeros((P, u), np.int64)
            for k in range(K_):
                s[k % P] += prods[k].view(np.int32)
            want = (s & 0xFFFFFFFF).astype(np.uint32)
        else:
            want = partial_sums(prods.view(np.float32), P).view(np.uint32)
        blocks.append((kind, bank & 1, K_, want, start))
    cycles += [dict(prev, valid=0)] * 2
    out = simulate(dut, cycles)
    fins = [(i, fq, fb, fl, data) for i, (fv, fq, fb, fl, data) in enumerate(out) if fv]
    pos = 0
    for kind, bank, K_, want, start in blocks:
        n_fin = min(P, K_)
        got = fins[pos:pos + n_fin]
        pos += n_fin
        assert len(got) == n_fin, f"{kind.name} block: {len(got)} finished sums, want {n_fin}"
        for idx, (i, fq, fb, fl, data) in enumerate(got):
            k = K_ - n_fin + idx                     # finals leave in k order
            assert (fq, fb, fl) == (k % P, bank, int(k == K_ - 1)), f"{kind.name} block, sum of k={k}"
            u = want.shape[1]
            for j in range(u):
                assert data[j] == int(want[k % P, j]), (
                    f"{kind.name} P={P} block bank={bank} q={k % P} lane {j}: got {data[j]:#010x} "
                    f"want {int(want[k % P, j]):#010x}")
    assert pos == len(fins), f"{len(fins) - pos} extra finished sums"


def test_dummy_never_ends_a_block():
    """P = 1 (R = ADD_DEPTH: R - 1 dummy steps after every product), K = 3, b = [1, 2, 4] with a = 1, a
    one-cycle gap before the last product, and dummies (b = 100) tagged ``last`` as if they ended the block:
    the ring must take ``last`` from real steps only (else it flushes on the gap and sums dummies, not 7)."""
    dut = MacArray(preset("default", gemv_lanes=4, gemv_partial_sums=1))
    assert dut.R == MacArray.ADD_DEPTH
    one = 0x3F800000
    kinds = dict(a_kind=OperandKind.FP32.value, b_kind=OperandKind.FP32.value, acc_int=0)
    word = lambda x: pack([np.float32(x).view(np.uint32)] * 4, 4)
    cycles = []
    for k, b in enumerate((1.0, 2.0, 4.0)):
        if k == 2:
            cycles.append(dict(kinds, valid=0))
        cycles.append(dict(kinds, valid=1, a=one, b=word(b),
                           tag=tag(first=int(k < 1), final=int(k >= 2), last=int(k == 2), q=0)))
        if k != 2:
            cycles += [dict(kinds, valid=1, a=one, b=word(100.0), tag=tag(real=0, last=int(k + 1 == 2)))] * (dut.R - 1)
    fins = [np.uint32(d[0]).view(np.float32) for v, q, bank, last, d in simulate(dut, cycles) if v]
    assert fins == [7.0]
