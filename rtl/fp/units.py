"""The float arithmetic units: :class:`FPAdd`, :class:`FPMul` (also widening), :class:`FPMulWiden`,
:class:`FPConvert` (also widening). See ``docs/fp.md``.

Common interface (``wiring.Component``; widths from the formats):

========= ===== ==========================================================================
port      dir   meaning
========= ===== ==========================================================================
a, b      In    operands (``b`` only on two-operand units), packed bit patterns
in_valid  In    marks an operand as valid; travels with it to ``out_valid``
en        In    clock enable of every pipeline register (init 1): 0 freezes the pipeline, i.e.
                the operands are not taken and the outputs hold; a result is delivered on a
                cycle with en=1 and out_valid=1 (no effect at depth 0)
result    Out   the rounded result, ``latency`` cycles after its operands
out_valid Out   ``in_valid`` delayed by ``latency`` cycles
========= ===== ==========================================================================

``depth`` (constructor) is the number of pipeline registers; ``latency == depth``. ``depth=0`` is
purely combinational (no clock domain used). At every depth a new operation is accepted every
cycle (no stalls, no internal state besides the pipeline registers), so throughput is one per
cycle while ``en`` is 1. Registers use the ``sync`` domain.
"""

from types import SimpleNamespace

from amaranth.hdl import C, Cat, Module, Mux, Signal, signed
from amaranth.lib import data

from rtl.fp.common import FPUnit, Pipe, decode, limit_marker, lzc, norm_apply, norm_plan, round_pack
from rtl.fp.format import FP32, FloatFormat
from rtl.fpga.dsp import product

__all__ = ["FPAdd", "FPMul", "FPMulWiden", "FPConvert", "unpacked_layout"]


def _check_fmt(fmt):
    if not isinstance(fmt, FloatFormat):
        raise TypeError(f"{fmt!r} is not a FloatFormat")


