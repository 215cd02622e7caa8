"""The MAC array of the GEMV engine: products of ``A[0, k]`` with one row of B, and the interleaved
partial sums of docs/semantics.md ("TGEMV accumulation order") in one accumulation loop per lane.

:class:`MacArray` takes one *step* per cycle: the scalar ``a`` (``A[0, k]``) and a word holding
``B[k, j0 .. j0 + lanes)`` (lane ``j`` in bytes ``j * size .. (j + 1) * size`` of the word). Each lane
multiplies (:class:`rtl.fp.FPMul` on fp32 operands: every operand type is first widened exactly to
fp32 fields, so a product is the exact product rounded once to fp32, which is the golden's definition
for every triple; int8 x int8 exactly in 16 bits) and adds the product into its partial sum
``k mod P`` (``P = config.gemv_partial_sums``) through one pipelined fp32 adder (or an int32 adder).

The accumulation loop: the adder (``ADD_DEPTH`` registers: every stage boundary but its output) and
``R - ADD_DEPTH`` more registers form a ring of ``R = max(P, ADD_DEPTH)`` *steps*. A product entering
the ring at step ``s`` is added to the ring's output, which is the sum that entered at step ``s - R``:
with products in order and ``R = P`` that is its partial sum. The ring moves only on steps (a product,
a *dummy*, or a flush step, below), so gaps in the input never break a chain; when ``P`` <
``ADD_DEPTH`` the engine puts ``R - P`` dummy steps after every ``P`` products (rate ``P / R``). The
first ``P`` products of a block add the exact identity (-0.0, integer 0) instead of the ring's output,
so blocks follow each other with no gap. A product marked ``final`` (the last one of its partial sum,
``k >= K - P``) is a finished partial sum when it leaves the adder, ``ADD_DEPTH`` steps later: it goes
out on ``fin`` then (and on around the ring, unused). After a block's last product (``last``) and until
the next block's first, the ring steps every cycle (flush), so the last block's sums come out without
more input.

The tags must follow the engine's order (:class:`rtl.engines.gemv.engine.GemvEngine`): ``first`` exactly
on a block's products ``k < P``, ``q = k mod P``, dummies only after a group of ``P`` products. With
``R > ADD_DEPTH`` the identity is put into the ring's last register one step ahead, from the current
step's tag: the next step is one of a block's first products exactly when this one is a flush step, a
block's ``last`` product, or a product ``k < P - 1`` (a flush step's sum is never used).

Parameters
----------
config : :class:`rtl.config.Config`
    ``ub_word_bytes`` = W, ``gemv_lanes`` = lanes, ``gemv_partial_sums`` = P.
overlap : the engine overlaps instructions (``GemvEngine(overlap=True)``): steps of two instructions may be
    in the array at once, so ``acc_int`` travels with each step (one more bit in the tag's registers); the
    ring's identity for a step is chosen by that step's ``acc_int`` (``R > ADD_DEPTH``: the step entering
    next, ``R = ADD_DEPTH``: the step entering now) and a sum leaving the adder is selected (float or integer)
    by the ``acc_int`` of the step it belongs to. Without it the netlist is the serial one.

Ports
-----
valid, tag (:data:`MacTag`): a step (``tag.real`` clear: a dummy); no backpressure (the ring never stalls).
a : ``ELEM_BITS`` bits, the element ``A[0, k]`` in its low bits.
b : ``8 W`` bits, the word with the lanes' B elements.
a_kind, b_kind (:class:`rtl.engines.gemv.operands.OperandKind`), acc_int: the operand formats. The kinds
    are sampled with each step (the operand registers), so they need only be right in the cycle of a step;
    ``acc_int`` is constant during an instruction, or with ``overlap`` also sampled with each step and
    carried with it (beside its tag) to the ring, where the identity and the sum select use the ``acc_int``
    of the step they serve.
fin_valid, fin_q, fin_bank, fin_last, fin_data (lanes x ``SUM_BITS``): a finished partial sum of every
    lane (``fin_valid`` and the tag fields are registers, ``fin_data`` the adder's output: its
    round-and-pack stage, then a select); ``fin_last`` (the block's last sum) is set only with
    ``fin_valid``.

Latency
-------
A step reaches the ring ``PRODUCT_LATENCY`` = 10 cycles after ``valid``: the operand registers
(``INPUT_CYCLES``: ``a``, the B word, the kinds), the unpacked operands (``UNPACK_CYCLES``:
:func:`rtl.engines.gemv.operands.unpack`, every kind as fp32 fields by field moves and an exponent
offset, no normalisation; :func:`rtl.fp.unpacked_layout`), ``a``'s copy per group of lanes
(``SPREAD_CYCLES``, ``b`` delayed alongside), the multiplier (``FPMul(FP32, MUL_DEPTH, unpacked=True)``:
it normalises subnormal and widened operands itself; every stage boundary registered). Its sum leaves on
``fin`` ``ADD_DEPTH`` ring steps later (:func:`mac_latency`, 16 cycles, when the ring steps every cycle).

Throughput
----------
One step per cycle, no backpressure; with ``P < ADD_DEPTH`` the engine's dummy steps make it ``P`` products
every ``R`` steps.

Timing (100 MHz on ECP5; alone >= 140 MHz, docs/fp.md): every fp unit's inputs are registers, so no
select or format mux sits in front of an fp unit's first stage (except, with ``R = ADD_DEPTH``, i.e.
``P < ADD_DEPTH``, the ring's identity select in front of the adder); the multiplier's depth 7
registers all its stage boundaries, the adder's depth 6 all but its output (its short round-and-pack
stage runs into the ring's registers, or with ``R = ADD_DEPTH`` back into its own first stage); the
products' DSP blocks have their own input and output registers (:func:`rtl.fpga.dsp.product`); registers
that feed every lane (the kinds, ``a``'s unpacked fields) and the ring's step enable are copied per
group of lanes (kept apart in synthesis by their reset / init variant); the step enable and
``fin_valid`` are computed a cycle early from the pipeline's registers.
"""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from rtl.engines.gemv.operands import ELEM_BITS, OperandKind, e4m3_to_fp16, operand_kind, unpack
from rtl.fp import FP32, FPAdd, FPMul
from rtl.fpga.dsp import product, product_latency
from rtl.lib.contract import require
from rtl.lib.delay import delay
from rtl.lib.fanout import variant_copies

