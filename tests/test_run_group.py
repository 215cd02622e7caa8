"""Several cocotb testcases in one simulator run (``sim.regress.run_group``, the normal set's groups in
``tests/normal_set.py``): each testcase is reported on its own, one that did not run is a failure, and the
groups the normal set makes keep slow entries and entries with parameters in runs of their own.

That a grouped testcase starts from a zeroed UB (``Harness.start``) is checked by the regression itself:
with the zeroing removed, the errors and elementwise groups of the normal set fail."""

import pytest

from sim.regress import REGRESSION, Entry, batches, entry_result, run_group
from tests.normal_set import grouped, per_type

UB_DEBUG = [e for e in REGRESSION if e.module == "test_ub_debug"]


def test_grouped_keeps_slow_entries_alone():
    entries = [e for e in REGRESSION if e.module == "test_elementwise"]
    params = per_type("ew", entries)
    groups = grouped(params, size=3)
    lists = [p.values[0] for p in groups]
    # every entry once; the normal ones in order, grouped across the slow ones between them
    assert sorted(e.name for group in lists for e in group) == sorted(e.name for e in entries)
    normal = [e for p in params if not p.marks for e in [p.values[0]]]
    assert [e for p, group in zip(groups, lists) if not p.marks for e in group] == normal
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


def test_batches_group_plain_entries_of_one_module():
    """``make sim``'s runs: consecutive parameterless entries of one module and engines, at most ``size`` to a
    run; an entry with parameters alone; a new module starts a new run."""
    gemv = [e for e in REGRESSION if e.module == "test_gemv"]
    ub = [e for e in REGRESSION if e.module == "test_ub_debug"]
    runs = batches(gemv + ub, size=3)
    assert [e for run in runs for e in run] == gemv + ub
    for run in runs:
        assert len(run) <= 3
        assert len({(e.module, e.unit_engines) for e in run}) == 1
        assert len(run) == 1 or not any(e.params for e in run)
    assert [len(r) for r in runs if r[0].params] and all(len(r) == 1 for r in runs if r[0].params)
    assert any(len(r) == 3 for r in runs)
    assert {tuple(r) for r in runs if r[0].module == "test_ub_debug"} == {tuple(r) for r in batches(ub, 3)}


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
    # each entry's own directory reads as a run of its own
    alone = entry_result(UB_DEBUG[0])
    assert alone.passed and [c.name for c in alone.cases] == [UB_DEBUG[0].testcase]
    assert not entry_result(missing).passed


@pytest.mark.cocotb
def test_run_group_waves_open_on_each_testcase():
    """With waves, each grouped testcase's save file opens on its own part of the run's FST: markers A and
    B at its start and end, one after the other, and the second testcase starting where the first ended."""
    import re
    from sim.runner import BUILD, config_spec
    from sim.waves import fst_span
    pair = UB_DEBUG[:2]
    result, failures = run_group(pair, waves=True, label="group-test_run_group_waves")
    assert not failures and result.waves_file.exists()
    windows = []
    for e in pair:
        d = BUILD / "run" / f"icarus-{config_spec('small')[1]}" / e.name
        assert (d / f"{e.name}.fst").resolve() == result.waves_file.resolve()
        text = (d / f"{e.name}.gtkw").read_text()
        marks = re.search(r"^\*-?[\d.]+ -?\d+ (\d+) (\d+) ", text, re.M)
        assert marks, text[:400]
        windows.append((int(marks.group(1)), int(marks.group(2))))
    (a0, b0), (a1, b1) = windows
    start, end = fst_span(result.waves_file)
    assert start <= a0 < b0 <= a1 < b1 <= end
    assert a1 - b0 < 10_000         # cocotb's one-step gap between tests (1 ps), less than a cycle (10 ns)
