"""Pipelining: latency == depth, one operation per cycle, ``en`` stalls (Amaranth sim), and the
pipelined units bit-exact on random operands (Verilator)."""

import numpy as np
import pytest

from rtl.fp import BF16, FP8E4M3, FP16, FP32, FPAdd, FPConvert, FPMul, FPMulWiden

from .amsim import first_valid_cycle, run_unit, shared_unit
from .checks import assert_bits_equal
from .ref import random_pairs, ref_add, ref_convert, ref_mul
from .vharness import GROUPS, run

# a unit whose constructor raises is reported unused when collected, possibly in another test
pytestmark = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")

REF = {"add": ref_add, "mul": ref_mul}


@pytest.mark.parametrize("depth", range(9))
@pytest.mark.parametrize("kind", ["add", "mul", "widen", "conv"])
def test_latency_throughput_enable(kind, depth):
    fmt = FP16
    cls = {"add": FPAdd, "mul": FPMul, "widen": FPMulWiden, "conv": FPConvert}[kind]

    def unit():                 # one instance: its compiled simulator serves all three runs
        return shared_unit(cls, fmt, depth)
    u = unit()
    assert u.latency == depth
    assert first_valid_cycle(u) == depth
    a, b = random_pairs(fmt, 120, np.random.default_rng(depth))
    if kind == "conv":
        want = ref_convert(fmt, a)
        b = None
    elif kind == "widen":
        want = ref_mul(fmt, a, b, FP32)
    else:
        want = REF[kind](fmt, a, b)
    # back to back: one operation per cycle (run_unit feeds one per cycle and checks out_valid)
    assert_bits_equal(run_unit(unit(), a, b), want, a, b, f"{kind} depth {depth}")
    if depth:
        # with stalls
        got = run_unit(unit(), a, b, en_pattern=[1, 0, 1, 1, 0, 0, 1, 1, 1])
        assert_bits_equal(got, want, a, b, f"{kind} depth {depth} with en stalls")


def test_depth_validation():
    with pytest.raises(ValueError):
        FPAdd(FP32, -1)


@pytest.mark.slow      # one Verilator build of the 29 units (~35 s CPU): make test-slow
@pytest.mark.parametrize("spec", GROUPS["pipe"], ids=lambda s: f"{s[0]}-{s[1]}-d{s[2]}" + (f"-{s[3]}" if s[3] else ""))
def test_pipelined_random(spec):
    """10^5 random pairs through each pipelined unit on Verilator. ``slow``: in the normal set every kind at
    every depth 0-8 is bit-exact on fp16 in ``test_latency_throughput_enable`` (Amaranth sim, with stalls), and the
    elementwise lanes' units at their depths run 10^6 pairs per type and op on Verilator
    (tests/fp/test_ew_lanes_verilator.py)."""
    kind, fmt, depth, out_fmt = spec
    n = 100_000
    if kind == "conv":
        a, _ = random_pairs(fmt, n, np.random.default_rng(depth))
        b = None
        want = ref_convert(fmt, a, out_fmt)
    else:
        a, b = random_pairs(fmt, n, np.random.default_rng(depth))
        want = ref_mul(fmt, a, b, out_fmt) if kind in ("mul", "widen") else ref_add(fmt, a, b)
    assert_bits_equal(run("pipe", kind, fmt, depth, out_fmt, a=a, b=b), want, a, b, str(spec))
