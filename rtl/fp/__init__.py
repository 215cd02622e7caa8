"""IEEE-754 arithmetic units: formats, adder, multiplier (also widening), conversions. See docs/fp.md."""

from rtl.fp.format import BF16, FORMATS, FP8E4M3, FP8E5M2, FP16, FP32, FloatFormat, dtype_of, format_of
from rtl.fp.units import FPAdd, FPConvert, FPMul, FPMulWiden, unpacked_layout

__all__ = ["FloatFormat", "FP32", "FP16", "BF16", "FP8E4M3", "FP8E5M2", "FORMATS", "format_of", "dtype_of",
           "FPAdd", "FPMul", "FPMulWiden", "FPConvert", "unpacked_layout"]
