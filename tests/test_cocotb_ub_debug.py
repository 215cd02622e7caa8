"""The UB debug port and harness-option cocotb runs of the regression, on Icarus (one simulator run each)."""

import pytest

from sim.regress import REGRESSION, run_entry

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("entry", [e for e in REGRESSION if e.module == "test_ub_debug"], ids=lambda e: e.name)
def test_ub_debug(entry):
    result = run_entry(entry)
    assert result.passed, f"{entry.name} failed: see {result.log_file}\n{result.summary()}"
