"""The MGATHER cocotb runs of the regression, on Icarus (one simulator run each). The normal set runs the
seed examples, the errors and one type per element size (tests/normal_set.py); the other types under ``slow``."""

import pytest

from rtl.isa import DType
from sim.regress import REGRESSION, Entry, run_entry
from tests.normal_set import grouped, per_type, run_entries

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("entries", grouped(per_type("mgather", [e for e in REGRESSION if e.module == "test_mgather"])))
def test_mgather(entries):
    run_entries(entries)


#: The long sweep (make test-slow): every data type, four rounds of every mode / OOB mode / index type,
#: on the default configuration (32-byte words: runs of up to 8 elements, 64 reads in flight).
SWEEP = [Entry("test_mgather", f"mgather_random/dtype={d.name}", (("rounds", 4),), f"mgather_sweep_{d.name}")
         for d in DType]


@pytest.mark.slow
@pytest.mark.parametrize("entry", SWEEP, ids=lambda e: e.name)
def test_mgather_sweep_default_config(entry):
    result = run_entry(entry, config="default")
    assert result.passed, f"{entry.name} (default config) failed: see {result.results_xml.parent / 'sim.log'}"
