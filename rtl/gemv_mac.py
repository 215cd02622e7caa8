"""The MAC array of the GEMV engine: products of ``A[0, k]`` with one row of B, and the interleaved
partial sums of docs/semantics.md ("TGEMV accumulation order") in one accumulation loop per lane.

:class:`MacArray` takes one *step* per cycle: the scalar ``a`` (``A[0, k]``) and a word holding
``B[k, j0 .. j0 + lanes)`` (lane ``j`` in bytes ``j * size .. (j + 1) * size`` of the word). Each lane
multiplies (:class:`rtl.fp.FPMul` on fp32 operands: every operand type is first widened exactly to
fp32, so a product is the exact product rounded once to fp32, which is the golden's definition for
every triple; int8 x int8 exactly in 16 bits) and adds the product into its partial sum
``k mod P`` (``P = config.gemv_partial_sums``) through one pipelined fp32 adder (or an int32 adder).

The accumulation loop: the adder (``ADD_DEPTH`` registers) and ``R - ADD_DEPTH`` more registers form a
ring of ``R = max(P, ADD_DEPTH)`` *steps*. A product entering the ring at step ``s`` is added to the ring's
output, which is the sum that entered at step ``s - R``: with products in order and ``R = P`` that is its
partial sum. The ring moves only on steps (a product, a *dummy*, or a flush step, below), so gaps in
the input never break a chain; when ``P`` < ``ADD_DEPTH`` the engine puts ``R - P`` dummy steps after
every ``P`` products (rate ``P / R``). The first ``P`` products of a block add the exact identity (-0.0,
integer 0) instead of the ring's output, so blocks follow each other with no gap. A product marked
``final`` (the last one of its partial sum, ``k >= K - P``) leaves the ring ``R`` steps later as a
finished partial sum on ``fin``. After a block's last product (``last``) and until the next block's
first, the ring steps every cycle (flush), so the last block's sums come out without more input.

Parameters: ``config`` (``ub_word_bytes`` = W, ``gemv_lanes`` = lanes, ``gemv_partial_sums`` = P).

Ports
-----
valid, tag (:data:`MacTag`): a step (``tag.real`` = 0: a dummy); no backpressure (the ring never stalls).
a : 32 bits, the element ``A[0, k]`` in its low bits.
b : ``8 W`` bits, the word with the lanes' B elements.
a_kind, b_kind (:class:`OperandKind`), acc_int: the operand formats, constant during an instruction.
fin_valid, fin_q, fin_bank, fin_last, fin_data (lanes x 32 bits): a finished partial sum of every lane.

Latency: a step reaches the ring ``PRODUCT_LATENCY`` cycles after ``valid`` (operand register, fp8 ->
fp16 -> fp32 widening, multiplier); its partial sum leaves on ``fin`` ``R`` ring steps later.
"""

from amaranth import *
from amaranth.lib import data, enum, wiring
from amaranth.lib.wiring import In, Out

from .fp import FP16, FP32, FPAdd, FPConvert, FPMul
from .isa import DType

__all__ = ["MacArray", "MacTag", "OperandKind", "operand_kind", "e4m3_to_fp16", "ADD_DEPTH", "MUL_DEPTH",
           "WIDEN_DEPTH", "PRODUCT_LATENCY", "ring_length"]

#: Pipeline registers of the ring's fp32 adder (the ew lanes' choice for 100 MHz on ECP5).
ADD_DEPTH = 5
#: Pipeline registers of the fp32 multiplier.
MUL_DEPTH = 5
#: Pipeline registers of the fp16 -> fp32 widening.
WIDEN_DEPTH = 2
#: Cycles from a step on the inputs to its product at the ring: operand register + widening + multiplier.
PRODUCT_LATENCY = 1 + WIDEN_DEPTH + MUL_DEPTH

#: fp32 -0.0: the exact identity of fp32 addition (x + -0 = x for every x, including -0).
NEG_ZERO = 0x8000_0000


def ring_length(config):
    """Steps around the accumulation loop: ``max(P, ADD_DEPTH)``."""
    return max(config.gemv_partial_sums, ADD_DEPTH)


class OperandKind(enum.Enum, shape=3):
    """How a GEMV operand is widened: the float formats to fp32, or int8."""
    FP32 = 0
    BF16 = 1
    FP16 = 2
    E4M3 = 3
    E5M2 = 4
    INT8 = 5


_KIND_OF = {DType.FP32: OperandKind.FP32, DType.BF16: OperandKind.BF16, DType.FP16: OperandKind.FP16,
            DType.FP8E4M3: OperandKind.E4M3, DType.FP8E5M2: OperandKind.E5M2, DType.INT8: OperandKind.INT8}


