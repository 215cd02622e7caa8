"""The elementwise-family cocotb runs of the regression, on Icarus (one simulator run each), plus the seed
examples and two data types on the default configuration (64 KiB UB, 32-byte words). The normal set runs
the per-type runs of INT8, FP16 and FP32 (tests/normal_set.py; every type x opcode stays bit-exact in
tests/rtl/test_rtl_elementwise.py), the other types under ``slow``."""

import pytest

from sim.regress import REGRESSION, Entry, run_entry
from tests.normal_set import grouped, per_type, run_entries

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("entries", grouped(per_type("ew", [e for e in REGRESSION if e.module == "test_elementwise"])))
def test_elementwise(entries):
    run_entries(entries)


DEFAULT_CONFIG = [Entry("test_elementwise", "ew_seed_examples"),
                  Entry("test_elementwise", "ew_dtype/dtype=FP32", label="ew_FP32"),
                  Entry("test_elementwise", "ew_dtype/dtype=INT8", label="ew_INT8")]


@pytest.mark.slow          # Icarus build of the default unit: make test-slow
@pytest.mark.parametrize("entry", DEFAULT_CONFIG, ids=lambda e: e.name)
def test_elementwise_default_config(entry):
    result = run_entry(entry, config="default")
    assert result.passed, f"{entry.name} (default config) failed: see {result.results_xml.parent / 'sim.log'}"
