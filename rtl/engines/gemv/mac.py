"""The MAC array of the GEMV engine: products of ``A[0, k]`` with one row of B, and the interleaved
partial sums of docs/semantics.md ("TGEMV accumulation order") in one accumulation loop per lane.

:class:`MacArray` takes one *step* per cycle: the scalar ``a`` (``A[0, k]``) and a word holding
``B[k, j0 .. j0 + lanes)`` (lane ``j`` in bytes ``j * size .. (j + 1) * size`` of the word). Each lane
multiplies (:class:`rtl.fp.FPMul` on fp32 operands: every operand type is first widened exactly to
fp32 fields, so a product is the exact product rounded once to fp32, which is the golden's definition
for every triple; int8 x int8 exactly in 16 bits) and adds the product into its partial sum
``k mod P`` (``P = config.gemv_partial_sums``) through one pipelined fp32 adder (or an int32 adder).

The accumulation loop: the adder (``ADD_DEPTH`` registers, its result registered) and ``R - ADD_DEPTH``
more registers form a ring of ``R = max(P, ADD_DEPTH)`` *steps*. A product entering the ring at step
``s`` is added to the ring's output, which is the sum that entered at step ``s - R``: with products in
order and ``R = P`` that is its partial sum. The ring moves only on steps (a product, a *dummy*, or a
flush step, below), so gaps in the input never break a chain; when ``P`` < ``ADD_DEPTH`` the engine
puts ``R - P`` dummy steps after every ``P`` products (rate ``P / R``). The first ``P`` products of a
block add the exact identity (-0.0, integer 0) instead of the ring's output, so blocks follow each other
with no gap. A product marked ``final`` (the last one of its partial sum, ``k >= K - P``) is a finished
partial sum when it leaves the adder, ``ADD_DEPTH`` steps later: it goes out on ``fin`` then (and on
around the ring, unused). After a block's last product (``last``) and until the next block's first, the
ring steps every cycle (flush), so the last block's sums come out without more input.

The tags must follow the engine's order (:class:`rtl.engines.gemv.engine.GemvEngine`): ``first`` exactly on a block's
products ``k < P``, ``q = k mod P``, dummies only after a group of ``P`` products. With ``R > ADD_DEPTH``
the identity is put into the ring's last register one step ahead, from the current step's tag: the next
step is one of a block's first products exactly when this one is a flush step, a block's ``last``
product, or a product ``k < P - 1`` (a flush step's sum is never used).

Parameters: ``config`` (``ub_word_bytes`` = W, ``gemv_lanes`` = lanes, ``gemv_partial_sums`` = P).

Ports
-----
valid, tag (:data:`MacTag`): a step (``tag.real`` = 0: a dummy); no backpressure (the ring never stalls).
a : 32 bits, the element ``A[0, k]`` in its low bits.
b : ``8 W`` bits, the word with the lanes' B elements.
a_kind, b_kind (:class:`OperandKind`), acc_int: the operand formats, constant during an instruction.
fin_valid, fin_q, fin_bank, fin_last, fin_data (lanes x 32 bits): a finished partial sum of every lane
    (``fin_valid`` and the tag fields are registers, ``fin_data`` one select over registers); ``fin_last``
    (the block's last sum) is set only with ``fin_valid``.

Latency: a step reaches the ring ``PRODUCT_LATENCY`` (10) cycles after ``valid``: the operand registers
(``a``, the B word, the kinds), the unpacked operands (:func:`_unpack`: every kind as fp32 fields by field
moves and an exponent offset, no normalisation; :func:`rtl.fp.unpacked_layout`), ``a``'s copy per group
of lanes (``b`` delayed alongside), the multiplier (``FPMul(FP32, MUL_DEPTH, unpacked=True)``: it
normalises subnormal and widened operands itself; every stage boundary registered). Its sum leaves
on ``fin`` ``ADD_DEPTH`` ring steps later (:func:`mac_latency`, 16 cycles, when the ring steps every
cycle).

Timing (100 MHz on ECP5; alone >= 140 MHz, docs/fp.md): every fp unit's inputs and result are
registers (the adder's depth 6 and the multiplier's depth 7 register all their stage boundaries), so no
select or format mux sits in front of an fp unit's first stage (with ``R = ADD_DEPTH``, i.e. ``P <
ADD_DEPTH``: the ring's identity select); the products' DSP blocks have their own input and output
registers (:func:`rtl.fpga.dsp.product`); registers that feed every lane (the kinds, ``a``'s unpacked fields)
and the ring's step enable are copied per group of lanes (kept apart in synthesis by their reset / init
variant); the step enable and ``fin_valid`` are computed a cycle early from the pipeline's registers.
"""