def operand_kind(m, dtype):
    """The :class:`OperandKind` of a GEMV operand type (combinational; other codes never pass the checker)."""
    out = Signal(OperandKind)
    with m.Switch(dtype.as_value()):
        for dt, kind in _KIND_OF.items():
            with m.Case(dt):
                m.d.comb += out.eq(kind)
    return out


#: What travels with a step through the products and the ring.
MacTag = data.StructLayout({
    "real": 1,      # a product (0: a dummy step, P < ADD_DEPTH)
    "first": 1,     # k < P: adds the identity, not the ring's output
    "final": 1,     # k >= K - P: its sum leaves the ring as a finished partial sum
    "last": 1,      # k == K - 1: the block's last product
    "q": 6,         # its partial sum, k mod P
    "bank": 1,      # block parity: which bank of the reducer takes the block's sums
})


def e4m3_to_fp16(m, x):
    """fp8 e4m3fn (ml_dtypes ``float8_e4m3fn``) -> fp16, exact; NaN (S.1111.111) -> fp16 NaN. Subnormal
    e4m3 (``m * 2^-9``) are normal in fp16 and are normalised here (3-bit leading-one search)."""
    s, e, f = x[7], x[3:7], x[0:3]
    out = Signal(16)
    with m.If((e == 0xF) & (f == 7)):
        m.d.comb += out.eq(Cat(C(0x7E00, 15), s))
    with m.Elif(e != 0):
        m.d.comb += out.eq(Cat(C(0, 7), f, e + 8, s))                  # bias 7 -> 15
    with m.Elif(f[2]):
        m.d.comb += out.eq(Cat(C(0, 8), f[0:2], C(8, 5), s))           # 1.xx * 2^-7
    with m.Elif(f[1]):
        m.d.comb += out.eq(Cat(C(0, 9), f[0], C(7, 5), s))             # 1.x * 2^-8
    with m.Elif(f[0]):
        m.d.comb += out.eq(Cat(C(0, 10), C(6, 5), s))                  # 2^-9
    with m.Else():
        m.d.comb += out.eq(Cat(C(0, 15), s))                           # +-0
    return out


def _delay(m, v, n, name, en=None, reset_less=True):
    """``v`` through ``n`` registers (clock-enabled by ``en`` if given); reset-less unless the value
    holds a valid bit (a reset then reaches only what needs it: fewer loads on the reset net)."""
    v = Value.cast(v)
    for i in range(n):
        r = Signal(v.shape(), name=f"{name}_d{i + 1}", reset_less=reset_less)
        if en is None:
            m.d.sync += r.eq(v)
        else:
            with m.If(en):
                m.d.sync += r.eq(v)
        v = r
    return v


class _Widen(Elaboratable):
    """One operand to fp32 (or its int8 value): ``raw`` (the element in its low bits, registered by the
    caller) -> ``fp32`` and ``int8`` after ``WIDEN_DEPTH`` cycles."""

    def __init__(self, name):
        self.raw = Signal(32, name=f"{name}_raw", reset_less=True)
        self.kind = Signal(OperandKind, name=f"{name}_kind", reset_less=True)
        self.fp32 = Signal(32, name=f"{name}_fp32")
        self.int8 = Signal(signed(8), name=f"{name}_int8")
        self._name = name

    def elaborate(self, platform):
        m = Module()
        m.submodules.conv = conv = FPConvert(FP16, WIDEN_DEPTH, FP32)
        h = Signal(16)
        with m.Switch(self.kind):
            with m.Case(OperandKind.E4M3):
                m.d.comb += h.eq(e4m3_to_fp16(m, self.raw[:8]))
            with m.Case(OperandKind.E5M2):
                m.d.comb += h.eq(Cat(C(0, 8), self.raw[:8]))            # e5m2 is fp16's top byte
            with m.Default():
                m.d.comb += h.eq(self.raw[:16])
        m.d.comb += conv.a.eq(h)
        raw = _delay(m, self.raw, WIDEN_DEPTH, "raw")
        with m.Switch(self.kind):
            with m.Case(OperandKind.FP32):
                m.d.comb += self.fp32.eq(raw)
            with m.Case(OperandKind.BF16):
                m.d.comb += self.fp32.eq(Cat(C(0, 16), raw[:16]))       # bf16 is fp32's top half
            with m.Default():
                m.d.comb += self.fp32.eq(conv.result)
        m.d.comb += self.int8.eq(raw[:8])
        return m


