"""The MGATHER cocotb runs of the regression, on Icarus (one simulator run each)."""

import pytest

from sim.regress import REGRESSION, run_entry

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("entry", [e for e in REGRESSION if e.module == "test_mgather"], ids=lambda e: e.name)
def test_mgather(entry):
    result = run_entry(entry)
    assert result.passed, f"{entry.name} failed: see {result.results_xml.parent / 'sim.log'}"