class FPAdd(FPUnit):
    """``result = a + b`` in one format, round to nearest even.

    Parameters: ``fmt`` (:class:`FloatFormat`), ``depth`` (pipeline registers, >= 0).
    Latency: ``depth`` cycles. Register placement (stage boundaries 1 = after the raw exponent
    differences and the magnitude compare, 2 = after operand swap and the saturated exponent
    difference, 3 = after the alignment shift, 4 = after the add, 5 = after the leading-zero count,
    6 = after the normalising shift, 7 = output): see ``CUTS``; beyond depth 7 extra output registers.
    (Depths 1-3 chosen by an ECP5 sweep over all cut sets; depth 6 splits the exponent-difference
    stage, whose 12 cells in one cycle were the whole unit's worst path in ``small``; see docs/fp.md.)
    """
    STAGES = 7
    CUTS = {0: (), 1: (4,), 2: (2, 4), 3: (2, 4, 5), 4: (2, 4, 5, 6), 5: (2, 3, 4, 5, 6),
            6: (1, 2, 3, 4, 5, 6), 7: (1, 2, 3, 4, 5, 6, 7)}

    def __init__(self, fmt=FP32, depth=0):
        _check_fmt(fmt)
        self.fmt = fmt
        super().__init__(fmt.width, 2, fmt.width, depth)

    def elaborate(self, platform):
        m = Module()
        fmt = self.fmt
        p = fmt.precision
        cuts, extra = self._cuts()
        pipe = Pipe(m, cuts, self.en)

        # 1-2: decode, compare the magnitudes, the exponent difference
        da, db = decode(fmt, self.a), decode(fmt, self.b)
        # |b| > |a| as two carry chains of half the width side by side, combined by one LUT
        h = len(da.mag) // 2
        swap = Signal()
        m.d.comb += swap.eq((db.mag[h:] > da.mag[h:]) | ((db.mag[h:] == da.mag[h:]) & (db.mag[:h] > da.mag[:h])))
        # Alignment shift: the exponent difference, saturated. Every shift >= p + 2 leaves only
        # the sticky bit, so the shift amount saturates at K = 2**b - 1 >= p + 2 (an OR of the
        # high bits, no comparator). Both differences are formed and saturated in parallel; the
        # sign of one picks the one that is >= 0 (equal exponents: both 0), and the larger
        # exponent, without waiting for the magnitude compare.
        b = (p + 2).bit_length()
        K = 2 ** b - 1

        def saturated(d):
            d = d[:fmt.exp_bits]
            return d[:b] | d[b:].any().replicate(b) if len(d) > b else d

        # The differences of the effective exponents (a subnormal's is 1, not 0) without the
        # exponent-is-zero decode in front of the subtractors: both raw differences x - y and
        # x - y - 1 (x + ~y, one carry chain with carry-in 0) are formed; the subnormal flags pick.
        ea, eb, za, zb = da.exp, db.exp, da.exp == 0, db.exp == 0
        n = fmt.exp_bits
        # (boundary 1: the four raw differences, registered before the subnormal and order selects and
        # the saturation, which make the path 12 cells long in one cycle)
        s = pipe.stage(
            1, valid=self.in_valid, swap=swap, sig_a=da.sig, sig_b=db.sig, za=za, zb=zb,
            e_lt=(ea - eb)[-1],                                         # raw exp_a < exp_b
            ab_m1=(ea + ~eb)[:n], ab=(ea - eb)[:n], ba_m1=(eb + ~ea)[:n], ba=(eb - ea)[:n],
            eexp_a=da.eexp, eexp_b=db.eexp,
            sub=da.sign ^ db.sign, sign=Mux(swap, db.sign, da.sign), zero_sign=da.sign & db.sign,
            nan=da.is_nan | db.is_nan | (da.is_inf & db.is_inf & (da.sign ^ db.sign)),
            inf=da.is_inf | db.is_inf)
        d_ab = Mux(s.zb & ~s.za, s.ab_m1, s.ab)                      # exp_a >= exp_b: eff_a - eff_b
        d_ba = Mux(s.za, s.ba_m1, s.ba)                              # exp_a < exp_b: eff_b - eff_a
        dc_next = Mux(s.e_lt, saturated(d_ba), saturated(d_ab))
        swap = s.swap
        s = pipe.stage(
            2, valid=s.valid, swap=swap, sig_a=s.sig_a, sig_b=s.sig_b,
            big_exp=Mux(s.e_lt, s.eexp_b, s.eexp_a), dc=dc_next,
            sub=s.sub, sign=s.sign, zero_sign=s.zero_sign, nan=s.nan, inf=s.inf)
        # the significands ordered by magnitude in stage 3 (the compare's fan-out is a register: two
        # copies when registered, one per multiplexer; the sticky has its own copy of dc, the shifter's
        # fan-out being large; the copies are kept apart in synthesis by their init values)
        swap_big, dc_st = s.swap, s.dc
        if 2 in cuts:
            swap_big = Signal(init=1, reset_less=True)
            dc_st = Signal(len(s.dc), init=-1, reset_less=True)
            with m.If(self.en):
                m.d.sync += [swap_big.eq(swap), dc_st.eq(dc_next)]
        big_sig = Mux(swap_big, s.sig_b, s.sig_a)
        small_sig = Signal(p)
        m.d.comb += small_sig.eq(Mux(s.swap, s.sig_a, s.sig_b))
        s = SimpleNamespace(valid=s.valid, big_sig=big_sig, small_sig=small_sig, big_exp=s.big_exp,
                            dc=s.dc, dc_st=dc_st, sub=s.sub, sign=s.sign, zero_sign=s.zero_sign,
                            nan=s.nan, inf=s.inf)

        # 3: align the smaller significand (2 guard bits + sticky)
        wide = Signal(K + p + 2)
        m.d.comb += wide.eq(Cat(C(0, K + 2), s.small_sig) >> s.dc)
        # sticky = wide[:K].any(), computed beside the shifter: significand bit j ends up below
        # bit K of ``wide`` iff j + 2 < dc
        sticky = Cat(*(s.small_sig[j] & (s.dc_st > j + 2) for j in range(p))).any()
        small_ext = Signal(p + 3)
        m.d.comb += small_ext.eq(Cat(sticky, wide[K:]))      # sig, G, R, sticky
        s = pipe.stage(
            3, valid=s.valid, small_ext=small_ext, big_sig=s.big_sig, big_exp=s.big_exp,
            sub=s.sub, sign=s.sign, zero_sign=s.zero_sign, nan=s.nan, inf=s.inf)

        # 4: add / subtract as one adder, big + ~small + 1 in p + 4 bits (big >= small, so the
        # difference is >= 0)
        total = Signal(p + 4)
        addend = Cat(s.small_ext, C(0, 1)) ^ s.sub.replicate(p + 4)
        m.d.comb += total.eq(Cat(C(0, 3), s.big_sig) + addend + s.sub)
        # beside the adder: where the left shift must stop (exponent 1), as a one-hot marker
        marker = Signal(p + 4)
        m.d.comb += marker.eq(limit_marker((s.big_exp, 1), p + 4))
        s = pipe.stage(
            4, valid=s.valid, total=total, marker=marker, big_exp=s.big_exp, sign=s.sign,
            zero_sign=s.zero_sign, nan=s.nan, inf=s.inf)

        # 5: normalise (never needs a right shift: the exponent of the sum, big_exp + 1, is >= 2); the
        # shift is the leading-zero count of total | marker, i.e. min(lz, big_exp), no comparison after
        # the count (~100 LUT4 more than the comparison min(lz, big_exp), ~1 ns shorter on ECP5)
        plan = norm_plan(m, "plan", fmt, (s.big_exp, 1), s.total, may_underflow=False, marker=s.marker)
        is_zero = ~s.total.any()
        s = pipe.stage(5, valid=s.valid, sign=Mux(is_zero, s.zero_sign, s.sign), nan=s.nan,
                       inf=s.inf, **plan)
        n = norm_apply(m, "apply", fmt, **{k: getattr(s, k) for k in plan})
        s = pipe.stage(
            6, valid=s.valid, exp=n.exp, man=n.man, guard=n.guard, sticky=n.sticky,
            sign=s.sign, nan=s.nan, inf=s.inf)

        # 7: round, pack, specials
        rounded = round_pack(fmt, s.sign, s.exp, s.man, s.guard, s.sticky)
        if fmt.finite_only:
            special = C(fmt.nan_bits, fmt.width)
            res = Mux(s.nan, special, rounded)
        else:
            res = Mux(s.nan, C(fmt.nan_bits, fmt.width),
                      Mux(s.inf, Cat(C(fmt.inf_bits, fmt.width - 1), s.sign), rounded))
        s = pipe.stage(7, result=res, valid=s.valid)
        self._finish(m, pipe, 7, s.result, s.valid, extra)
        return m


