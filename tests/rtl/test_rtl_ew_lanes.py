"""ElementwiseLanes (rtl/engines/elementwise/lanes.py) in the Amaranth simulator against golden.numerics, bit for bit.

One stream per test, dtype / op / keep_a changing every cycle: every (dtype, op) with random words,
the float special-class pairs (zeros, subnormals, largest finite, infinities, NaNs with payloads and both
signs), weighted random float pairs (ties, cancellation, overflow, underflow) and integer extremes.
``out_valid`` and the exact ``LATENCY`` are checked on every cycle. word_bytes=16 keeps it fast
(~200 cycles/s); the bulk float sweeps run on Verilator (tests/fp/test_ew_lanes_verilator.py, test_ew_lanes_exhaustive.py).
"""


import numpy as np
import pytest
from amaranth.sim import Simulator

from amaranth import Module, Signal

from golden import numerics
from rtl.engines.elementwise import lanes as lanes_module
from rtl.engines.elementwise.cheap_path import CheapPath
from rtl.engines.elementwise.lanes import ElementwiseLanes, LaneOp
from rtl.fp import BF16, FP16, FP32, FPAdd, FPConvert
from rtl.fpga.dsp import product
from rtl.isa import DTYPE_BYTES, DType
from rtl.lib.contract import ContractError
from tests.fp.ref import random_pairs, special_values
from rtl_contract import built_not_used

W = 16
INT_TYPES = [DType.INT8, DType.UINT8, DType.INT16, DType.UINT16, DType.INT32, DType.UINT32]
FLOAT_FMT = {DType.FP16: FP16, DType.BF16: BF16, DType.FP32: FP32}
GOLDEN = {LaneOp.ADD: numerics.add, LaneOp.SUB: numerics.sub, LaneOp.MUL: numerics.mul,
          LaneOp.MAX: numerics.maximum, LaneOp.MIN: numerics.minimum}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def expected(dtype, op, a, b, keep):
    """Golden result word (int) for operand words a, b (ints) and the keep_a byte mask."""
    if dtype in (DType.FP8E4M3, DType.FP8E5M2):
        return None
    ab, bb = a.to_bytes(W, "little"), b.to_bytes(W, "little")
    dt = numerics.np_dtype(dtype)
    r = GOLDEN[op](np.frombuffer(ab, dt), np.frombuffer(bb, dt), dtype)
    rb = bytearray(np.asarray(r, dt).tobytes())
    for j in range(W):
        if keep >> j & 1:
            rb[j] = ab[j]
    return int.from_bytes(bytes(rb), "little")


def pack(elems, size):
    return int.from_bytes(np.asarray(elems, UINT[size]).astype(f"<u{size}").tobytes(), "little")


