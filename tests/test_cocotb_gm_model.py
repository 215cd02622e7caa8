"""The benchmark GM model's latency, measured at the unit's AXI ports (one simulator run per latency)."""

import pytest

from sim.regress import REGRESSION, run_entry

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("entry", [e for e in REGRESSION if e.module == "test_gm_model"], ids=lambda e: e.name)
def test_gm_model(entry):
    result = run_entry(entry)
    assert result.passed, f"{entry.name} failed: see {result.results_xml.parent / 'sim.log'}"
