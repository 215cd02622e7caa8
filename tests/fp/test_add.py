"""FPAdd: bit-exact against numpy / ml_dtypes (Verilator harness), plus Amaranth-sim smoke checks."""

import numpy as np
import pytest

from rtl.fp import BF16, FORMATS, FP8E4M3, FP8E5M2, FP16, FP32, FPAdd

from .amsim import run_unit
from .checks import assert_bits_equal
from .ref import random_pairs, ref_add, special_pairs
from .util import N_RANDOM, all_pairs
from .vharness import run

GROUP = {FP16: "w16", BF16: "w16", FP32: "w32", FP8E4M3: "small", FP8E5M2: "small"}


@pytest.mark.parametrize("fmt", [FP8E4M3, FP8E5M2], ids=str)
def test_fp8_exhaustive(fmt):
    a, b = all_pairs(fmt)
    assert_bits_equal(run("small", "add", fmt, a=a, b=b), ref_add(fmt, a, b), a, b, f"{fmt} add")


@pytest.mark.parametrize("fmt", [FP16, BF16, FP32], ids=str)
def test_special_classes(fmt):
    a, b = special_pairs(fmt)
    assert_bits_equal(run(GROUP[fmt], "add", fmt, a=a, b=b), ref_add(fmt, a, b), a, b, f"{fmt} add")


@pytest.mark.parametrize("fmt", [FP16, BF16, FP32], ids=str)
def test_random(fmt):
    a, b = random_pairs(fmt, N_RANDOM, np.random.default_rng(100 + fmt.width))
    assert_bits_equal(run(GROUP[fmt], "add", fmt, a=a, b=b), ref_add(fmt, a, b), a, b, f"{fmt} add")


# The rules spelled out (independent of the numpy reference).
CASES = [
    (FP32, 0x3F800000, 0xBF800000, 0x00000000),   # x + (-x) = +0
    (FP32, 0x80000000, 0x80000000, 0x80000000),   # -0 + -0 = -0
    (FP32, 0x80000000, 0x00000000, 0x00000000),   # -0 + +0 = +0
    (FP32, 0x00000001, 0x00000001, 0x00000002),   # subnormal + subnormal, exact
    (FP32, 0x00800000, 0x80000001, 0x007FFFFF),   # normal - subnormal -> subnormal
    (FP32, 0x7F7FFFFF, 0x7F7FFFFF, 0x7F800000),   # overflow -> +inf
    (FP32, 0x7F800000, 0xFF800000, 0x7FC00000),   # inf - inf -> canonical NaN
    (FP32, 0xFFC00001, 0x3F800000, 0x7FC00000),   # NaN in -> canonical (positive) NaN
    (FP32, 0x3F800000, 0x33800000, 0x3F800000),   # 1 + 2^-24: tie, to even (down)
    (FP32, 0x3F800001, 0x33800000, 0x3F800002),   # tie, to even (up)
    (FP16, 0x7BFF, 0x4C00, 0x7C00),               # 65504 + 16: tie at the top -> inf
    (FP16, 0x7BFF, 0x4BFF, 0x7BFF),               # 65504 + 15.99 -> 65504
    (BF16, 0xFF80, 0x7F80, 0x7FC0),               # -inf + inf -> NaN
    (FP8E4M3, 0x7E, 0x7E, 0x7F),                  # 448 + 448 -> NaN (e4m3fn has no inf)
    (FP8E4M3, 0x7E, 0x58, 0x7E),                  # 448 + 16 = 464: tie -> 448 (even)
    (FP8E4M3, 0x7E, 0x59, 0x7F),                  # 448 + 18 -> NaN (overflow)
    (FP8E5M2, 0x7B, 0x7B, 0x7C),                  # 57344 * 2 -> inf
    (FP8E5M2, 0x7E, 0x3C, 0x7E),                  # NaN + 1 -> 0x7E
]


@pytest.mark.parametrize("fmt,a,b,want", CASES, ids=lambda v: f"{v:#x}" if isinstance(v, int) else str(v))
def test_rules(fmt, a, b, want):
    assert int(ref_add(fmt, [a], [b])[0]) == want          # the reference agrees with the rule
    assert run_unit(FPAdd(fmt), [a, b], [b, a]) == [want, want]


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_amaranth_sim_smoke(name):
    fmt = FORMATS[name]
    a, b = random_pairs(fmt, 400, np.random.default_rng(7))
    assert_bits_equal(run_unit(FPAdd(fmt), a, b), ref_add(fmt, a, b), a, b, f"{fmt} add (amaranth sim)")