class MacArray(wiring.Component):
    __doc__ = __doc__

    def __init__(self, config):
        self._config = config
        self.lanes = config.gemv_lanes
        self.P = config.gemv_partial_sums
        self.R = ring_length(config)
        super().__init__({
            "valid": In(1), "tag": In(MacTag),
            "a": In(32), "b": In(8 * config.ub_word_bytes),
            "a_kind": In(OperandKind), "b_kind": In(OperandKind), "acc_int": In(1),
            "fin_valid": Out(1), "fin_q": Out(6), "fin_bank": Out(1), "fin_last": Out(1),
            "fin_data": Out(32 * config.gemv_lanes),
        })

    def elaborate(self, platform):
        m = Module()
        W = self._config.ub_word_bytes
        HL, P, R = self.lanes, self.P, self.R

        # ---- products: operand register, widening, multiplier (free-running, no enable) --------------
        def element(j, size):          # lane j's B element of `size` bytes, or 0 if the word has none
            return self.b[8 * size * j:8 * size * (j + 1)] if (j + 1) * size <= W else C(0, 8 * size)

        m.submodules.wa = wa = _Widen("a")
        m.d.sync += [wa.raw.eq(self.a), wa.kind.eq(self.a_kind)]
        tag = _delay(m, Cat(self.valid, self.tag.as_value()), PRODUCT_LATENCY, "ptag", reset_less=False)
        prods = []
        for j in range(HL):
            wb = _Widen(f"b{j}")
            m.submodules[f"wb{j}"] = wb
            raw = Signal(32, name=f"b{j}_elem")
            with m.Switch(self.b_kind):
                with m.Case(OperandKind.FP32):
                    m.d.comb += raw.eq(element(j, 4))
                with m.Case(OperandKind.BF16, OperandKind.FP16):
                    m.d.comb += raw.eq(element(j, 2))
                with m.Default():
                    m.d.comb += raw.eq(element(j, 1))
            m.d.sync += [wb.raw.eq(raw), wb.kind.eq(self.b_kind)]
            mul = FPMul(FP32, MUL_DEPTH)
            m.submodules[f"mul{j}"] = mul
            m.d.comb += [mul.a.eq(wa.fp32), mul.b.eq(wb.fp32)]
            iprod = Signal(signed(16), name=f"iprod{j}", reset_less=True)
            m.d.sync += iprod.eq(wa.int8 * wb.int8)
            iprod = _delay(m, iprod, MUL_DEPTH - 1, f"iprod{j}")
            p = Signal(32, name=f"prod{j}")
            m.d.comb += p.eq(Mux(self.acc_int, Cat(iprod, iprod[15].replicate(16)), mul.result))
            prods.append(p)

        # ---- the accumulation ring --------------------------------------------------------------------
        in_valid = tag[0]
        in_tag = Signal(MacTag)
        m.d.comb += in_tag.eq(tag[1:])
        between = Signal(init=1)        # no block in progress at the ring's input: flush every cycle
        step = Signal()
        m.d.comb += step.eq(in_valid | between)
        with m.If(in_valid):
            m.d.sync += between.eq(in_tag.real & in_tag.last)   # a dummy step never ends a block
        zero = Mux(self.acc_int, 0, NEG_ZERO)
        outs = []
        ring_out = []
        for j in range(HL):
            ro = Signal(32, name=f"ring{j}")
            ring_out.append(ro)
            y = Mux(in_tag.first, zero, ro)
            add = FPAdd(FP32, ADD_DEPTH)
            m.submodules[f"add{j}"] = add
            m.d.comb += [add.a.eq(prods[j]), add.b.eq(y), add.en.eq(step)]
            isum = Signal(32, name=f"isum{j}", reset_less=True)
            with m.If(step):
                m.d.sync += isum.eq(prods[j] + y)
            isum = _delay(m, isum, ADD_DEPTH - 1, f"isum{j}", step)
            s = Signal(32, name=f"sum{j}")
            m.d.comb += s.eq(Mux(self.acc_int, isum, add.result))
            m.d.comb += ro.eq(_delay(m, s, R - ADD_DEPTH, f"ringd{j}", step))
            outs.append(ro)
        otag = _delay(m, Cat(in_valid, in_tag.as_value()), R, "rtag", step, reset_less=False)
        out_valid = otag[0]
        out_tag = Signal(MacTag)
        m.d.comb += out_tag.eq(otag[1:])
        m.d.comb += [
            self.fin_valid.eq(step & out_valid & out_tag.real & out_tag.final),
            self.fin_q.eq(out_tag.q), self.fin_bank.eq(out_tag.bank), self.fin_last.eq(out_tag.last),
            self.fin_data.eq(Cat(*outs)),
        ]
        return m