from amaranth import *
from amaranth.lib import data, enum, wiring
from amaranth.lib.wiring import In, Out

from rtl.fp import FP32, FPAdd, FPMul, unpacked_layout
from rtl.fpga.dsp import product
from rtl.isa import DType

__all__ = ["MacArray", "MacTag", "OperandKind", "operand_kind", "e4m3_to_fp16", "ADD_DEPTH", "MUL_DEPTH",
           "PRODUCT_LATENCY", "ring_length", "mac_latency"]

#: Pipeline registers of the ring's fp32 adder: 6 registers every stage boundary including the result, so
#: the loop back into the adder's first stage starts at a register (depth 5 left the rounding in front of
#: it). A lane adds one product per cycle while ``P >= ADD_DEPTH``.
ADD_DEPTH = 6
#: Pipeline registers of the fp32 multiplier (7: every stage boundary, so the product is not rounded in
#: front of the adder, and the normalised operands go from fabric registers to the DSP blocks' own).
MUL_DEPTH = 7
#: Cycles from a step on the inputs to its product at the ring: operand registers, unpacked operands, a's
#: copies (b delayed alongside), multiplier.
PRODUCT_LATENCY = 3 + MUL_DEPTH
#: fp32 -0.0: the exact identity of fp32 addition (x + -0 = x for every x, including -0).
NEG_ZERO = 0x8000_0000


def ring_length(config):
    """Steps around the accumulation loop: ``max(P, ADD_DEPTH)``."""
    return max(config.gemv_partial_sums, ADD_DEPTH)


def mac_latency(config):
    """Cycles from a step on the inputs to its sum on ``fin`` when the ring steps every cycle (a block of
    its own, or back-to-back steps): ``PRODUCT_LATENCY + ADD_DEPTH`` (a partial sum is finished when it
    leaves the adder, before it goes round the rest of the ring)."""
    return PRODUCT_LATENCY + ADD_DEPTH


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
    e4m3 (``m * 2^-9``) are normal in fp16 and are normalised here (3-bit leading-one search). (The MAC
    array no longer uses it: its operands are unpacked by :func:`_unpack`; kept as a tested helper.)"""
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


def _unpack(m, kind, e8, e16, e32, name):
    """One operand of ``kind`` (its 1-, 2- and 4-byte candidates ``e8``, ``e16``, ``e32``) as fp32 fields
    (:func:`rtl.fp.unpacked_layout`), registered: exact for every float kind, by field moves and an
    exponent offset (fp16 / e5m2 +112, e4m3 +120: their values in fp32's exponent range; a subnormal is
    exponent 1 with no leading one, normalised by the multiplier). INT8: don't care."""
    lay = unpacked_layout(FP32)
    out = Signal(lay, name=name)
    nxt = Signal(lay, name=f"{name}_next")

    def fields(sign, e, f, offset, nan, inf):
        # e: the exponent field, f: the fraction (placed at the top of fp32's 23 fraction bits)
        nz = e != 0
        return [nxt.sign.eq(sign), nxt.sig.eq(Cat(C(0, 23 - len(f)), f, nz)),
                nxt.exp.eq((e | ~nz) + offset), nxt.zero.eq(~nz & (f == 0)), nxt.nan.eq(nan), nxt.inf.eq(inf)]

    def ieee(x, eb, fb, offset):
        e, f = x[fb:fb + eb], x[:fb]
        ones = e == (1 << eb) - 1
        return fields(x[fb + eb], e, f, offset, ones & (f != 0), ones & (f == 0))

    with m.Switch(kind):
        with m.Case(OperandKind.FP32):
            m.d.comb += ieee(e32, 8, 23, 0)
        with m.Case(OperandKind.BF16):
            m.d.comb += ieee(e16, 8, 7, 0)
        with m.Case(OperandKind.FP16):
            m.d.comb += ieee(e16, 5, 10, 112)
        with m.Case(OperandKind.E5M2):
            m.d.comb += ieee(e8, 5, 2, 112)                     # e5m2: fp16's top byte
        with m.Case(OperandKind.E4M3):
            e, f = e8[3:7], e8[:3]
            m.d.comb += fields(e8[7], e, f, 120, (e == 15) & (f == 7), C(0, 1))   # e4m3fn: no infinity
    m.d.sync += out.eq(nxt)
    return out


