"""``python -m sim run`` on the RTL (Icarus, small configuration): two examples through the generic testbench
``cocotb_tests/test_pto.py`` (every command shadowed by the golden, the whole UB compared after each one),
outputs against the examples' numpy references; and TGEMV_ACC, which the RTL answers UNSUPPORTED today."""

import pytest

from tests.test_pto_run import EXAMPLES, example
from sim.programs.run import run_program

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("name", ["gather_scale", "tpartadd"])
def test_example_rtl(name):
    mod = example(name)
    x = mod.inputs(seed=3)
    rep = run_program(EXAMPLES / f"{name}.pto", x, sim="icarus", label=f"pto_test_{name}")
    assert rep.ok, rep.problems
    assert all(r.status == "OK" == r.golden and isinstance(r.cycles, int) and r.cycles > 0 for r in rep.rows)
    # the whole program, commands back to back: each instruction's cycles, and a few between them (issue #34)
    n = len(rep.rows)
    assert rep.sum_cycles <= rep.total_cycles <= rep.sum_cycles + 4 * (n - 1), (rep.total_cycles, rep.sum_cycles)
    for k, v in mod.reference(x).items():
        assert rep.outputs[k].tobytes() == v.tobytes(), k


@pytest.mark.slow            # builds the default configuration
def test_tgemv_acc_unsupported_on_rtl():
    mod = example("tgemv_acc")
    rep = run_program(EXAMPLES / "tgemv_acc.pto", mod.inputs(), sim="icarus", label="pto_test_tgemv_acc")
    assert [r.status for r in rep.rows] == ["UNSUPPORTED"] and not rep.ok
    assert "no engine" in rep.problems[0]


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
