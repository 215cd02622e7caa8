"""The GEMV operands as the MAC array widens them: :class:`OperandKind` (how an operand type is widened),
:func:`operand_kind` (the kind of a ``DType``), :func:`unpack` (an operand of any kind as fp32 fields, for
the multipliers) and :func:`e4m3_to_fp16` (a tested helper the array no longer uses)."""

from amaranth import *
from amaranth.lib import enum

from rtl.fp import FP32, unpacked_layout
from rtl.isa import DType
from rtl.lib.tile import ESZ_MAX

__all__ = ["OperandKind", "operand_kind", "unpack", "e4m3_to_fp16", "ESZ_MAX", "ELEM_BITS"]

#: Width of the widest operand element: the MAC array's ``a``, the A element the engine serializes.
ELEM_BITS = 8 << ESZ_MAX


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


def e4m3_to_fp16(m, x):
    """fp8 e4m3fn (ml_dtypes ``float8_e4m3fn``) -> fp16, exact; NaN (S.1111.111) -> fp16 NaN. Subnormal
    e4m3 (``m * 2^-9``) are normal in fp16 and are normalised here (3-bit leading-one search). (The MAC
    array no longer uses it: its operands are unpacked by :func:`unpack`; kept as a tested helper.)"""
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


def unpack(m, kind, e8, e16, e32, name):
    """One operand of ``kind`` (its 1-, 2- and 4-byte candidates ``e8``, ``e16``, ``e32``) as fp32 fields
    (:func:`rtl.fp.unpacked_layout`), registered (one register, ``MacArray.UNPACK_CYCLES``): exact for
    every float kind, by field moves and an exponent offset (fp16 / e5m2 +112, e4m3 +120: their values in
    fp32's exponent range; a subnormal is exponent 1 with no leading one, normalised by the multiplier).
    INT8: don't care."""
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