class MacArray(wiring.Component):
    __doc__ = __doc__

    def __init__(self, config):
        self._config = config
        self.lanes = config.gemv_lanes
        self.P = config.gemv_partial_sums
        self.R = ring_length(config)
        #: Cycles from a step to its partial sum on ``fin`` when the ring steps every cycle.
        self.LATENCY = mac_latency(config)
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

        # ---- products: operand registers, unpacking, a's copies, multiplier (free-running) ------------
        G = min(HL, 4)                 # copies of registers that feed every lane (fan-out), lane j: j % G

        def element(x, j, size):       # lane j's element of `size` bytes in word x, or 0 if x has none
            return x[8 * size * j:8 * size * (j + 1)] if 8 * size * (j + 1) <= len(x) else C(0, 8 * size)

        # stage 1: the operands as they come (a's 32 bits, the B word) and the kinds, a copy per group of
        # lanes, kept apart in synthesis by their reset / init variant (identical registers are merged)
        a1 = _delay(m, self.a, 1, "a")
        b1 = _delay(m, self.b, 1, "b")

        def copies(v, name):
            out = []
            for g in range(G):
                r = Signal(len(v), name=f"{name}{g}", init=-1 if g >> 1 else 0, reset_less=bool(g & 1))
                m.d.sync += r.eq(v)
                out.append(r)
            return out

        a_kinds, b_kinds = copies(self.a_kind.as_value(), "a_kind"), copies(self.b_kind.as_value(), "b_kind")
        # stage 2: unpacked to fp32 fields (rtl.fp.unpacked_layout: exact, by field moves and exponent
        # offsets, no normalisation); stage 3: a's copy per group of lanes, b delayed
        ua = _unpack(m, a_kinds[0], a1[:8], a1[:16], a1, "ua")
        ua3 = copies(ua.as_value(), "ua")
        # the step's valid bit (reset) and tag (data, reset-less) alongside the products
        tags = [Cat(self.valid, self.tag.as_value())]
        for i in range(PRODUCT_LATENCY):
            v = Signal(name=f"pvalid_d{i + 1}")
            r = Signal(len(self.tag.as_value()), name=f"ptag_d{i + 1}", reset_less=True)
            m.d.sync += [v.eq(tags[-1][0]), r.eq(tags[-1][1:])]
            tags.append(Cat(v, r))
        tag = tags[-1]
        fprods, iprods = [], []
        for j in range(HL):
            ub = _unpack(m, b_kinds[j % G], element(b1, j, 1), element(b1, j, 2), element(b1, j, 4), f"ub{j}")
            ub3 = _delay(m, ub.as_value(), 1, f"ub{j}")
            mul = FPMul(FP32, MUL_DEPTH, unpacked=True)
            m.submodules[f"mul{j}"] = mul
            m.d.comb += [mul.a.eq(ua3[j % G]), mul.b.eq(ub3)]
            fprods.append(mul.result)
            # int8 x int8 (stage 2; the product's operand registers are stage 1's), delayed to arrive with
            # the float product: the operands sign-extended to 16 bits, whose unsigned product's low 16
            # bits are the signed product (|a b| <= 2^14)
            sext = lambda x: Cat(x, x[7].replicate(8))
            iprod = product(m, sext(self.a[:8]), sext(element(self.b, j, 1)), platform=platform,
                            name=f"iprod{j}")
            iprods.append(_delay(m, iprod[:16].as_signed(), PRODUCT_LATENCY - 2, f"iprod{j}"))

        # ---- the accumulation ring --------------------------------------------------------------------
        in_valid = tag[0]
        in_tag = Signal(MacTag)
        m.d.comb += in_tag.eq(tag[1:])
        pre = Signal(MacTag)            # the tag one stage before the ring's input
        m.d.comb += pre.eq(tags[-2][1:])
        between = Signal(init=1)        # no block in progress at the ring's input: flush every cycle
        with m.If(in_valid):
            m.d.sync += between.eq(in_tag.real & in_tag.last)   # a dummy step never ends a block
        # step (the ring moves): a product or dummy at the ring's input, or a flush cycle. A register,
        # computed a cycle early from the product pipeline's last-but-one stage: it enables every ring
        # register. Copies for groups of lanes (fan-out), kept apart in synthesis by their reset / init
        # variant (identical registers would be merged); they differ at most in a reset cycle, when the
        # ring holds nothing.
        # A second copy per group, of the opposite polarity (a register of ~step, used inverted: the
        # flip-flops' clock-enable inversion), enables the lane's ring and integer registers, the first
        # its adder: about half the loads each.
        step_d = tags[-2][0] | Mux(in_valid, in_tag.real & in_tag.last, between)
        steps, steps_n = [], []
        for v in range(min(HL, 4)):
            st = Signal(init=1 if v < 2 else 0, reset_less=bool(v & 1), name=f"step{v}")
            stn = Signal(init=0 if v < 2 else 1, reset_less=bool(v & 1), name=f"stepn{v}")
            m.d.sync += [st.eq(step_d), stn.eq(~step_d)]
            steps.append(st)
            steps_n.append(stn)
        zero = Mux(self.acc_int, 0, NEG_ZERO)
        if R > ADD_DEPTH:
            # The step after this one adds the identity (it is one of a block's first P products, or a
            # flush step, whose sum is never used): a flush step now, a block's last product, or one of
            # the first P - 1 products. The ring's last register is loaded with the identity then, so the
            # adder's input is a register.
            first_next = Signal()
            m.d.comb += first_next.eq(~in_valid | (in_tag.real & (
                in_tag.last | (in_tag.first & (in_tag.q != P - 1) if P > 1 else C(0)))))
        else:
            # No register in the loop besides the adder's: the identity is selected in front of it, by a
            # copy of ``first`` per group of lanes (fan-out; kept apart like the step copies).
            firsts = []
            for v in range(min(HL, 4)):
                f = Signal(init=v >> 1, reset_less=bool(v & 1), name=f"first{v}")
                m.d.sync += f.eq(pre.first)
                firsts.append(f)
        outs = []
        for j in range(HL):
            step, step_r = steps[j % 4], ~steps_n[j % 4]
            add = FPAdd(FP32, ADD_DEPTH)
            m.submodules[f"add{j}"] = add
            y = Signal(32, name=f"ring{j}")             # the sum the product is added to
            m.d.comb += [add.a.eq(fprods[j]), add.b.eq(y), add.en.eq(step)]
            isum = Signal(32, name=f"isum{j}", reset_less=True)
            with m.If(step_r):
                m.d.sync += isum.eq(Cat(iprods[j], iprods[j][15].replicate(16)) + y)
            isum = _delay(m, isum, ADD_DEPTH - 1, f"isum{j}", step_r)
            s = Signal(32, name=f"sum{j}")
            m.d.comb += s.eq(Mux(self.acc_int, isum, add.result))
            if R > ADD_DEPTH:
                last = Signal(32, name=f"ringl{j}", reset_less=True)
                with m.If(step_r):
                    m.d.sync += last.eq(Mux(first_next, zero, _delay(m, s, R - ADD_DEPTH - 1, f"ringd{j}", step_r)))
                m.d.comb += y.eq(last)
            else:
                m.d.comb += y.eq(Mux(firsts[j % 4], zero, s))
            outs.append(s)
        # A partial sum is finished when it leaves the adder: ``fin`` comes from the adder's result
        # register, with the tag delayed by the adder's steps.
        rvalid = _delay(m, in_valid, ADD_DEPTH - 1, "rvalid", steps[0], reset_less=False)
        rtag = Signal(MacTag)
        m.d.comb += rtag.eq(_delay(m, in_tag.as_value(), ADD_DEPTH - 1, "rtag", steps[0]))
        out_valid = _delay(m, rvalid, 1, "rvalid_out", steps[0], reset_less=False)
        out_tag = Signal(MacTag)
        m.d.comb += out_tag.eq(_delay(m, rtag.as_value(), 1, "rtag_out", steps[0]))
        # fin_valid = step & out_valid & real & final, as a register: loaded with the values these
        # registers take at this edge (the last stage loads from the one before it when the ring steps)
        fin_valid = Signal(name="fin_valid_r")
        m.d.sync += fin_valid.eq(step_d & Mux(steps[0], rvalid & rtag.real & rtag.final,
                                              out_valid & out_tag.real & out_tag.final))
        # fin_last likewise, and only with fin_valid (the reducer takes a bank's completion from it alone)
        fin_last = Signal(name="fin_last_r")
        m.d.sync += fin_last.eq(step_d & Mux(steps[0], rvalid & rtag.real & rtag.final & rtag.last,
                                             out_valid & out_tag.real & out_tag.final & out_tag.last))
        m.d.comb += [
            self.fin_valid.eq(fin_valid),
            self.fin_q.eq(out_tag.q), self.fin_bank.eq(out_tag.bank), self.fin_last.eq(fin_last),
            self.fin_data.eq(Cat(*outs)),
        ]
        return m


