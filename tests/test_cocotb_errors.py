"""The error-status cocotb runs of the regression, on Icarus (one simulator run per status)."""

import pytest

from sim.regress import REGRESSION, Entry, run_entry
from tests.normal_set import grouped, run_entries

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("entries", grouped(e for e in REGRESSION if e.module == "test_errors"))
def test_errors(entries):
    run_entries(entries)


def test_error_unsupported():
    """UNSUPPORTED needs a unit without an engine for some opcode: ``small`` with one UB read port has no
    elementwise and no GEMV engine (``rtl.top.engines_for``)."""
    entry = Entry("test_errors", "error/status=UNSUPPORTED")
    result = run_entry(entry, config="small,ub_read_ports=1")
    assert result.passed, f"{entry.name} failed: see {result.results_xml.parent / 'sim.log'}"
