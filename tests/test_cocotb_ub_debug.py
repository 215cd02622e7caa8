"""The UB debug port and harness-option cocotb runs of the regression, on Icarus (one simulator run each)."""

import pytest

from sim.regress import REGRESSION
from tests.normal_set import grouped, run_entries

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("entries", grouped(e for e in REGRESSION if e.module == "test_ub_debug"))
def test_ub_debug(entries):
    run_entries(entries)