# ---- ECP5 synthesis estimate:  python -m rtl.engines.gemv.mac [--config small] [--what both|mac|reduce] [--seed N] --

class _MacReduce(wiring.Component):
    """:class:`MacArray` feeding a :class:`rtl.engines.gemv.reduce.Reducer` as in the engine (``fin_*``), for a
    synthesis of the two alone: the array's inputs, the reducer's ``present`` / ``acc_int`` / ``has_init`` /
    ``init`` / ``result`` / ``bank_free`` are the ports."""

    def __init__(self, config):
        from rtl.engines.gemv.reduce import Reducer
        self.mac, self.red = MacArray(config), Reducer(config)
        sig = {k: v for k, v in self.mac.signature.members.items() if not k.startswith("fin_")}
        sig.update({k: v for k, v in self.red.signature.members.items()
                    if not k.startswith("fin_") and k != "acc_int"})
        super().__init__(sig)

    def elaborate(self, platform):
        m = Module()
        m.submodules.mac, m.submodules.red = mac, red = self.mac, self.red
        for k in ("fin_valid", "fin_q", "fin_bank", "fin_last", "fin_data"):
            m.d.comb += getattr(red, k).eq(getattr(mac, k))
        for k in ("valid", "tag", "a", "b", "a_kind", "b_kind", "acc_int"):
            m.d.comb += getattr(mac, k).eq(getattr(self, k))
        m.d.comb += [red.acc_int.eq(self.acc_int), red.present.eq(self.present), red.has_init.eq(self.has_init),
                     self.bank_free.eq(red.bank_free)]
        wiring.connect(m, wiring.flipped(self.init), red.init)
        wiring.connect(m, red.result, wiring.flipped(self.result))
        return m


def _synth_main(argv=None):
    import argparse

    from rtl.engines.gemv.reduce import Reducer
    from flow.fp import synth_component
    from flow.synth import config_from
    from flow.tools import ToolError

    ap = argparse.ArgumentParser(
        description="ECP5 synthesis of the GEMV MAC array and reducer alone (ports registered, platform "
                    "rtl.fpga.dsp.ECP5, the whole unit's yosys / nextpnr flow: flow.fp.synth_component)")
    ap.add_argument("--config", default="small")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    ap.add_argument("--what", default="both", choices=("both", "mac", "reduce"))
    ap.add_argument("--out", default="build/gemv/pnr")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tag", default="", help="suffix of the result's name (e.g. a variant being tried)")
    args = ap.parse_args(argv)
    config, overrides = config_from(args.config, args.set)
    top = {"both": _MacReduce, "mac": MacArray, "reduce": Reducer}[args.what](config)
    name = "_".join([args.what, args.config] + [f"{k}{v}" for k, v in sorted(overrides.items())]) + \
        f"_s{args.seed}{args.tag}"
    try:
        synth_component(top, name, args.seed, args.out)
    except ToolError as e:
        print(name, "failed:", str(e).splitlines()[0])
        return 1
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(_synth_main())
