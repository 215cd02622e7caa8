"""The error-status cocotb runs of the regression, on Icarus (one simulator run per status)."""

import pytest

from sim.regress import REGRESSION, run_entry

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("entry", [e for e in REGRESSION if e.module == "test_errors"], ids=lambda e: e.name)
def test_errors(entry):
    result = run_entry(entry)
    assert result.passed, f"{entry.name} failed: see {result.results_xml.parent / 'sim.log'}"
