"""FPMul: bit-exact against numpy / ml_dtypes (Verilator harness), plus Amaranth-sim smoke checks."""

import numpy as np
import pytest

from rtl.fp import BF16, FORMATS, FP8E4M3, FP8E5M2, FP16, FP32, FPMul

from .amsim import run_unit
from .checks import assert_bits_equal
from .ref import random_pairs, ref_mul, special_pairs
from .util import N_RANDOM, all_pairs
from .vharness import run

GROUP = {FP16: "w16", BF16: "w16", FP32: "w32", FP8E4M3: "small", FP8E5M2: "small"}


@pytest.mark.parametrize("fmt", [FP8E4M3, FP8E5M2], ids=str)
def test_fp8_exhaustive(fmt):
    a, b = all_pairs(fmt)
    assert_bits_equal(run("small", "mul", fmt, a=a, b=b), ref_mul(fmt, a, b), a, b, f"{fmt} mul")


@pytest.mark.parametrize("fmt", [FP16, BF16, FP32], ids=str)
def test_special_classes(fmt):
    a, b = special_pairs(fmt)
    assert_bits_equal(run(GROUP[fmt], "mul", fmt, a=a, b=b), ref_mul(fmt, a, b), a, b, f"{fmt} mul")


@pytest.mark.parametrize("fmt", [FP16, BF16, FP32], ids=str)
def test_random(fmt):
    a, b = random_pairs(fmt, N_RANDOM, np.random.default_rng(100 + fmt.width))
    assert_bits_equal(run(GROUP[fmt], "mul", fmt, a=a, b=b), ref_mul(fmt, a, b), a, b, f"{fmt} mul")


# The rules spelled out (independent of the numpy reference).
CASES = [
    (FP32, 0x80000000, 0x3F800000, 0x80000000),   # -0 * 1 = -0
    (FP32, 0x7F800000, 0x00000000, 0x7FC00000),   # inf * 0 -> NaN
    (FP32, 0xFF800000, 0xBF800000, 0x7F800000),   # -inf * -1 = +inf
    (FP32, 0x7F000000, 0x40000000, 0x7F800000),   # 2^127 * 2 -> +inf (overflow)
    (FP32, 0x00000001, 0x3F000000, 0x00000000),   # 2^-149 / 2: tie -> +0 (even)
    (FP32, 0x00000003, 0x3F000000, 0x00000002),   # 3 * 2^-150: tie -> 2 * 2^-149 (even)
    (FP32, 0x80000001, 0x3F400000, 0x80000001),   # -0.75 ulp -> -min subnormal
    (FP32, 0x00800000, 0x3F000000, 0x00400000),   # min normal / 2 -> subnormal, exact
    (FP32, 0x00000001, 0x71800000, 0x27000000),   # subnormal 2^-149 * 2^100 -> normal 2^-49
    (FP32, 0x7FC00001, 0x00000000, 0x7FC00000),   # NaN -> canonical NaN
    (FP16, 0x0001, 0x0001, 0x0000),               # 2^-48 -> +0
    (FP16, 0x8001, 0x0001, 0x8000),               # -2^-48 -> -0
    (FP8E4M3, 0x7E, 0x40, 0x7F),                  # 448 * 2 -> NaN (e4m3fn)
    (FP8E4M3, 0x7F, 0x00, 0x7F),                  # NaN * 0 -> NaN
    (FP8E5M2, 0x7C, 0x00, 0x7E),                  # inf * 0 -> NaN
]


@pytest.mark.parametrize("fmt,a,b,want", CASES, ids=lambda v: f"{v:#x}" if isinstance(v, int) else str(v))
def test_rules(fmt, a, b, want):
    assert int(ref_mul(fmt, [a], [b])[0]) == want          # the reference agrees with the rule
    assert run_unit(FPMul(fmt), [a, b], [b, a]) == [want, want]


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_amaranth_sim_smoke(name):
    fmt = FORMATS[name]
    a, b = random_pairs(fmt, 400, np.random.default_rng(7))
    assert_bits_equal(run_unit(FPMul(fmt), a, b), ref_mul(fmt, a, b), a, b, f"{fmt} mul (amaranth sim)")