__all__ = ["MacArray", "MacTag", "OperandKind", "operand_kind", "e4m3_to_fp16", "ring_length", "mac_latency",
           "SUM_BITS", "MAX_PARTIAL_SUMS", "Q_BITS", "NEG_ZERO"]

#: Width of a partial sum and of a lane's result: fp32 or int32.
SUM_BITS = FP32.width
#: The largest ``gemv_partial_sums`` (:class:`rtl.config.Config` accepts powers of two up to it).
MAX_PARTIAL_SUMS = 64
#: Width of a partial sum's index ``k mod P`` (a tag's ``q``, ``fin_q``).
Q_BITS = (MAX_PARTIAL_SUMS - 1).bit_length()
#: fp32 -0.0: the exact identity of fp32 addition (x + -0 = x for every x, including -0).
NEG_ZERO = 0x8000_0000


def ring_length(config):
    """Steps around the accumulation loop: ``max(P, MacArray.ADD_DEPTH)``."""
    return max(config.gemv_partial_sums, MacArray.ADD_DEPTH)


def mac_latency(config):
    """Cycles from a step on the inputs to its sum on ``fin`` when the ring steps every cycle (a block of
    its own, or back-to-back steps): ``PRODUCT_LATENCY + ADD_DEPTH`` (a partial sum is finished when it
    leaves the adder, before it goes round the rest of the ring)."""
    return MacArray.PRODUCT_LATENCY + MacArray.ADD_DEPTH


#: What travels with a step through the products and the ring.
MacTag = data.StructLayout({
    "real": 1,      # a product (0: a dummy step, P < ADD_DEPTH)
    "first": 1,     # k < P: adds the identity, not the ring's output
    "final": 1,     # k >= K - P: its sum leaves the ring as a finished partial sum
    "last": 1,      # k == K - 1: the block's last product
    "q": Q_BITS,    # its partial sum, k mod P
    "bank": 1,      # block parity: which bank of the reducer takes the block's sums
})


