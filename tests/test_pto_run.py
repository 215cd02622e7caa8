"""``python -m sim run`` with ``--sim none`` (the golden model alone): every example against its own numpy
reference (written from the seeds, independently of the golden model), the CLI's exit codes and messages."""

import pathlib
import subprocess
import sys

import numpy as np
import pytest

from pto import parse_file
from sim.programs.run import format_table, run_program

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
NAMES = sorted(p.stem for p in EXAMPLES.glob("*.pto"))


def example(name):
    from sim.examples import example_module
    return example_module(name)


def test_every_example_has_a_generator():
    assert len(NAMES) >= 9
    for n in NAMES:
        assert (EXAMPLES / f"{n}.py").exists(), n


@pytest.mark.parametrize("name,tiles", [("double_buffer", 8), ("double_buffer_32", 32)])
def test_double_buffer_programs_are_generated(name, tiles):
    """The double-buffered loops are ``examples/double_buffer.py``'s ``program(tiles)``, one source."""
    assert (EXAMPLES / f"{name}.pto").read_text() == example("double_buffer").program(tiles, name)


@pytest.mark.parametrize("name", NAMES)
def test_example_golden(name):
    mod = example(name)
    x = mod.inputs()
    rep = run_program(EXAMPLES / f"{name}.pto", x, sim="none")
    assert rep.ok, rep.problems
    ref = mod.reference(x)
    assert set(ref) == set(rep.outputs)
    for k, v in ref.items():
        got = rep.outputs[k]
        assert got.shape == np.shape(v) and got.tobytes() == np.asarray(v, got.dtype).tobytes(), k
    assert all(r.status == "OK" for r in rep.rows)
    assert str(rep.rows[0].line) in format_table(rep.rows)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "sim", *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_cli_run_none(tmp_path):
    mod = example("gather_scale")
    np.savez(tmp_path / "in.npz", **mod.inputs())
    r = _cli("run", EXAMPLES / "gather_scale.pto", "--data", tmp_path / "in.npz", "--sim", "none",
             "--out", tmp_path / "out.npz")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:6] == ["line", "op", "shape", "(valid/static)", "type", "status"]
    assert [l.split()[1] for l in lines[2:5]] == ["mgather.row", "trowexpandmul", "tstore"]
    out = np.load(tmp_path / "out.npz")
    ref = mod.reference(mod.inputs())
    assert out["scaled"].tobytes() == ref["scaled"].tobytes() and out["out"].tobytes() == ref["out"].tobytes()


def test_cli_input_errors(tmp_path):
    x = example("gather_scale").inputs()
    del x["weight"]
    x["idx"] = x["idx"][:8]
    np.savez(tmp_path / "in.npz", **x)
    r = _cli("run", EXAMPLES / "gather_scale.pto", "--data", tmp_path / "in.npz", "--sim", "none")
    assert r.returncode == 2
    assert "missing input 'weight'" in r.stderr and "input 'idx' has shape (8, 1)" in r.stderr


def test_cli_asm_error(tmp_path):
    p = tmp_path / "bad.pto"
    p.write_text("func.func @bad(%a: !pto.tile<4x8xf32>) {\n  %b = tpartadd %a : !pto.tile<4x8xf32> -> "
                 "!pto.tile<4x8xf32>\n}\n")
    r = _cli("run", p, "--sim", "none")
    assert r.returncode == 2
    assert f"{p}:2:8: error: tpartadd takes 2 operands" in r.stderr and "^" in r.stderr


def test_error_status_exits_nonzero(tmp_path):
    # a runtime-bound valid shape that breaks TPARTADD's validity rule: VALIDITY_PATTERN at run time
    p = tmp_path / "vp.pto"
    p.write_text("func.func @vp(%a: !pto.tile<4x8xf32>, %b: !pto.tile<4x8xf32, valid=?x?>) -> (!pto.tile<4x8xf32, valid=2x8>) {\n"
                 "  %c = tpartadd %a, %b : (!pto.tile<4x8xf32>, !pto.tile<4x8xf32, valid=?x?>) -> !pto.tile<4x8xf32, valid=2x8>\n"
                 "  return %c : !pto.tile<4x8xf32, valid=2x8>\n}\n")
    np.savez(tmp_path / "in.npz", a=np.ones((4, 8), np.float32), b=np.ones((3, 8), np.float32))
    r = _cli("run", p, "--data", tmp_path / "in.npz", "--sim", "none")
    assert r.returncode == 1 and "VALIDITY_PATTERN" in r.stdout
    assert f"{p}:2:8: error: tpartadd: VALIDITY_PATTERN: TPARTADD: validity pattern" in r.stderr   # tests/test_user_errors.py


def test_nki_example_needs_a_large_ub():
    from pto import AsmError
    with pytest.raises(AsmError, match="UB overflow"):
        parse_file(EXAMPLES / "nki_local_gather.pto").assemble("default")


def test_examples_driver_reports_golden_only_cases(monkeypatch):
    """``python -m sim.examples`` (run by ``make sim``): an example the RTL cannot run (no engine, or a
    configuration that is no preset) runs on the golden model alone and says why. Every opcode has an
    engine in the presets now, so a unit without the GEMV engine is simulated here."""
    import rtl.top
    from rtl.engines.gemv.engine import GemvEngine
    from sim.examples import run_example
    monkeypatch.setattr(rtl.top, "engines_for",
                        lambda config: tuple(e for e in rtl.top.ENGINES if e is not GemvEngine))
    ok, where, detail = run_example("tgemv_acc", sim="icarus")
    assert ok and where.startswith("golden only (no engine for TGEMV_ACC"), (where, detail)
    ok, where, _ = run_example("nki_local_gather", sim="icarus")
    assert ok and "not a preset" in where
