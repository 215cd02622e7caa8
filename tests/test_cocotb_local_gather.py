"""The LOCAL_GATHER cocotb runs of the regression, on Icarus (one simulator run each), plus the seed
example and one data type on the default configuration (64 KiB UB, 32-byte words).

The normal set runs one type per element size (tests/normal_set.py), the status sweep with 40 of its 120
random mutations, and the ``lg_error`` runs of the statuses only LOCAL_GATHER answers (index type, shape
rules, parameters, group dimension). Under ``slow``: the other types, the whole sweep, and the ``lg_error``
runs of the common checks (type, alignment, range, valid shape, layout), which the RTL checker answers for
LOCAL_GATHER exactly as golden in tests/rtl/test_rtl_checker.py and the unit answers for TLOAD/TSTORE in
tests/test_cocotb_errors.py."""

import pytest

from sim.regress import REGRESSION, Entry, run_entry
from tests.normal_set import grouped, per_type, run_entries

pytestmark = pytest.mark.cocotb

#: The status sweep of the normal set: the regression's ``lg_status_sweep`` (120 rounds) with fewer rounds.
STATUS_SWEEP_NORMAL = Entry("test_local_gather", "lg_status_sweep", (("rounds", 40),), "lg_status_sweep_40")

#: ``slow``: the whole status sweep and the ``lg_error`` runs of the common checks.
SLOW = ["lg_status_sweep"] + [f"lg_error_{s}" for s in ("dtype_invalid", "dtype_mismatch", "ub_misaligned",
                                                        "ub_out_of_range", "valid_exceeds_static",
                                                        "layout_unsupported")]


@pytest.mark.parametrize("entries", grouped(per_type("lg", [e for e in REGRESSION if e.module == "test_local_gather"],
                                                        slow=SLOW) + [STATUS_SWEEP_NORMAL]))
def test_local_gather(entries):
    run_entries(entries)


DEFAULT_CONFIG = [Entry("test_local_gather", "lg_seed_example"), Entry("test_local_gather", "lg_straddle"),
                  Entry("test_local_gather", "lg_dtype/dtype=FP32", label="lg_FP32")]


@pytest.mark.slow          # ~90 s on 2 cores (Icarus build of the default unit, 64 KiB UB images): make test-slow
@pytest.mark.parametrize("entry", DEFAULT_CONFIG, ids=lambda e: e.name)
def test_local_gather_default_config(entry):
    result = run_entry(entry, config="default")
    assert result.passed, f"{entry.name} (default config) failed: see {result.results_xml.parent / 'sim.log'}"
