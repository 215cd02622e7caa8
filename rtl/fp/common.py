"""Shared building blocks of the float units: operand decoding, leading-zero count, normalisation,
round-to-nearest-even packing, and the pipeline-register helper every unit uses.

Internal to ``rtl.fp``; the units in :mod:`rtl.fp.units` are the public interface.
"""

from types import SimpleNamespace

from amaranth.hdl import C, Cat, Const, Mux, Signal, Value, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["decode", "lzc", "normalize", "limit_marker", "norm_plan", "norm_apply", "round_pack", "Pipe", "FPUnit"]


def decode(fmt, x):
    """Split a packed operand into sign, fields, class flags and significand.

    ``sig`` has ``fmt.precision`` bits with the hidden bit on top; ``eexp`` is the effective exponent
    field (1 for subnormals and zero), so the value is ``sig * 2**(eexp - bias - frac_bits)``.
    """
    f, e = fmt.frac_bits, fmt.exp_bits
    frac = x[:f]
    exp = x[f:f + e]
    sign = x[f + e]
    exp_zero = exp == 0
    exp_ones = exp == fmt.exp_max
    frac_ones = frac == (1 << f) - 1
    if fmt.finite_only:
        is_nan = exp_ones & frac_ones
        is_inf = C(0, 1)
    else:
        is_nan = exp_ones & (frac != 0)
        is_inf = exp_ones & (frac == 0)
    return SimpleNamespace(
        sign=sign, exp=exp, frac=frac, mag=x[:f + e],
        is_nan=is_nan, is_inf=is_inf, is_zero=exp_zero & (frac == 0),
        sig=Cat(frac, ~exp_zero), eexp=exp | exp_zero)


def _pow2_ceil(n):
    p = 1
    while p < n:
        p *= 2
    return p


def lzc(v):
    """Leading-zero count of ``v`` as a balanced tree. The count is unspecified when ``v == 0``."""
    n = len(v)
    width = _pow2_ceil(n)
    v = Cat(C(0, width - n), v)          # pad at the bottom: leading-zero count unchanged

    def tree(x):
        if len(x) == 1:
            return ~x[0], Const(0, 0)
        half = len(x) // 2
        zl, cl = tree(x[:half])
        zh, ch = tree(x[half:])
        return zh & zl, Mux(zh, Cat(cl, C(1, 1)), Cat(ch, C(0, 1)))

    return tree(v)[1]


def _as_E(m, name, E):
    """``E`` given as a signed value, or as ``(x, offset)``: ``x`` unsigned, ``E = x + offset``. Returns
    ``(Es, x, offset)``: ``Es`` the signed value; ``x`` None when ``E`` was a value."""
    if isinstance(E, tuple):
        x, off = Value.cast(E[0]), E[1]
        assert not x.shape().signed
        Es = Signal(signed(max(len(x), abs(off).bit_length()) + 2), name=f"{name}_E")
        m.d.comb += Es.eq(x + off)
        return Es, x, off
    Es = Signal(signed(len(E) + 1), name=f"{name}_E")
    m.d.comb += Es.eq(E)
    return Es, None, 0


def _ge(Es, x, off, c):
    """``E >= c``; with ``x`` (``E = x + off``) a comparison of ``x`` with a constant."""
    if x is None:
        return Es >= c
    k = c - off
    return C(1, 1) if k <= 0 else (C(0, 1) if k >= 1 << len(x) else x >= k)


def limit_marker(E, W):
    """The ``W``-bit value :func:`norm_plan` takes as ``marker``: a one at bit ``W - E`` (i.e. where the
    leading one must be for exponent 1) when ``2 <= E <= W``, at the top bit when ``E <= 1``, none
    beyond. ``E`` as for :func:`norm_plan` (a signed value or ``(x, offset)``). Computed a stage ahead
    of the leading-zero count, it replaces the clamp ``min(lz, E - 1)`` after it."""
    if isinstance(E, tuple):
        x, off = Value.cast(E[0]), E[1]
        eq = lambda c: C(0, 1) if not 0 <= c - off < 1 << len(x) else x == c - off
        le1 = ~_ge(None, x, off, 2)
    else:
        Es = Value.cast(E)
        eq = lambda c: Es == c
        le1 = Es <= 1
    return Cat(*(eq(W - i) for i in range(W - 1)), le1)


