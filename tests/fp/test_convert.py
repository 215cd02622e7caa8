"""FPConvert: widening (exact, every input exhaustively) and narrowing (RNE) conversions."""

import numpy as np
import pytest

from rtl.fp import BF16, FP8E4M3, FP8E5M2, FP16, FP32, FPConvert

from .amsim import run_unit
from .checks import assert_bits_equal
from .ref import random_pairs, ref_convert, special_values, to_fraction
from .util import all_values
from .vharness import NARROW, run


@pytest.mark.parametrize("fmt", NARROW, ids=str)
def test_widening_exhaustive(fmt):
    a = all_values(fmt)
    want = ref_convert(fmt, a, FP32)
    assert_bits_equal(run("small", "conv", fmt, 0, FP32, a=a), want, a, None, f"{fmt}->fp32")
    # and it is exact: same value (NaN -> canonical NaN, inf -> inf)
    for x, r in zip(a[::7], want[::7]):
        fx, fr = to_fraction(fmt, x), to_fraction(FP32, r)
        if fx == "nan":
            assert r == FP32.nan_bits
        else:
            assert fx == fr


@pytest.mark.parametrize("fmt", NARROW, ids=str)
def test_narrowing_random(fmt):
    ra, _ = random_pairs(FP32, 400_000, np.random.default_rng(400 + fmt.width + fmt.exp_bits))
    # plus values near each boundary of the narrow format: its own values, widened, +-1 ulp in fp32
    own = ref_convert(fmt, all_values(fmt) if fmt.width == 8 else
                      np.random.default_rng(1).integers(0, 1 << 16, 50_000).astype(np.uint64), FP32)
    near = np.concatenate([own, own + 1, own - 1, own + (1 << 12), special_values(FP32)]).astype(np.uint32)
    a = np.concatenate([ra, near.astype(np.uint64)])
    want = ref_convert(FP32, a, fmt)
    assert_bits_equal(run("small", "conv", FP32, 0, fmt, a=a), want, a, None, f"fp32->{fmt}")


def test_amaranth_sim_smoke():
    a = all_values(FP8E4M3)
    assert_bits_equal(run_unit(FPConvert(FP8E4M3), a), ref_convert(FP8E4M3, a), a, None, "e4m3->fp32")
    assert run_unit(FPConvert(FP8E4M3), [0x7F, 0xFF, 0x7E, 0x01]) == [0x7FC00000, 0x7FC00000, 0x43E00000,
                                                                      0x3B000000]
    assert run_unit(FPConvert(FP32, 0, FP8E4M3), [0x43E80000, 0x43E80001, 0x7F800000]) == [0x7E, 0x7F, 0x7F]
