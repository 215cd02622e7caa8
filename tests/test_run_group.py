"""Several cocotb testcases in one simulator run (``sim.regress.run_group``, the normal set's groups in
``tests/normal_set.py``): each testcase is reported on its own, one that did not run is a failure, and the
groups the normal set makes keep slow entries and entries with parameters in runs of their own.

That a grouped testcase starts from a zeroed UB (``Harness.start``) is checked by the regression itself:
with the zeroing removed, the errors and elementwise groups of the normal set fail."""

import pytest

from sim.regress import REGRESSION, Entry, run_group
from tests.normal_set import grouped, per_type

UB_DEBUG = [e for e in REGRESSION if e.module == "test_ub_debug"]


def test_grouped_keeps_slow_and_parametrized_entries_alone():
    entries = [e for e in REGRESSION if e.module == "test_elementwise"]
    params = per_type("ew", entries)
    groups = grouped(params, size=3)
    lists = [p.values[0] for p in groups]
    # every entry once, in order
    assert [e for group in lists for e in group] == entries
    for p, group in zip(groups, lists):
        if len(group) > 1:
            assert len(group) <= 3 and not p.marks
            assert all(not e.params for e in group)
            assert p.id == "+".join(e.name for e in group)
        else:
            (e,) = group
            assert p.id == e.name
    slow = {e.name for p in params if p.marks for e in [p.values[0]]}
    assert slow and all(len(p.values[0]) == 1 and p.marks for p in groups if p.values[0][0].name in slow)
    assert any(len(g) == 3 for g in lists)


def test_run_group_rejects_mixed_entries():
    with pytest.raises(ValueError, match="differs"):
        run_group([UB_DEBUG[0], Entry("test_transfer", "roundtrip_smoke")])
    with pytest.raises(ValueError, match="debug port"):
        run_group(UB_DEBUG[:2], config="small,ub_debug_port=0")


@pytest.mark.cocotb
def test_run_group_reports_each_testcase():
    missing = Entry("test_ub_debug", "no_such_testcase")
    result, failures = run_group([UB_DEBUG[0], missing], label="group-test_run_group")
    assert [c.name for c in result.cases] == [UB_DEBUG[0].testcase]
    assert result.cases[0].result == "pass"
    assert [(e, why.split(" ")[0]) for e, why in failures] == [(missing, "did")]
