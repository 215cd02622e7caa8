"""Runs the error-status cocotb testbench on Icarus: one simulator run per status."""

import pytest

from sim.runner import list_testcases, run

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("testcase", list_testcases("test_errors"))
def test_errors(testcase):
    result = run("test_errors", testcase)
    assert result.passed, f"{testcase} failed: see {result.results_xml.parent / 'sim.log'}"