def norm_plan(m, name, out_fmt, E, sig, *, may_underflow=True, may_normalize=True, max_shl=None,
              marker=None):
    """First half of :func:`normalize`: the leading-zero count and the shift amounts.

    Returns a dict of values (``sig``, ``E``, ``shl``, and ``shr`` when ``may_underflow``) that
    :func:`norm_apply` takes; a pipeline cut may sit between the two. ``E`` is a signed value or
    ``(x, offset)`` with ``x`` unsigned and ``E = x + offset`` (then every comparison of ``E`` is one
    of ``x`` with a constant and ``shr`` a constant minus ``x``'s low bits: no adder in front).
    ``may_normalize=False`` promises that no left shift is ever needed (``sig``'s top bit is set or
    ``E <= 1``): ``shl`` is then the constant 0 and there is no leading-zero count. ``max_shl=1``
    promises that ``sig`` has at most one leading zero or is zero (a product of normalised
    significands): ``shl`` is then one bit (``sig``'s top bit clear and ``E >= 2``), no leading-zero
    count either. ``marker``: :func:`limit_marker` ``(E, len(sig))``, computed earlier: the shift is
    then the leading-zero count of ``sig | marker``, no comparison after it.
    """
    p = out_fmt.precision
    if isinstance(sig, int):
        # max_shl=1 only: the plan of a significand of this width that comes later (it is not needed
        # for the plan; the caller pads it to at least precision + 1 bits and adds it as ``sig``)
        assert max_shl == 1 and sig >= p + 1
        W0 = W = sig
    else:
        W0 = W = len(sig)
        if W < p + 1:
            sig = Cat(C(0, p + 1 - W), sig)
            W = p + 1
    Es, x, off = _as_E(m, name, E)
    shl = C(0, 1)
    if may_normalize and max_shl == 1:
        # the one-bit shift is formed by norm_apply, from sig's top bit and these
        ge2, Em1 = Signal(name=f"{name}_ge2"), Signal(Es.shape(), name=f"{name}_Em1")
        m.d.comb += [ge2.eq(_ge(Es, x, off, 2)), Em1.eq(Es - 1)]
        shl = None
    elif may_normalize and marker is not None:
        assert max_shl is None and W == W0 and len(marker) == W
        shl = Signal(range(W + 1), name=f"{name}_shl")
        m.d.comb += shl.eq(lzc(sig | marker))
    elif may_normalize:
        assert max_shl is None, "max_shl: only 1 (or None: any)"
        shl = Signal(range(W + 1), name=f"{name}_shl")
        lz = Signal(range(_pow2_ceil(W) + 1), name=f"{name}_lz")
        m.d.comb += lz.eq(lzc(sig))
    if may_normalize and max_shl is None and marker is None and x is not None and off - 1 >= W:
        m.d.comb += shl.eq(lz)                 # E - 1 >= offset - 1 >= W >= lz: never clamped
    elif may_normalize and max_shl is None and marker is None and x is not None and off == 1:
        # E - 1 = x: min(lz, x), a comparison of two short unsigned values
        m.d.comb += shl.eq(Mux(lz < x, lz, x))
    elif may_normalize and max_shl is None and marker is None:
        with m.If(Es <= 1):
            m.d.comb += shl.eq(0)
        with m.Elif(lz < Es - 1):
            m.d.comb += shl.eq(lz)
        with m.Else():
            m.d.comb += shl.eq(Es - 1)
    plan = dict(E=Es) if isinstance(sig, int) else dict(sig=sig, E=Es)
    if shl is not None:
        plan["shl"] = shl
    if shl is None:
        plan.update(ge2=ge2, Em1=Em1)
    if may_underflow:
        shr = Signal(range(W + 2), name=f"{name}_shr")
        if x is None:
            mid = 1 - Es
        else:
            # 1 - E = (1 - offset) - x; in the middle range it is in [1, W]: the low bits suffice
            nb = len(shr)
            mid = (C((1 - off) % (1 << nb), nb) - x[:nb])[:nb]
        pos = Signal(name=f"{name}_pos")
        m.d.comb += pos.eq(_ge(Es, x, off, 1))
        with m.If(pos):
            m.d.comb += shr.eq(0)
        with m.Elif(~_ge(Es, x, off, -W)):
            m.d.comb += shr.eq(W + 1)
        with m.Else():
            m.d.comb += shr.eq(mid)
        plan.update(shr=shr, pos=pos)
    return plan