def words_of(dtype, a_elems, b_elems):
    """Operand word pairs holding the element pairs (padded with random pairs to whole words)."""
    size = DTYPE_BYTES[dtype]
    per = W // size
    n = -(-len(a_elems) // per) * per
    a = np.resize(np.asarray(a_elems, np.uint64), n)
    b = np.resize(np.asarray(b_elems, np.uint64), n)
    return [(pack(a[i:i + per], size), pack(b[i:i + per], size)) for i in range(0, n, per)]


def rand_word(rng):
    return int.from_bytes(rng.bytes(W), "little")


def int_specials(dtype):
    bits = 8 * DTYPE_BYTES[dtype]
    vals = {0, 1, 2, 3, (1 << bits) - 1, (1 << bits) - 2, 1 << (bits - 1), (1 << (bits - 1)) - 1,
            (1 << (bits - 1)) + 1, 0x55 % (1 << bits), 1 << (bits // 2)}
    return np.array(sorted(vals), np.uint64)


def build_stream(rng, n_random_words, special_float=True, all_specials=True):
    """List of (dtype, op, a, b, keep) words for every dtype x op, shuffled."""
    words = []
    for dtype in INT_TYPES + list(FLOAT_FMT):
        for op in LaneOp:
            size = DTYPE_BYTES[dtype]
            if dtype in FLOAT_FMT:
                fmt = FLOAT_FMT[dtype]
                if special_float:
                    s = special_values(fmt)
                    if all_specials:
                        a, b = np.meshgrid(s, s, indexing="ij")
                    else:
                        a, b = rng.choice(s, 64), rng.choice(s, 64)
                    words += [(dtype, op, x, y) for x, y in words_of(dtype, a.ravel(), b.ravel())]
                a, b = random_pairs(fmt, n_random_words * (W // size), rng)
                words += [(dtype, op, x, y) for x, y in words_of(dtype, a, b)]
            else:
                s = int_specials(dtype)
                a, b = np.meshgrid(s, s, indexing="ij")
                words += [(dtype, op, x, y) for x, y in words_of(dtype, a.ravel(), b.ravel())]
                words += [(dtype, op, rand_word(rng), rand_word(rng)) for _ in range(n_random_words)]
    for _ in range(8):   # fp8: result don't care, but the stream must go on around them
        words.append((DType(int(rng.choice([9, 10]))), LaneOp(int(rng.integers(5))),
                      rand_word(rng), rand_word(rng)))
    order = rng.permutation(len(words))
    out = []
    for i in order:
        dtype, op, a, b = words[i]
        r = rng.random()
        keep = 0 if r < 0.6 else (1 << W) - 1 if r < 0.65 else int(rng.integers(0, 1 << W))
        out.append((dtype, op, a, b, keep))
    return out


def run_stream(dut, words, valid_pattern):
    """Drive one word per cycle (valid from ``valid_pattern``); returns the list of results of the valid
    words and checks out_valid == valid delayed by exactly LATENCY on every cycle."""
    L = dut.LATENCY
    valids = [valid_pattern(i) for i in range(len(words))]
    results = [None] * len(words)
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def bench(ctx):
        for i in range(len(words) + L + 2):
            if i < len(words):
                dtype, op, a, b, keep = words[i]
                ctx.set(dut.a, a)
                ctx.set(dut.b, b)
                ctx.set(dut.dtype, dtype)
                ctx.set(dut.op, op)
                ctx.set(dut.keep_a, keep)
                ctx.set(dut.valid, valids[i])
            else:
                ctx.set(dut.valid, 0)
                ctx.set(dut.a, 0)
            j = i - L
            want_valid = 0 <= j < len(words) and valids[j]
            assert ctx.get(dut.out_valid) == want_valid, f"cycle {i}: out_valid"
            if want_valid:
                results[j] = ctx.get(dut.result)
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    return results, valids


def check(words, results, valids):
    bad = []
    for (dtype, op, a, b, keep), got, v in zip(words, results, valids):
        if not v:
            continue
        want = expected(dtype, op, a, b, keep)
        if want is not None and got != want:
            bad.append(f"{dtype.name} {op.name} a={a:#034x} b={b:#034x} keep={keep:#06x}\n"
                       f"   got={got:#034x}\n  want={want:#034x}")
    assert not bad, f"{len(bad)} mismatching words:\n" + "\n".join(bad[:8])


def test_latency_attribute():
    """``LATENCY`` from its named terms (the RTL's is measured on every cycle by ``run_stream``)."""
    L = ElementwiseLanes
    # widening, the fp32 operands' register, the deeper of add / mul, the select register, narrowing, output
    assert L.latency() == 2 + L.OPERAND_CYCLES + max(6, 6) + L.SELECT_CYCLES + 2 + L.OUTPUT_CYCLES
    # the cheap (integer / MAX / MIN) path sets the latency here
    assert L.latency(widen_depth=0, add_depth=1, mul_depth=0, narrow_depth=0) == CheapPath.LATENCY + L.OUTPUT_CYCLES
    depths = dict(widen_depth=3, add_depth=3, mul_depth=4, narrow_depth=3)
    assert L.latency(**depths) == L.fp_latency(**depths) + L.OUTPUT_CYCLES == 3 + 1 + 4 + 1 + 3 + 1
    dut = ElementwiseLanes(16, **depths)
    dut._MustUse__silence = True        # built only to read its attribute
    assert dut.LATENCY == L.latency(**depths)


def test_product_cycles():
    """``CheapPath.PRODUCT_CYCLES`` is :func:`rtl.fpga.dsp.product`'s latency (with its operand registers), in
    the simulator: the product of the operands set in one cycle is on the output that many edges later."""
    m = Module()
    a, b = Signal(16), Signal(16)
    p = product(m, a, b)
    sim = Simulator(m)
    sim.add_clock(1e-8)
    seen = []

    async def bench(ctx):
        for i in range(6):
            ctx.set(a, 1000 + i)
            ctx.set(b, 3)
            await ctx.tick()
            seen.append(ctx.get(p))

    sim.add_testbench(bench)
    sim.run()
    # seen[k] is after edge k + 1; the operands set before edge j + 1 give the output after edge j + P
    P = CheapPath.PRODUCT_CYCLES
    assert seen == [0] * (P - 1) + [(1000 + j) * 3 for j in range(6 - P + 1)]


def _elaborate_lanes():
    """One slot of lanes, elaborated (its units built, not elaborated)."""
    ElementwiseLanes(4).elaborate(None)


def test_unit_latency_contract(monkeypatch):
    """The slot's stages count each fp unit's latency as its depth: a unit whose latency differs fails at
    elaboration (here an adder, and a narrowing converter, one cycle slower than their depth)."""
    with built_not_used():
        _elaborate_lanes()

    class SlowAdd(FPAdd):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.latency += 1

    class SlowConvert(FPConvert):
        def __init__(self, fmt, depth, **kwargs):
            super().__init__(fmt, depth, **kwargs)
            self.latency += fmt is FP32

    for name, unit in (("FPAdd", SlowAdd), ("FPConvert", SlowConvert)):
        with monkeypatch.context() as mp, built_not_used():
            mp.setattr(lanes_module, name, unit)
            with pytest.raises(ContractError):
                _elaborate_lanes()


def test_cheap_path_contract(monkeypatch):
    """MAX / MIN's keys and compare use their results at the products' stage: a multiplier of another
    latency fails at elaboration."""
    monkeypatch.setattr(CheapPath, "PRODUCT_CYCLES", CheapPath.PRODUCT_CYCLES + 1)
    with built_not_used(), pytest.raises(ContractError):
        _elaborate_lanes()


@pytest.mark.parametrize("specials", ["sample", pytest.param("all", marks=pytest.mark.slow)])
def test_all_types_ops_specials(specials):
    """Every dtype x op, special-class float pairs, integer extremes, random words; valid always 1.
    ``all``: every special-class pair (~2,500 words, ``slow``); ``sample``: 64 random special pairs per float
    type and op (~1,000 words). Every special-class pair of every float type and op also runs bit-exact on
    the lanes in the normal set on Verilator (tests/fp/test_ew_lanes_verilator.py)."""
    rng = np.random.default_rng(1)
    words = build_stream(rng, n_random_words=6, all_specials=specials == "all")
    dut = ElementwiseLanes(W)
    results, valids = run_stream(dut, words, lambda i: 1)
    check(words, results, valids)


@pytest.mark.parametrize("depths", [dict(widen_depth=0, add_depth=1, mul_depth=0, narrow_depth=0),
                                    dict(widen_depth=1, add_depth=3, mul_depth=3, narrow_depth=3)],
                         ids=["shallow", "d1-3-3-3"])
def test_other_depths_gaps(depths):
    """Other pipeline depths (incl. latency set by the integer path), valid with gaps, a sample of
    special pairs and weighted random words."""
    rng = np.random.default_rng(2 + depths["add_depth"])
    words = build_stream(rng, n_random_words=2, all_specials=False)
    dut = ElementwiseLanes(W, **depths)
    results, valids = run_stream(dut, words, lambda i: int((i * 7919) % 5 != 0))
    check(words, results, valids)