class FPMul(FPUnit):
    """``result = a * b``, operands in ``fmt``, result rounded (RNE) to ``out_fmt`` (default ``fmt``).

    With ``out_fmt`` wider than ``fmt`` (e.g. fp16 -> fp32) the product is exact whenever it is in
    ``out_fmt``'s range (fp16 and fp8 into fp32: always; bf16 into fp32: unless it overflows or falls
    below fp32's subnormals, where it is rounded exactly like ``np.float32(a) * np.float32(b)``).
    Parameters: ``fmt``, ``depth``, ``out_fmt=None``. Latency: ``depth`` cycles.

    The operand significands are normalised before the multiply (a subnormal operand's leading zeros
    counted and shifted out, its exponent lowered by as much), so the significand product is in
    ``[1, 4)`` (or zero) and needs at most a one-bit left shift, or the right shift of a result below
    the normal range, whose amount is known from the exponents before the product. Boundaries:
    1 = after decoding, the operands' leading-zero counts and their coarse shifts (multiples of 16),
    2 = after the fine shifts (the normalised operands, a fabric register), 3 = the multipliers' input
    registers, 4 = after the partial products of the significands (17-bit pieces; one piece for
    precisions <= 17; the multipliers' output registers), 5 = after their sum, 6 = after the
    normalising shift, 7 = output: see ``CUTS``; beyond depth 7 extra output registers. A partial
    product with a register after it is an :func:`rtl.fpga.dsp.product` (with its input register when
    boundary 3 is registered): a MULT18X18D with its own registers for the ECP5 platform. Depth 7
    registers the normalised operands in the fabric too, so that nothing but routing lies in front of
    the DSP blocks' input registers; depth 6 does the same without the output register (the elementwise
    lanes: their round-and-pack stage runs into the lanes' add-or-mul select register), depth 7 with it
    (the MAC array); depths <= 5 shift into the DSP blocks' input registers.

    ``unpacked=True``: the operands come as :func:`unpacked_layout` ``(fmt)`` (significand with an
    explicit leading bit, effective exponent, sign and class flags) instead of packed bits: a value
    ``sig * 2^(exp - bias - (precision - 1))`` need not be normalised (``sig`` may have leading zeros
    with any exponent), so a caller can feed narrower formats widened by field moves alone (the MAC
    array's fp16 / bf16 / fp8 operands as fp32) and this unit's operand normalisation does the rest.
    """
    STAGES = 7
    CUTS = {0: (), 1: (5,), 2: (4, 6), 3: (4, 5, 6), 4: (3, 4, 5, 6), 5: (1, 3, 4, 5, 6),
            6: (1, 2, 3, 4, 5, 6), 7: (1, 2, 3, 4, 5, 6, 7)}
    #: width of the low piece of each significand in the partial products (MULT18X18D: 18x18)
    PIECE = 17

    def __init__(self, fmt=FP32, depth=0, out_fmt=None, *, unpacked=False):
        _check_fmt(fmt)
        out_fmt = fmt if out_fmt is None else out_fmt
        _check_fmt(out_fmt)
        self.fmt, self.out_fmt, self.unpacked = fmt, out_fmt, unpacked
        super().__init__(unpacked_layout(fmt) if unpacked else fmt.width, 2, out_fmt.width, depth)

    def elaborate(self, platform):
        m = Module()
        fi, fo = self.fmt, self.out_fmt
        cuts, extra = self._cuts()
        pipe = Pipe(m, cuts, self.en)
        P, k = fi.precision, self.PIECE
        LW = (P - 1).bit_length()                      # an operand's leading-zero count, 0 .. P - 1
        # E: the biased out_fmt exponent of the product when its top bit (2^(2P-1)) is set
        bias_c = 2 * fi.bias - fo.bias - 1
        # (a zero operand's count may be anything up to 2^LW - 1; an infinity's exponent is exp_max)
        e_lo, e_hi = 2 - 2 * (2 ** LW - 1) - bias_c, 2 * fi.exp_max - bias_c
        E_shape = signed(max(abs(e_lo), abs(e_hi) + 1).bit_length() + 1)

        # 1: decode, exponent sum, the operands' leading zeros (a subnormal's significand is the
        # fraction with a 0 on top: its count is 1 + the fraction's; a normal one's is 0; zero: don't care)
        if self.unpacked:
            da, db = (SimpleNamespace(sign=x.sign, sig=x.sig, eexp=x.exp, is_nan=x.nan, is_inf=x.inf,
                                      is_zero=x.zero) for x in (self.a, self.b))
        else:
            da, db = decode(fi, self.a), decode(fi, self.b)

        def lead(d):
            lz = Signal(LW, name=None)
            if self.unpacked:
                m.d.comb += lz.eq(lzc(d.sig))
            else:
                m.d.comb += lz.eq(Mux(d.exp == 0, lzc(Cat(d.frac, C(0, 1))), 0))
            return lz

        # The shift in two steps: by the count's high bits (multiples of 16) in stage 1, beside the
        # count's low bits (the high bits of a leading-zero count come first), by its low bits in 2
        FINE = 4

        def coarse(d, lz):
            if LW <= FINE:
                return d.sig
            c = Signal(P, name=None)
            m.d.comb += c.eq(d.sig << Cat(C(0, FINE), lz[FINE:]))
            return c

        # The product's trailing zeros are the operands' summed: the bits the normalisation loses (the
        # sticky bit) are known from them and the shift amounts before the product is (stage 5).
        def trail(d):
            tz = Signal(range(1 << LW), name=None)
            m.d.comb += tz.eq(lzc(Cat(*reversed(list(d.sig)))))
            return tz

        la, lb = lead(da), lead(db)
        s = pipe.stage(
            1, valid=self.in_valid, sa=coarse(da, la), sb=coarse(db, lb), la=la, lb=lb,
            tza=trail(da), tzb=trail(db), zero=da.is_zero | db.is_zero,
            ebias=(da.eexp + db.eexp - bias_c)[:E_shape.width].as_signed(), sign=da.sign ^ db.sign,
            nan=da.is_nan | db.is_nan | (da.is_inf & db.is_zero) | (db.is_inf & da.is_zero),
            inf=da.is_inf | db.is_inf)
        # 2: normalise the operands (the fine shifts); the product's exponent (the counts subtracted)
        na, nb = Signal(P), Signal(P)
        m.d.comb += [na.eq(s.sa << s.la[:FINE]), nb.eq(s.sb << s.lb[:FINE])]
        E = Signal(E_shape)
        m.d.comb += E.eq(s.ebias - (s.la + s.lb))
        tz = Signal(range(4 << LW))
        m.d.comb += tz.eq(s.tza + s.tzb + s.la + s.lb)        # the normalised product's trailing zeros
        s = pipe.stage(2, valid=s.valid, na=na, nb=nb, E=E, tz=tz, zero=s.zero, sign=s.sign, nan=s.nan,
                       inf=s.inf)
        if P <= k:
            pieces = {"pp": (s.na, s.nb)}
        else:
            pieces = {"pp_ll": (s.na[:k], s.nb[:k]), "pp_lh": (s.na[:k], s.nb[k:]),
                      "pp_hl": (s.na[k:], s.nb[:k]), "pp_hh": (s.na[k:], s.nb[k:])}
        side = dict(valid=s.valid, E=s.E, tz=s.tz, zero=s.zero, sign=s.sign, nan=s.nan, inf=s.inf)
        # 3, 4: the partial products; with boundary 4 registered each is an rtl.fpga.dsp.product (its input
        # register is boundary 3's)
        if 4 in cuts:
            parts = {n: product(m, x, y, platform=platform, en=self.en, in_reg=3 in cuts, name=n)
                     for n, (x, y) in pieces.items()}
            s = pipe.stage(3, **side)
        else:
            s = pipe.stage(3, **side, **{f"{n}_{i}": v for n, xy in pieces.items() for i, v in zip("ab", xy)})
            parts = {}
            for n in pieces:
                parts[n] = Signal(len(getattr(s, f"{n}_a")) + len(getattr(s, f"{n}_b")), name=n)
                m.d.comb += parts[n].eq(getattr(s, f"{n}_a") * getattr(s, f"{n}_b"))
        # beside the multiply: the normalisation's plan, from the exponent alone (the one-bit left shift
        # is decided by the product's top bit in stage 6; the right shift of a result below the normal
        # range by the exponent)
        pad = max(0, fo.precision + 1 - 2 * P)        # the product padded below to precision + 1 bits
        plan = norm_plan(m, "plan", fo, s.E, 2 * P + pad, max_shl=1, may_underflow=e_lo < 1)
        s = pipe.stage(4, valid=s.valid, tz=s.tz, zero=s.zero, sign=s.sign, nan=s.nan, inf=s.inf, **plan)
        # 5: the significand product, in [2^(2P-2), 2^(2P)) or zero
        prod = Signal(2 * P)
        if P <= k:
            m.d.comb += prod.eq(parts["pp"])
        else:
            # pp_ll has 2k bits, so pp_ll + (pp_hh << 2k) is a concatenation: two adders
            m.d.comb += prod.eq(Cat(parts["pp_ll"], parts["pp_hh"]) + ((parts["pp_lh"] + parts["pp_hl"]) << k))
        plan["sig"] = Cat(C(0, pad), prod)
        # beside the sum: is a one lost below the guard bit? Bit j of the (padded) product is lost iff
        # j < G - shl (left shift by shl) or j < G + shr (right shift), G = its width - precision - 1,
        # i.e. iff its trailing zeros (tz + pad) are fewer (never for a zero product)
        G = 2 * P - fo.precision - 1                   # G - pad
        nz = ~s.zero
        lost = [nz & (s.tz < G) if G > 0 else C(0, 1), nz & (s.tz < G - 1) if G > 1 else C(0, 1)]
        lost.append(nz & (s.tz < s.shr + G) if "shr" in plan else C(0, 1))
        lost = Cat(*lost)
        s = pipe.stage(5, valid=s.valid, lost=lost, sign=s.sign, nan=s.nan, inf=s.inf,
                       **{k: (v if k == "sig" else getattr(s, k)) for k, v in plan.items()})
        # 6: normalise
        n = norm_apply(m, "apply", fo, lost=tuple(s.lost), **{k: getattr(s, k) for k in plan})
        s = pipe.stage(6, valid=s.valid, exp=n.exp, man=n.man, guard=n.guard, sticky=n.sticky,
                       sign=s.sign, nan=s.nan, inf=s.inf)
        # 7: round, pack, specials
        res = _round_special(fo, s)
        s = pipe.stage(7, result=res, valid=s.valid)
        self._finish(m, pipe, 7, s.result, s.valid, extra)
        return m


