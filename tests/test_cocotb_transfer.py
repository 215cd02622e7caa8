"""The TLOAD/TSTORE cocotb runs of the regression, on Icarus (one simulator run each). The normal set runs the
smoke test and one type per element size (tests/normal_set.py); the other types under ``slow``."""

import pytest

from sim.regress import REGRESSION, run_entry
from tests.normal_set import per_type

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("entry", per_type("roundtrip", [e for e in REGRESSION if e.module == "test_transfer"]))
def test_transfer(entry):
    result = run_entry(entry)
    assert result.passed, f"{entry.name} failed: see {result.results_xml.parent / 'sim.log'}"
