"""FPAdd and FPMul: bit-exact against numpy / ml_dtypes (Verilator harness), plus Amaranth-sim smoke checks.
The same sweeps for both units; the rules spelled out per unit."""

import numpy as np
import pytest

from rtl.fp import BF16, FORMATS, FP8E4M3, FP8E5M2, FP16, FP32, FPAdd, FPMul

from .amsim import run_unit, shared_unit
from .checks import assert_bits_equal
from .ref import random_pairs, ref_add, ref_mul, special_pairs
from .util import N_RANDOM, all_pairs
from .vharness import run

GROUP = {FP16: "w16", BF16: "w16", FP32: "w32", FP8E4M3: "small", FP8E5M2: "small"}
#: operation -> (unit, numpy reference)
OPS = {"add": (FPAdd, ref_add), "mul": (FPMul, ref_mul)}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("fmt", [FP8E4M3, FP8E5M2], ids=str)
def test_fp8_exhaustive(op, fmt):
    a, b = all_pairs(fmt)
    assert_bits_equal(run("small", op, fmt, a=a, b=b), OPS[op][1](fmt, a, b), a, b, f"{fmt} {op}")


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("fmt", [FP16, BF16, FP32], ids=str)
def test_special_classes(op, fmt):
    a, b = special_pairs(fmt)
    assert_bits_equal(run(GROUP[fmt], op, fmt, a=a, b=b), OPS[op][1](fmt, a, b), a, b, f"{fmt} {op}")


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("fmt", [FP16, BF16, FP32], ids=str)
def test_random(op, fmt):
    a, b = random_pairs(fmt, N_RANDOM, np.random.default_rng(100 + fmt.width))
    assert_bits_equal(run(GROUP[fmt], op, fmt, a=a, b=b), OPS[op][1](fmt, a, b), a, b, f"{fmt} {op}")


# The rules spelled out (independent of the numpy reference).
ADD_CASES = [
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

MUL_CASES = [
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

RULES = [("add", *c) for c in ADD_CASES] + [("mul", *c) for c in MUL_CASES]


@pytest.mark.parametrize("op,fmt,a,b,want", RULES, ids=lambda v: f"{v:#x}" if isinstance(v, int) else str(v))
def test_rules(op, fmt, a, b, want):
    unit, ref = OPS[op]
    assert int(ref(fmt, [a], [b])[0]) == want          # the reference agrees with the rule
    assert run_unit(shared_unit(unit, fmt), [a, b], [b, a]) == [want, want]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_amaranth_sim_smoke(op, name):
    fmt = FORMATS[name]
    unit, ref = OPS[op]
    a, b = random_pairs(fmt, 400, np.random.default_rng(7))
    assert_bits_equal(run_unit(shared_unit(unit, fmt), a, b), ref(fmt, a, b), a, b, f"{fmt} {op} (amaranth sim)")