def norm_apply(m, name, out_fmt, sig, E, shl=None, shr=None, sticky=C(0, 1), pos=None, ge2=None, Em1=None,
               lost=None):
    """Second half of :func:`normalize`: the shifts, the exponent, guard and sticky bits. Takes the
    values :func:`norm_plan` returned (``pos``: ``E >= 1``, ``shr``'s select, as a flag; with
    ``max_shl=1``: ``ge2`` and ``Em1`` instead of ``shl``, which is then ``sig``'s top bit clear and
    ``E >= 2``, formed here). ``lost`` (``max_shl=1`` only): ``(left0, left1, right)``, whether a one
    bit of ``sig`` falls below the guard bit when it is shifted left by 0, by 1, or right by ``shr``,
    computed earlier (e.g. from trailing-zero counts), instead of the OR of ``sig``'s low bits here."""
    p = out_fmt.precision
    W = len(sig)
    left = Signal(W, name=f"{name}_left")
    if shl is None:
        # at most one bit: each bit of ``left`` is a function of two bits of sig, its top bit and ge2
        shl = Signal(name=f"{name}_shl")
        m.d.comb += shl.eq(~sig[-1] & ge2)
        E_shl = Mux(shl, Em1, E)
    else:
        E_shl = E - shl
    m.d.comb += left.eq(sig << shl)
    if pos is None:
        pos = E >= 1
    shifted = Signal(W, name=f"{name}_shifted")
    if shr is not None:
        wide = Signal(2 * W + 1, name=f"{name}_rshift")
        m.d.comb += wide.eq(Cat(C(0, W + 1), sig) >> shr)
        m.d.comb += shifted.eq(Mux(pos, left, wide[W + 1:]))
    else:
        m.d.comb += shifted.eq(left)
    exp = Signal(len(E) - 1, name=f"{name}_exp")
    m.d.comb += exp.eq(Mux(shifted[-1], E_shl, 0))
    # sticky = shifted[:G].any() | lost, computed beside the shifters: shifting left (E >= 1, then
    # shr = 0) bit j of sig lands below G iff j + shl < G; shifting right (E < 1, then shl = 0)
    # iff j - shr < G (the bits lost below bit 0 included)
    G = W - p - 1
    st = Signal(name=f"{name}_sticky")
    if lost is not None:
        assert ge2 is not None
        left0, left1, right = lost
        st_left = Mux(shl, left1, left0)
        st_right = right
    else:
        st_left = Cat(*(sig[j] & (shl < G - j) for j in range(G))).any()
    if shr is not None and lost is not None:
        m.d.comb += st.eq(Mux(pos, st_left, st_right))
    elif shr is not None:
        st_right = Cat(*(sig[j] & (shr > j - G) if j >= G else sig[j] for j in range(W))).any()
        m.d.comb += st.eq(Mux(pos, st_left, st_right))
    else:
        m.d.comb += st.eq(st_left)
    return SimpleNamespace(
        exp=exp, man=shifted[W - p:], guard=shifted[W - p - 1], sticky=st | sticky)


def normalize(m, name, out_fmt, E, sig, sticky=C(0, 1), *, may_underflow=True):
    """Normalise ``sig * 2**(E - out_fmt.bias - (len(sig) - 1))`` for rounding into ``out_fmt``.

    ``E`` is a signed value: the biased exponent the result has if ``sig``'s top bit is set.
    Returns ``exp`` (encoded exponent; may exceed the format's range, overflow is decided in
    :func:`round_pack`), ``man`` (``precision`` bits, hidden bit on top), ``guard`` (the next bit)
    and ``sticky`` (OR of all lower bits and of the ``sticky`` argument). Results below the normal
    range come out as subnormals (``exp == 0``, hidden bit 0), shifted right with the lost bits in
    ``sticky``. ``may_underflow=False`` promises ``E >= 1`` and drops the right shifter.
    """
    plan = norm_plan(m, name, out_fmt, E, sig, may_underflow=may_underflow)
    return norm_apply(m, name, out_fmt, sticky=sticky, **plan)


