"""The *cheap* path of :class:`rtl.engines.elementwise.lanes.ElementwiseLanes`: per 32-bit slot, everything
but the floating-point add / sub / mul (integer ADD / SUB / MUL, MAX / MIN of every type) and the merge
with ``a``'s bytes (``keep_a``, and the whole of ``a`` for float arithmetic words), up to the slot's
"bypass" register at stage ``CheapPath.LATENCY`` = 5 (:class:`CheapPath`).

Stages count clock edges after the lanes' inputs (stage 0), as in :class:`ElementwiseLanes`.
"""

from amaranth.hdl import C, Cat, Mux, Signal

from rtl.fpga.dsp import product, product_latency
from rtl.lib.contract import require

__all__ = ["CheapPath"]


class CheapPath:
    """The cheap path's stages (class attributes) and its hardware for one slot (:meth:`slot`)."""

    #: Cycles of :func:`rtl.fpga.dsp.product` with its operand registers (``in_reg``, the default): the
    #: operands registered, then the product (``p(t + 2) = a(t) * b(t)``, rtl/fpga/dsp.py).
    PRODUCT_CYCLES = product_latency(in_reg=True)
    #: The stage the path starts from: the lanes' first operand register (``a_d[1]``, ``ctrl[1]``), from
    #: which the multipliers' operands are selected and the MAX / MIN keys formed.
    FIRST_STAGE = 1
    #: MAX / MIN: the order keys registered, then compared (``ge``): two registers beside the products.
    KEY_CYCLES = 2
    #: Stage of the products (and of the keys' compare): the operands of :attr:`FIRST_STAGE` through the
    #: multipliers' registers.
    PRODUCT_STAGE = FIRST_STAGE + PRODUCT_CYCLES
    #: Stage of the combined results, each registered: the products combined, integer add / sub, the MAX /
    #: MIN pick.
    COMBINE_STAGE = PRODUCT_STAGE + 1
    #: Cycles from the lanes' inputs to the path's merged "bypass" register: the combined result selected
    #: and merged with ``a``.
    LATENCY = COMBINE_STAGE + 1

    @classmethod
    def slot(cls, m, platform, s, ctrl, a_d, b_d, keeps, mul_size1):
        """Slot ``s``'s integer / MAX / MIN result merged with ``a`` (keep_a bytes, float arithmetic
        words), registered at stage ``LATENCY`` = 5. ``ctrl``, ``a_d``, ``b_d``, ``keeps``: the lanes'
        control, operands (the slot's 32 bits) and ``keep_a`` per stage; ``mul_size1``: the slot's copy
        of stage 1's ``size1`` for the multipliers' operand select.

        Stages: 1 -> 2 multiplier operands, order keys and NaN flags of MAX / MIN; 2 -> 3 products, the
        keys compared; 3 -> 4 the products combined, integer add / sub, the MAX / MIN pick; 4 -> 5 the
        result selected and merged with ``a``."""
        require(cls.KEY_CYCLES == cls.PRODUCT_CYCLES,
                f"MAX / MIN's keys and compare (KEY_CYCLES = {cls.KEY_CYCLES} registers) must take as long as "
                f"the multipliers (PRODUCT_CYCLES = {cls.PRODUCT_CYCLES}): both are used at PRODUCT_STAGE")
        k1, k3, k4 = cls.FIRST_STAGE, cls.PRODUCT_STAGE, cls.COMBINE_STAGE
        byte = lambda x, j: x[8 * j:8 * j + 8]
        # stage 1 -> 2: multiplier operands; MAX / MIN keys and NaN flags
        a1, b1, c1 = a_d[k1], b_d[k1], ctrl[k1]
        al, ah, bl, bh = a1[:16], a1[16:], b1[:16], b1[16:]
        s1 = mul_size1
        mops = [(al, bl), (Mux(s1, byte(a1, 1), ah), Mux(s1, byte(b1, 1), bl)),
                (Mux(s1, byte(a1, 3), al), Mux(s1, byte(b1, 3), bh)), (ah, bh)]
        # the products (stage 3): rtl.fpga.dsp.product, whose operand registers are stage 2's
        prods = [product(m, x, y, platform=platform, name=f"s{s}_p{k}") for k, (x, y) in enumerate(mops)]
        key_a = Signal(32, name=f"s{s}_key_a", reset_less=True)
        key_b = Signal(32, name=f"s{s}_key_b", reset_less=True)
        nanf = Signal(5, name=f"s{s}_nanf", reset_less=True)      # NaN operands per format, see _nan
        m.d.sync += [key_a.eq(_key(c1, a1)), key_b.eq(_key(c1, b1)), nanf.eq(_nan_flags(a1, b1))]
        # stage 2 -> 3: key compare
        c2 = ctrl[k1 + 1]
        ge = Signal(4, name=f"s{s}_ge", reset_less=True)         # per byte: a >= b for its element
        ge4 = key_a >= key_b
        ge2 = [key_a[16 * e:16 * e + 16] >= key_b[16 * e:16 * e + 16] for e in range(2)]
        ge1 = [byte(key_a, j) >= byte(key_b, j) for j in range(4)]
        m.d.sync += ge.eq(Cat(Mux(c2.size1, ge1[j], Mux(c2.size2, ge2[j // 2], ge4)) for j in range(4)))
        nan2 = Signal(4, name=f"s{s}_nan2", reset_less=True)      # per byte: its element is a float NaN pair
        m.d.sync += nan2.eq(_nan(c2, nanf))
        # stage 3 -> 4: combine the products; MAX / MIN pick (a NaN pair: the canonical NaN)
        c3, a3, b3 = ctrl[k3], a_d[k3], b_d[k3]
        p1, p2, p3, p4 = prods
        mul32 = Cat(p1[:16], p1[16:] + p2[:16] + p3[:16])
        mul16 = Cat(p1[:16], p4[:16])
        mul8 = Cat(p1[:8], p2[:8], p4[:8], p3[:8])
        mulr = Signal(32, name=f"s{s}_mulr", reset_less=True)
        m.d.sync += mulr.eq(Mux(c3.size1, mul8, Mux(c3.size2, mul16, mul32)))
        canon = Mux(c3.size2, Mux(c3.fp16, C(0x7E007E00, 32), C(0x7FC07FC0, 32)), C(0x7FC00000, 32))
        ext = Signal(32, name=f"s{s}_ext", reset_less=True)
        for j in range(4):
            pick = Mux(ge[j] ^ c3.min, byte(a3, j), byte(b3, j))
            m.d.sync += byte(ext, j).eq(Mux(nan2[j], byte(canon, j), pick))
        addsub = Signal(32, name=f"s{s}_addsub", reset_less=True)
        m.d.sync += addsub.eq(_addsub(c3, a3, b3))
        # stage 4 -> 5: select, merge with a
        c4, a4 = ctrl[k4], a_d[k4]
        cheap = Mux(c4.extremum, ext, Mux(c4.mul, mulr, addsub))
        bypass = Signal(32, name=f"s{s}_cheap", reset_less=True)
        for j in range(4):
            take_a = keeps[k4][4 * s + j] | c4.fp_arith
            m.d.sync += bypass[8 * j:8 * j + 8].eq(Mux(take_a, byte(a4, j), byte(cheap, j)))
        return bypass


def _addsub(c, a, b):
    """Integer a + b or a - b on a 32-bit slot split into elements of size 1, 2 or 4 bytes: one
    adder with a gap bit between bytes (propagate inside an element; at an element boundary kill
    the carry for ADD, generate the +1 of the two's complement for SUB)."""
    bb = Mux(c.sub, ~b, b)
    gaps_a, gaps_b = [], []
    for j in range(3):
        boundary = c.size1 | (c.size2 & (j == 1))
        gaps_a.append(~boundary | c.sub)
        gaps_b.append(boundary & c.sub)
    A = Cat(a[0:8], gaps_a[0], a[8:16], gaps_a[1], a[16:24], gaps_a[2], a[24:32])
    B = Cat(bb[0:8], gaps_b[0], bb[8:16], gaps_b[1], bb[16:24], gaps_b[2], bb[24:32])
    S = A + B + c.sub
    return Cat(S[0:8], S[9:17], S[18:26], S[27:35])


def _key(c, v):
    """The order-preserving key of every element of a 32-bit slot (element size from ``c``): unsigned
    ints their bits, signed ints the sign bit flipped, floats negative -> all bits inverted,
    positive -> sign bit set (so -0 < +0, and equal keys mean equal bits). Per byte: its element's
    sign bit and whether it is the element's top byte depend on the size only."""
    out = []
    for j in range(4):
        top2, top4 = j | 1, 3
        sign = Mux(c.size1, v[8 * j + 7], Mux(c.size2, v[8 * top2 + 7], v[8 * top4 + 7]))
        is_top = c.size1 | (c.size2 & (j == top2)) | (j == top4)
        x = v[8 * j:8 * j + 8]
        topbit = Cat(C(0, 7), is_top)
        fkey = Mux(sign, ~x, x | topbit)
        ikey = x ^ (topbit & c.signed.replicate(8))
        out.append(Mux(c.is_float, fkey, ikey))
    return Cat(*out)


def _nan_flags(a, b):
    """A NaN in ``a`` or ``b`` of a 32-bit slot, per format and element: fp16 (halves 0, 1), bf16
    (halves 0, 1), fp32 (registered, then combined with the type by :func:`_nan`)."""
    nan16 = lambda v: (v[10:15] == 0x1F) & v[:10].any()
    nanb = lambda v: (v[7:15] == 0xFF) & v[:7].any()
    nan32 = lambda v: (v[23:31] == 0xFF) & v[:23].any()
    h = lambda v, e: v[16 * e:16 * e + 16]
    return Cat(*(nan16(h(a, e)) | nan16(h(b, e)) for e in range(2)),
               *(nanb(h(a, e)) | nanb(h(b, e)) for e in range(2)), nan32(a) | nan32(b))


def _nan(c, f):
    """Per byte of a 32-bit slot: its element is a float NaN in ``a`` or ``b`` (fp16 / bf16 / fp32;
    MAX / MIN then give the canonical NaN), from the :func:`_nan_flags` ``f``."""
    halves = [Mux(c.fp16, f[e], c.bf16 & f[2 + e]) for e in range(2)]
    word = c.fp32 & f[4]
    return Cat(~c.size1 & Mux(c.size2, halves[j // 2], word) for j in range(4))
