"""The TLOAD/TSTORE cocotb runs of the regression, on Icarus (one simulator run each). The normal set runs the
smoke test and one type per element size (tests/normal_set.py); the other types under ``slow``."""

import pytest

from sim.regress import REGRESSION
from tests.normal_set import grouped, per_type, run_entries

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("entries", grouped(per_type("roundtrip", [e for e in REGRESSION if e.module == "test_transfer"])))
def test_transfer(entries):
    run_entries(entries)