def round_pack(fmt, sign, exp, man, guard, sticky):
    """Round to nearest even and pack. ``man`` has the hidden bit on top; ``exp`` is 0 iff the hidden
    bit is 0 (subnormal or zero) and may exceed the format's range. Overflow gives infinity (IEEE
    formats) or the canonical NaN (finite-only formats), as numpy / ml_dtypes do."""
    f = fmt.frac_bits
    frac = man[:f]
    mag = Cat(frac, exp)
    inc = guard & (sticky | frac[0])
    mag_r = mag + inc
    # overflow of mag + inc decided on mag, beside the increment (mag + inc > T <=> mag > T, or
    # inc and mag == T); T's fraction bits are all ones (finite-only) or mag >= inf_bits is
    # exp >= exp_max (IEEE), so no wide comparator
    if fmt.finite_only:
        T = fmt.max_finite_bits
        overflow = (mag > T) | (inc & (mag == T))
        return Mux(overflow, C(fmt.nan_bits, fmt.width), Cat(mag_r[:fmt.width - 1], sign))
    T = fmt.inf_bits - 1                   # largest finite: exp_max - 1, fraction all ones
    overflow = (exp >= fmt.exp_max) | (inc & (mag == T))
    return Mux(overflow, Cat(C(fmt.inf_bits, fmt.width - 1), sign), Cat(mag_r[:fmt.width - 1], sign))


class Pipe:
    """Places pipeline registers at chosen stage boundaries.

    ``stage(k, **values)`` at boundary ``k`` returns the values, registered (clock-enabled by ``en``)
    if ``k`` is one of ``cuts``, else unchanged.
    """

    def __init__(self, m, cuts, en):
        self.m, self.cuts, self.en = m, frozenset(cuts), en

    def stage(self, k, **values):
        if k not in self.cuts:
            return SimpleNamespace(**values)
        out = {}
        for name, v in values.items():
            v = Value.cast(v)
            # reset-less: a pipeline register holds data, never state (fewer loads on the reset net)
            r = Signal(v.shape(), name=f"p{k}_{name}", reset_less=True)
            with self.m.If(self.en):
                self.m.d.sync += r.eq(v)
            out[name] = r
        return SimpleNamespace(**out)


class FPUnit(wiring.Component):
    """Base class: ports common to every float unit and the depth -> register placement rule.

    Subclasses set ``STAGES`` (number of stage boundaries, the last one being the output) and
    ``CUTS`` (for each depth up to ``STAGES``, which boundaries get registers). Depths beyond
    ``STAGES`` register every boundary and add the rest as output registers.
    """
    STAGES = 1
    CUTS = {0: ()}

    def __init__(self, in_width, n_inputs, out_width, depth):
        if not (isinstance(depth, int) and depth >= 0):
            raise ValueError(f"depth={depth!r} must be a non-negative integer")
        self.depth = depth
        #: Cycles from an operand on the inputs to its result on ``result`` (= ``depth``).
        self.latency = depth
        sig = {"a": In(in_width)}
        if n_inputs == 2:
            sig["b"] = In(in_width)
        sig.update({"in_valid": In(1), "en": In(1, init=1),
                    "result": Out(out_width), "out_valid": Out(1)})
        super().__init__(sig)

    def _cuts(self):
        if self.depth <= self.STAGES:
            return self.CUTS[self.depth], 0
        return tuple(range(1, self.STAGES + 1)), self.depth - self.STAGES

    def _finish(self, m, pipe, k_out, result, valid, extra):
        """Drive the outputs from the last boundary plus ``extra`` output registers."""
        for i in range(extra):
            r = pipe.stage(k_out, result=result, valid=valid)  # k_out is in cuts when extra > 0
            result, valid = r.result, r.valid
        m.d.comb += [self.result.eq(result), self.out_valid.eq(valid)]
