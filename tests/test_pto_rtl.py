"""``python -m sim run`` on the RTL (Icarus, small configuration): two examples through the generic testbench
``cocotb_tests/test_pto.py`` (every command shadowed by the golden, the whole UB compared after each one),
outputs against the examples' numpy references, and the schedule ``--timeline`` draws; and (slow) the
TGEMV_ACC example on the default unit's GEMV engine."""

import pytest

from tests.test_pto_run import EXAMPLES, example
from sim.programs.run import run_program
from rtl.isa import INSTRUCTIONS, Opcode, Pipe
from sim.timeline import draw


def pipe_of(op):
    return INSTRUCTIONS[Opcode(op)].pipe

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("name", ["gather_scale", "tpartadd"])
def test_example_rtl(name, tmp_path):
    mod = example(name)
    x = mod.inputs(seed=3)
    rep = run_program(EXAMPLES / f"{name}.pto", x, sim="icarus", label=f"pto_test_{name}")
    assert rep.ok, rep.problems
    assert all(r.status == "OK" == r.golden and isinstance(r.cycles, int) and r.cycles > 0 for r in rep.rows)
    # the whole program, commands back to back: each instruction's cycles, and a few between them (issue #34)
    n = len(rep.rows)
    assert rep.sum_cycles <= rep.total_cycles <= rep.sum_cycles + 4 * (n - 1), (rep.total_cycles, rep.sum_cycles)
    # the schedule the timeline draws: one instruction at a time, each accepted when the one before has
    # answered, its engine started in the next cycle (the response's ``queued``: 1), as long as its cycles
    # from the acceptance, the last ending where the program's total ends
    assert len(rep.schedule) == n and rep.accepted[0] == 0 and rep.schedule[-1][2] == rep.total_cycles
    assert [s - a for a, (_, s, _) in zip(rep.accepted, rep.schedule)] == [1] * n, (rep.accepted, rep.schedule)
    for (_, s0, e0), a1 in zip(rep.schedule, rep.accepted[1:]):
        assert e0 < a1, (rep.accepted, rep.schedule)
    assert [e - a for a, (_, _, e) in zip(rep.accepted, rep.schedule)] == [r.cycles for r in rep.rows]
    util = draw(rep.schedule, tmp_path / "timeline.png", labels=[r.op for r in rep.rows], accepted=rep.accepted)
    assert (tmp_path / "timeline.png").stat().st_size > 0
    assert sum(util.values()) == pytest.approx((rep.sum_cycles - n) / rep.total_cycles)
    # the unit's per-pipe busy counters: each pipe's instructions' cycles, added up in hardware
    want = {pipe.value: sum(r.cycles for r, (op, _, _) in zip(rep.rows, rep.schedule) if pipe_of(op) == pipe)
            for pipe in Pipe}
    assert rep.busy == want and sum(want.values()) == rep.sum_cycles, (rep.busy, want)
    for k, v in mod.reference(x).items():
        assert rep.outputs[k].tobytes() == v.tobytes(), k


@pytest.mark.slow            # builds the default configuration
def test_tgemv_acc_on_rtl():
    """The seed's TGEMV_ACC example on the default unit's GEMV engine, against its numpy reference."""
    mod = example("tgemv_acc")
    x = mod.inputs()
    rep = run_program(EXAMPLES / "tgemv_acc.pto", x, sim="icarus", label="pto_test_tgemv_acc")
    assert rep.ok and [r.status for r in rep.rows] == ["OK"], rep.problems
    for k, v in mod.reference(x).items():
        assert rep.outputs[k].tobytes() == v.tobytes(), k


def test_waves_with_save_file():
    """``--waves``: the RTL run leaves an FST and its GTKWave save file (with the enum/FSM name filters)."""
    import pathlib
    from sim.examples import example_module
    from sim.programs.run import run_program
    root = pathlib.Path(__file__).resolve().parent.parent
    rep = run_program(root / "examples" / "tpartadd.pto", example_module("tpartadd").inputs(), sim="icarus",
                      waves=True, label="pto_waves_test")
    assert rep.ok, rep.problems
    fst = pathlib.Path(rep.waves)
    assert fst.exists() and fst.with_suffix(".gtkw").exists()
    assert "^1 " in fst.with_suffix(".gtkw").read_text()