def _element(x, j, size):
    """Lane ``j``'s element of ``size`` bytes in word ``x``, or 0 if ``x`` has none."""
    return x[8 * size * j:8 * size * (j + 1)] if 8 * size * (j + 1) <= len(x) else C(0, 8 * size)


class MacArray(wiring.Component):
    __doc__ = __doc__

    #: Pipeline registers of the ring's fp32 adder (``FPAdd`` depth 6): every stage boundary but the
    #: output, its first stage split after the raw exponent differences (docs/fp.md); the loop back into
    #: the first stage runs through the round-and-pack stage. A lane adds one product per cycle while
    #: ``P >= ADD_DEPTH``.
    ADD_DEPTH = 6
    #: Pipeline registers of the fp32 multiplier (7: every stage boundary, so the product is not rounded
    #: in front of the adder, and the normalised operands go from fabric registers to the DSP blocks' own).
    MUL_DEPTH = 7
    #: A step on the inputs -> its operands in registers (``a``, the B word, the kinds' copies).
    INPUT_CYCLES = 1
    #: The operand registers -> the operands unpacked to fp32 fields (:func:`unpack`'s register).
    UNPACK_CYCLES = 1
    #: The unpacked operands -> ``a``'s copy per group of lanes (each lane's B operand delayed alongside).
    SPREAD_CYCLES = 1
    #: A step on the inputs -> its product at the ring's adder.
    PRODUCT_LATENCY = INPUT_CYCLES + UNPACK_CYCLES + SPREAD_CYCLES + MUL_DEPTH
    #: The int8 x int8 product's registers: its operands (a DSP block's input registers, beside
    #: ``INPUT_CYCLES``) and the product (:func:`rtl.fpga.dsp.product` with ``in_reg``).
    INT_PRODUCT_CYCLES = product_latency(in_reg=True)
    #: Copies of a register that feeds every lane (fan-out): lane ``j`` uses copy ``j % COPIES``.
    COPIES = 4

    def __init__(self, config, *, overlap=False):
        self._config, self._overlap = config, overlap
        self.lanes = config.gemv_lanes
        self.P = config.gemv_partial_sums
        self.R = ring_length(config)
        #: Cycles from a step to its partial sum on ``fin`` when the ring steps every cycle.
        self.LATENCY = mac_latency(config)
        require(self.P <= 1 << Q_BITS,
                f"MacArray: a tag's q ({Q_BITS} bits) holds k mod P for P = gemv_partial_sums = {self.P}")
        super().__init__({
            "valid": In(1), "tag": In(MacTag),
            "a": In(ELEM_BITS), "b": In(8 * config.ub_word_bytes),
            "a_kind": In(OperandKind), "b_kind": In(OperandKind), "acc_int": In(1),
            "fin_valid": Out(1), "fin_q": Out(Q_BITS), "fin_bank": Out(1), "fin_last": Out(1),
            "fin_data": Out(SUM_BITS * config.gemv_lanes),
        })

    def elaborate(self, platform):
        m = Module()
        prod = self._products(m, platform)
        ring = self._ring(m, prod)
        self._fin(m, ring)
        return m

    def _products(self, m, platform):
        """The free-running product pipeline, ``PRODUCT_LATENCY`` cycles: the operand registers, the
        unpacked operands, ``a``'s copies, one ``FPMul`` per lane, and beside them the int8 products (DSP
        blocks) delayed to arrive with the float ones, and the step's valid bit and tag. Returns
        ``tags`` (``Cat(valid, tag)`` per stage, ``tags[-1]`` at the ring), ``fprods``, ``iprods``."""
        HL = self.lanes
        G = min(HL, self.COPIES)       # copies of registers that feed every lane (fan-out), lane j: j % G

        # stage 1: the operands as they come (a's 32 bits, the B word) and the kinds, a copy per group of
        # lanes, kept apart in synthesis by their reset / init variant (identical registers are merged)
        a1 = delay(m, self.a, self.INPUT_CYCLES, "a")
        b1 = delay(m, self.b, self.INPUT_CYCLES, "b")
        a_kinds = variant_copies(m, "a_kind", self.a_kind.as_value(), G)
        b_kinds = variant_copies(m, "b_kind", self.b_kind.as_value(), G)
        # stage 2: unpacked to fp32 fields (rtl.fp.unpacked_layout: exact, by field moves and exponent
        # offsets, no normalisation); stage 3: a's copy per group of lanes, b delayed
        ua = unpack(m, a_kinds[0], a1[:8], a1[:16], a1, "ua")
        ua3 = variant_copies(m, "ua", ua.as_value(), G)
        # the step's valid bit (reset) and tag (data, reset-less) alongside the products
        # (with ``overlap`` the step's ``acc_int`` rides behind its tag: the top bit of every stage)
        tags = [Cat(self.valid, self.tag.as_value(), *([self.acc_int] if self._overlap else []))]
        for i in range(self.PRODUCT_LATENCY):
            v = Signal(name=f"pvalid_d{i + 1}")
            r = Signal(len(tags[-1]) - 1, name=f"ptag_d{i + 1}", reset_less=True)
            m.d.sync += [v.eq(tags[-1][0]), r.eq(tags[-1][1:])]
            tags.append(Cat(v, r))
        fprods, iprods = [], []
        for j in range(HL):
            ub = unpack(m, b_kinds[j % G], _element(b1, j, 1), _element(b1, j, 2), _element(b1, j, 4), f"ub{j}")
            ub3 = delay(m, ub.as_value(), self.SPREAD_CYCLES, f"ub{j}")
            mul = FPMul(FP32, self.MUL_DEPTH, unpacked=True)
            m.submodules[f"mul{j}"] = mul
            m.d.comb += [mul.a.eq(ua3[j % G]), mul.b.eq(ub3)]
            fprods.append(mul.result)
            # int8 x int8 (stage 2; the product's operand registers are stage 1's), delayed to arrive with
            # the float product: the operands sign-extended to 16 bits, whose unsigned product's low 16
            # bits are the signed product (|a b| <= 2^14)
            sext = lambda x: Cat(x, x[7].replicate(8))
            iprod = product(m, sext(self.a[:8]), sext(_element(self.b, j, 1)), platform=platform,
                            name=f"iprod{j}")
            iprods.append(delay(m, iprod[:16].as_signed(), self.PRODUCT_LATENCY - self.INT_PRODUCT_CYCLES,
                                 f"iprod{j}"))
        return SimpleNamespace(tags=tags, fprods=fprods, iprods=iprods)

    def _ring(self, m, prod):
        """The accumulation ring: the step enable (a register per group of lanes, of both polarities,
        computed a cycle early), the identity for a block's first products, and per lane the fp32 adder,
        the int32 adder delayed to match it and the ring's registers beyond the adder (``R >
        ADD_DEPTH``). Returns the ring's input (``in_valid``, ``in_tag``), ``step_d`` (the step enable's
        next value), ``steps`` and ``outs`` (each lane's sum leaving the adder)."""
        HL, P, R, ADD_DEPTH = self.lanes, self.P, self.R, self.ADD_DEPTH
        tags = prod.tags
        tag = tags[-1]
        in_valid = tag[0]
        in_tag = Signal(MacTag)
        m.d.comb += in_tag.eq(tag[1:1 + MacTag.size])
        pre = Signal(MacTag)            # the tag one stage before the ring's input
        m.d.comb += pre.eq(tags[-2][1:1 + MacTag.size])
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
        G = min(HL, self.COPIES)
        step_d = tags[-2][0] | Mux(in_valid, in_tag.real & in_tag.last, between)
        steps, steps_n = [], []
        for v in range(G):
            st = Signal(init=1 if v < 2 else 0, reset_less=bool(v & 1), name=f"step{v}")
            stn = Signal(init=0 if v < 2 else 1, reset_less=bool(v & 1), name=f"stepn{v}")
            m.d.sync += [st.eq(step_d), stn.eq(~step_d)]
            steps.append(st)
            steps_n.append(stn)
        if self._overlap:
            # each step's own ``acc_int``: the identity's for the step it is added to (R > ADD_DEPTH: loaded a
            # step ahead, so the one entering next, ``pre``; else the one entering now), the sum select's for
            # the step whose sum leaves the adder (delayed with the adder's steps, as ``_fin``'s ``out_tag``)
            in_acc, pre_acc = tag[-1], tags[-2][-1]
            zero = Mux(pre_acc if R > ADD_DEPTH else in_acc, 0, NEG_ZERO)
            out_acc = delay(m, delay(m, in_acc, ADD_DEPTH - 1, "racc", steps[0]), 1, "racc_out", steps[0])
        else:
            zero = Mux(self.acc_int, 0, NEG_ZERO)
            out_acc = self.acc_int
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
            for v in range(G):
                f = Signal(init=v >> 1, reset_less=bool(v & 1), name=f"first{v}")
                m.d.sync += f.eq(pre.first)
                firsts.append(f)
        outs = []
        for j in range(HL):
            step, step_r = steps[j % G], ~steps_n[j % G]
            add = FPAdd(FP32, ADD_DEPTH)
            m.submodules[f"add{j}"] = add
            y = Signal(SUM_BITS, name=f"ring{j}")             # the sum the product is added to
            m.d.comb += [add.a.eq(prod.fprods[j]), add.b.eq(y), add.en.eq(step)]
            isum = Signal(SUM_BITS, name=f"isum{j}", reset_less=True)
            with m.If(step_r):
                m.d.sync += isum.eq(Cat(prod.iprods[j], prod.iprods[j][15].replicate(16)) + y)
            isum = delay(m, isum, ADD_DEPTH - 1, f"isum{j}", step_r)
            s = Signal(SUM_BITS, name=f"sum{j}")
            m.d.comb += s.eq(Mux(out_acc, isum, add.result))
            if R > ADD_DEPTH:
                last = Signal(SUM_BITS, name=f"ringl{j}", reset_less=True)
                with m.If(step_r):
                    m.d.sync += last.eq(Mux(first_next, zero, delay(m, s, R - ADD_DEPTH - 1, f"ringd{j}", step_r)))
                m.d.comb += y.eq(last)
            else:
                m.d.comb += y.eq(Mux(firsts[j % G], zero, s))
            outs.append(s)
        return SimpleNamespace(in_valid=in_valid, in_tag=in_tag, step_d=step_d, steps=steps, outs=outs)

    def _fin(self, m, ring):
        """The finished partial sums: the step's valid bit and tag delayed by the adder's ``ADD_DEPTH``
        ring steps, ``fin_valid`` and ``fin_last`` as registers computed a cycle early, the outputs."""
        ADD_DEPTH, steps = self.ADD_DEPTH, ring.steps
        # A partial sum is finished when it leaves the adder: ``fin`` comes from the adder's output, with
        # the tag delayed by the adder's steps.
        rvalid = delay(m, ring.in_valid, ADD_DEPTH - 1, "rvalid", steps[0], reset_less=False)
        rtag = Signal(MacTag)
        m.d.comb += rtag.eq(delay(m, ring.in_tag.as_value(), ADD_DEPTH - 1, "rtag", steps[0]))
        out_valid = delay(m, rvalid, 1, "rvalid_out", steps[0], reset_less=False)
        out_tag = Signal(MacTag)
        m.d.comb += out_tag.eq(delay(m, rtag.as_value(), 1, "rtag_out", steps[0]))
        # fin_valid = step & out_valid & real & final, as a register: loaded with the values these
        # registers take at this edge (the last stage loads from the one before it when the ring steps)
        fin_valid = Signal(name="fin_valid_r")
        m.d.sync += fin_valid.eq(ring.step_d & Mux(steps[0], rvalid & rtag.real & rtag.final,
                                                   out_valid & out_tag.real & out_tag.final))
        # fin_last likewise, and only with fin_valid (the reducer takes a bank's completion from it alone)
        fin_last = Signal(name="fin_last_r")
        m.d.sync += fin_last.eq(ring.step_d & Mux(steps[0], rvalid & rtag.real & rtag.final & rtag.last,
                                                  out_valid & out_tag.real & out_tag.final & out_tag.last))
        m.d.comb += [
            self.fin_valid.eq(fin_valid),
            self.fin_q.eq(out_tag.q), self.fin_bank.eq(out_tag.bank), self.fin_last.eq(fin_last),
            self.fin_data.eq(Cat(*ring.outs)),
        ]


# ---- ECP5 synthesis estimate:  python -m rtl.engines.gemv.mac [--config small] [--what both|mac|reduce] [--seed N] --