def unpacked_layout(fmt):
    """The operand layout of ``FPMul(fmt, unpacked=True)``: ``sig`` (``precision`` bits, the leading
    bit explicit), ``exp`` (``exp_bits``: the effective biased exponent, 1 for a subnormal), ``sign``,
    ``nan``, ``inf``, ``zero`` (``sig == 0``; both ``inf`` and ``nan`` may ignore ``sig`` / ``exp``)."""
    return data.StructLayout({"sig": fmt.precision, "exp": fmt.exp_bits, "sign": 1, "nan": 1, "inf": 1,
                              "zero": 1})


def _round_special(fo, s):
    rounded = round_pack(fo, s.sign, s.exp, s.man, s.guard, s.sticky)
    if fo.finite_only:      # no infinity: an infinite result is NaN, as ml_dtypes converts it
        return Mux(s.nan | s.inf, C(fo.nan_bits, fo.width), rounded)
    return Mux(s.nan, C(fo.nan_bits, fo.width),
               Mux(s.inf, Cat(C(fo.inf_bits, fo.width - 1), s.sign), rounded))


class FPMulWiden(FPMul):
    """Widening multiplier: ``fmt`` operands (fp16, bf16, fp8), product rounded into ``out_fmt``
    (default fp32), where it is exact except for bf16 products beyond fp32's range (see
    :class:`FPMul`). Same ports and latency as :class:`FPMul`."""

    def __init__(self, fmt, depth=0, out_fmt=FP32):
        if out_fmt.precision < 2 * fmt.precision:
            raise ValueError(f"{out_fmt} cannot hold the exact product of two {fmt} significands")
        super().__init__(fmt, depth, out_fmt)


