"""Constrained-random PTO programs (sim/pto/fuzz.py): a short stream on the golden model and two programs on
the RTL for ``make test``; long streams under ``-m slow``; a failing program is written out and replays."""

import subprocess
import sys

import pytest

import sim.pto.run
from rtl.config import preset
from rtl.isa import Opcode
from rtl.top import engines_for
from sim.pto.fuzz import random_program, run_one

RTL_OPS = [op for e in engines_for(preset("small")) for op in e.opcodes]


def test_deterministic_and_covering():
    a, b = random_program(5), random_program(5)
    assert a[0].text() == b[0].text()
    seen, statuses = set(), set()
    for s in range(40):
        p, _ = random_program(s)
        seen |= {i.opcode for i in p.instrs}
        statuses |= {i.attrs["expect"] for i in p.instrs if "expect" in i.attrs}
    assert seen == set(Opcode)
    assert len(statuses) >= 3            # illegal instructions of several kinds


@pytest.mark.parametrize("seed", range(25))
def test_fuzz_golden(seed, tmp_path):
    ok, (rep, problems), _ = run_one(seed, out_dir=tmp_path)
    assert ok, problems


@pytest.mark.cocotb
@pytest.mark.parametrize("seed", [1000, 1001])
def test_fuzz_rtl(seed, tmp_path):
    ok, (rep, problems), path = run_one(seed, sim="icarus", ops=RTL_OPS, out_dir=tmp_path)
    assert ok, f"{problems}; replay: python -m sim run {path} --data {path.with_suffix('.npz') if path else ''}"


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 400))
def test_fuzz_golden_long(seed, tmp_path):
    ok, (rep, problems), _ = run_one(seed, n_instrs=8, out_dir=tmp_path)
    assert ok, problems


@pytest.mark.slow
@pytest.mark.cocotb
@pytest.mark.parametrize("seed", range(2000, 2040))
def test_fuzz_rtl_long(seed, tmp_path):
    ok, (rep, problems), path = run_one(seed, sim="icarus", ops=RTL_OPS, n_instrs=8, out_dir="build/pto/fuzz")
    assert ok, f"{problems}; replay: python -m sim run {path} --data {path.with_suffix('.npz') if path else ''}"


def test_failing_program_is_written_and_replays(tmp_path, monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("injected")
    monkeypatch.setattr(sim.pto.run, "run_program", broken)
    ok, (rep, problems), path = run_one(7, out_dir=tmp_path)
    assert not ok and "injected" in problems[0]
    assert path.exists() and path.with_suffix(".npz").exists()
    monkeypatch.undo()
    r = subprocess.run([sys.executable, "-m", "sim", "run", str(path), "--data", str(path.with_suffix(".npz")),
                        "--sim", "none"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
