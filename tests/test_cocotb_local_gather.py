"""The LOCAL_GATHER cocotb runs of the regression, on Icarus (one simulator run each), plus the seed
example and one data type on the default configuration (64 KiB UB, 32-byte words)."""

import pytest

from sim.regress import REGRESSION, Entry, run_entry

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("entry", [e for e in REGRESSION if e.module == "test_local_gather"], ids=lambda e: e.name)
def test_local_gather(entry):
    result = run_entry(entry)
    assert result.passed, f"{entry.name} failed: see {result.results_xml.parent / 'sim.log'}"


DEFAULT_CONFIG = [Entry("test_local_gather", "lg_seed_example"), Entry("test_local_gather", "lg_straddle"),
                  Entry("test_local_gather", "lg_dtype", (("dtype", "FP32"),), "lg_FP32")]


@pytest.mark.slow          # ~90 s on 2 cores (Icarus build of the default unit, 64 KiB UB images): make test-slow
@pytest.mark.parametrize("entry", DEFAULT_CONFIG, ids=lambda e: e.name)
def test_local_gather_default_config(entry):
    result = run_entry(entry, config="default")
    assert result.passed, f"{entry.name} (default config) failed: see {result.results_xml.parent / 'sim.log'}"
