"""Floating-point format descriptions.

A :class:`FloatFormat` names the exponent and fraction widths of a binary floating-point format and
how it encodes the special values. The presets (:data:`FP32`, :data:`FP16`, :data:`BF16`,
:data:`FP8E4M3`, :data:`FP8E5M2`) match numpy / ml_dtypes bit for bit; ``FP8E4M3`` is ml_dtypes'
``float8_e4m3fn`` (no infinity; ``S.1111.111`` is NaN; every other ``S.1111.xxx`` is a normal number).
"""

from dataclasses import dataclass

from rtl.isa import DType

__all__ = ["FloatFormat", "FP32", "FP16", "BF16", "FP8E4M3", "FP8E5M2", "FORMATS", "format_of", "dtype_of"]


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format: 1 sign bit, ``exp_bits`` exponent bits, ``frac_bits`` fraction bits.

    ``ieee`` formats (``finite_only=False``) reserve the all-ones exponent for infinities (fraction 0)
    and NaNs (fraction != 0). ``finite_only`` formats (the ``fn`` fp8 kind) have no infinity: only the
    all-ones exponent *and* all-ones fraction is NaN, and a result too large to represent is NaN.
    """
    name: str
    exp_bits: int
    frac_bits: int
    finite_only: bool = False

    def __post_init__(self):
        if not (2 <= self.exp_bits <= 11 and 1 <= self.frac_bits <= 52):
            raise ValueError(f"FloatFormat {self.name}: unsupported widths e{self.exp_bits}m{self.frac_bits}")

    @property
    def width(self):
        """Total bits."""
        return 1 + self.exp_bits + self.frac_bits

    @property
    def precision(self):
        """Significand bits including the hidden bit."""
        return self.frac_bits + 1

    @property
    def bias(self):
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def exp_max(self):
        """All-ones exponent field."""
        return (1 << self.exp_bits) - 1

    @property
    def max_finite_exp(self):
        """Largest exponent field of a finite number."""
        return self.exp_max if self.finite_only else self.exp_max - 1

    @property
    def max_finite_bits(self):
        """Bit pattern (magnitude) of the largest finite number."""
        if self.finite_only:
            return (self.exp_max << self.frac_bits) | ((1 << self.frac_bits) - 2)
        return ((self.exp_max - 1) << self.frac_bits) | ((1 << self.frac_bits) - 1)

    @property
    def inf_bits(self):
        """Bit pattern of +infinity, or ``None`` for a finite-only format."""
        return None if self.finite_only else self.exp_max << self.frac_bits

    @property
    def nan_bits(self):
        """The canonical quiet NaN every NaN result is replaced by (positive sign)."""
        if self.finite_only:
            return (1 << (self.width - 1)) - 1
        return (self.exp_max << self.frac_bits) | (1 << (self.frac_bits - 1))

    def __str__(self):
        return self.name


FP32 = FloatFormat("fp32", 8, 23)
FP16 = FloatFormat("fp16", 5, 10)
BF16 = FloatFormat("bf16", 8, 7)
FP8E4M3 = FloatFormat("fp8e4m3", 4, 3, finite_only=True)
FP8E5M2 = FloatFormat("fp8e5m2", 5, 2)

#: Presets by name.
FORMATS = {f.name: f for f in (FP32, FP16, BF16, FP8E4M3, FP8E5M2)}

_BY_DTYPE = {DType.FP32: FP32, DType.FP16: FP16, DType.BF16: BF16, DType.FP8E4M3: FP8E4M3,
             DType.FP8E5M2: FP8E5M2}


def format_of(dtype):
    """The :class:`FloatFormat` of a floating-point :class:`~rtl.isa.DType`."""
    try:
        return _BY_DTYPE[dtype]
    except KeyError:
        raise ValueError(f"{dtype!r} is not a floating-point data type") from None


def dtype_of(fmt):
    """The :class:`~rtl.isa.DType` of a :class:`FloatFormat` preset (its numpy dtype:
    ``golden.numerics.DTYPE_NUMPY[dtype_of(fmt)]``)."""
    return next(d for d, f in _BY_DTYPE.items() if f == fmt)
