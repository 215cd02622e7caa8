"""The TSYNC (barrier) cocotb runs of the regression, on Icarus."""

import pytest

from sim.regress import REGRESSION
from tests.normal_set import grouped, run_entries

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("entries", grouped(e for e in REGRESSION if e.module == "test_sync"))
def test_sync(entries):
    run_entries(entries)
