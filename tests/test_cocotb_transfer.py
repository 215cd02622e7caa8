"""Runs the TLOAD/TSTORE cocotb testbench on Icarus, one simulator run per data type."""

import pytest

from rtl.isa import DType
from sim.runner import run

pytestmark = pytest.mark.cocotb


def _check(result):
    assert result.passed, f"{result.testcase} failed: see {result.results_xml.parent / 'sim.log'}"


def test_roundtrip_smoke():
    _check(run("test_transfer", "roundtrip_smoke"))


@pytest.mark.parametrize("dtype", [d.name for d in DType])
def test_roundtrip_random(dtype):
    _check(run("test_transfer", "roundtrip_random", params={"dtype": dtype}, label=f"roundtrip_{dtype}"))