class FPConvert(FPUnit):
    """Format conversion ``result = out_fmt(a)``: exact when widening (fp16 / bf16 / fp8 -> fp32),
    round to nearest even with overflow to infinity (NaN for finite-only formats) when narrowing.
    NaN -> ``out_fmt``'s canonical NaN; infinity -> infinity (NaN for finite-only ``out_fmt``).

    Parameters: ``fmt`` (input), ``out_fmt`` (default fp32), ``depth``. One operand port ``a``.
    Latency: ``depth``. Boundaries: 1 = after the leading-zero count, 2 = after the shift,
    3 = output; depth 1 -> {2}, 2 -> {1, 2}, 3 -> all.
    """
    STAGES = 3
    CUTS = {0: (), 1: (2,), 2: (1, 2), 3: (1, 2, 3)}

    def __init__(self, fmt, depth=0, out_fmt=FP32):
        _check_fmt(fmt)
        _check_fmt(out_fmt)
        self.fmt, self.out_fmt = fmt, out_fmt
        super().__init__(fmt.width, 1, out_fmt.width, depth)

    def elaborate(self, platform):
        m = Module()
        fi, fo = self.fmt, self.out_fmt
        cuts, extra = self._cuts()
        pipe = Pipe(m, cuts, self.en)
        d = decode(fi, self.a)
        # E = eexp + (fo.bias - fi.bias), compared as eexp against constants (no adder in front)
        E = (d.eexp, fo.bias - fi.bias)
        # A left shift is needed only where an input subnormal becomes an output normal, i.e. when
        # out_fmt's bias is larger (normal inputs have the hidden bit set; with fo.bias <= fi.bias a
        # subnormal input has E <= 1): narrowing has no leading-zero count.
        plan = norm_plan(m, "plan", fo, E, d.sig, may_underflow=fo.bias - fi.bias < 0 or
                         fo.exp_bits < fi.exp_bits, may_normalize=fo.bias > fi.bias)
        s = pipe.stage(1, valid=self.in_valid, sign=d.sign, nan=d.is_nan, inf=d.is_inf, **plan)
        n = norm_apply(m, "apply", fo, **{k: getattr(s, k) for k in plan})
        s = pipe.stage(2, valid=s.valid, exp=n.exp, man=n.man, guard=n.guard, sticky=n.sticky,
                       sign=s.sign, nan=s.nan, inf=s.inf)
        res = _round_special(fo, s)
        s = pipe.stage(3, result=res, valid=s.valid)
        self._finish(m, pipe, 3, s.result, s.valid, extra)
        return m
