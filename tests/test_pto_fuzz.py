"""Constrained-random PTO programs (sim/programs/fuzz.py): a short stream on the golden model and two programs on
the RTL for ``make test``; long streams under ``-m slow``; a failing program is written out and replays."""

import subprocess
import sys

import pytest

import sim.programs.run
from rtl.config import preset
from rtl.isa import Opcode
from rtl.top import supported_opcodes
from sim.programs.fuzz import random_program, run_one, stream

RTL_OPS = sorted(supported_opcodes(preset("small")), key=lambda op: op.value)


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


def test_fuzz_ops_option(capsys):
    """``--ops`` draws only the opcodes it names; an unknown name or one the configuration's unit lacks is a
    usage error naming it (exit code 2), not a traceback."""
    from sim.programs.fuzz import main
    assert main(["--ops", "tload,TSTORE", "--count", "2", "--instrs", "6"]) == 0
    for name in ("TLOAD,FOO", "TGEMV"):
        args = ["--ops", name, "--count", "1"] + (["--sim", "icarus", "--config", "small,engines=transfer"]
                                                  if name == "TGEMV" else [])
        with pytest.raises(SystemExit) as e:
            main(args)
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert ("FOO is no opcode" if name != "TGEMV" else "TGEMV not supported") in err, err
    p, _ = random_program(3, ops=[Opcode.TLOAD, Opcode.TSTORE], n_instrs=8)
    assert {i.opcode for i in p.instrs} <= {Opcode.TLOAD, Opcode.TSTORE}


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


def test_stream_golden(tmp_path):
    res = stream(200, seed=50, sim="none", n_instrs=8, out_dir=tmp_path)
    assert res.ok and res.instructions >= 200 and res.programs >= 200 // 8, res.failures


@pytest.mark.cocotb
def test_stream_rtl_batch(tmp_path):
    # eight programs in one simulator run; seed 2007's column-major TSTORE leaves bytes of its output region
    # unwritten, which must read as in a run of its own (the testbench zeroes the previous program's GM)
    res = stream(64, seed=2000, sim="icarus", ops=RTL_OPS, n_instrs=8, out_dir=tmp_path, batch=64)
    assert res.ok and res.programs == 8 and res.instructions == 64, res.failures


@pytest.mark.cocotb
def test_stream_rtl_back_to_back(tmp_path):
    """Dense programs with GM faults streamed without a pause (``--back-to-back``) and compared at their end: they pass, and
    the share of instructions that overlapped another pipe is counted (zero while the unit runs one
    instruction at a time: every instruction in a pipe is timed)."""
    res = stream(48, seed=100, sim="icarus", ops=RTL_OPS, n_instrs=8, out_dir=tmp_path, batch=48, dense=True,
                 back_to_back=True, faults=True)
    assert res.ok and res.instructions == 48, res.failures
    assert res.faulted >= 2                 # AXI errors mid-program (``--faults``) in this run too
    assert res.timed > 40 and res.overlapped == 0


def _back_to_back_against(rtl_ub_edit, seed=101, faults=None, rtl_faults=None):
    """``cocotb_tests.test_pto._run_back_to_back`` on a stand-in harness: the "RTL" is a second golden machine
    run on the same program, its final UB passed through ``rtl_edit(ub, golden_machine)`` (a fault to inject).
    ``faults``: the image's GM faults (``Image.faults``); the "RTL" meets ``rtl_faults`` instead when given.
    Returns the results dict, or raises what the comparison raises."""
    import asyncio
    import copy
    from types import SimpleNamespace

    import numpy as np

    from cocotb_tests.test_pto import _run_back_to_back
    from golden.machine import Machine
    from rtl.top import supported_opcodes
    from sim.programs.fuzz import _prepare

    cfg = preset("small")
    _, q, inputs, problems = _prepare(seed, "small", RTL_OPS, 8, True)
    assert not problems
    image = q.assemble("small").bind(inputs)
    if faults is not None:
        image.faults = faults
    golden = Machine(cfg, supported=supported_opcodes(cfg))
    rtl = {}

    class Driver:
        schedule = []

        async def execute_back_to_back(self, cmds):
            shadow = copy.deepcopy(golden)                  # the RTL: the same machine, run ahead
            if rtl_faults is not None:
                shadow.faults = rtl_faults
            statuses = [shadow.execute(c, on_undefined="mask") for c in cmds]
            rtl["ub"] = rtl_ub_edit(np.array(shadow.ub), shadow)
            rtl["gm"] = shadow.gm
            self.schedule = [(k, k, k + 1) for k in range(len(cmds))]
            return [{"status": s, "cycles": 1, "queued": 0} for s in statuses], len(cmds)

        def gm_read(self, addr, n):
            return rtl["gm"].read(addr, n)

    async def ub_load(addr, data):
        golden.ub[addr:addr + len(data)] = np.frombuffer(bytes(data), np.uint8)

    async def ub_image():
        return rtl["ub"].tobytes()

    async def no_counters():            # (a serial unit: no busy, stall or early-start counters)
        return None

    h = SimpleNamespace(golden=golden, driver=Driver(), ub_load=ub_load, ub_image=ub_image,
                        early_counters=no_counters, busy_counters=no_counters, stall_counters=no_counters,
                        gm_write=lambda a, d: golden.gm.write(a, d),
                        set_faults=lambda f: setattr(golden, "faults", f))
    results = {"commands": [], "outputs": {}, "error": None}
    asyncio.run(_run_back_to_back(h, image, results))
    return results


def test_back_to_back_compare_can_fail():
    """The end-of-program comparison of ``--back-to-back`` (cocotb_tests/test_pto.py) is a real one: equal
    machines pass, one flipped bit in the UB fails with the UB's mismatch."""
    import numpy as np

    from sim.failures import UbMismatch
    results = _back_to_back_against(lambda ub, m: ub)
    assert results["error"] is None and len(results["commands"]) == 8

    def flip(ub, m):
        ub[len(ub) // 3] ^= 1
        return ub

    with pytest.raises(UbMismatch):
        _back_to_back_against(flip)


def _faulted_seed():
    """A dense program (from seed 101 on) whose :func:`place_faults` windows make an instruction answer an AXI
    error, with those faults."""
    from sim.programs.fuzz import _prepare, place_faults
    from sim.programs.run import image_machine
    cfg = preset("small")
    for seed in range(101, 161):
        _, q, inputs, problems = _prepare(seed, "small", RTL_OPS, 8, True)
        image = q.assemble("small").bind(inputs)
        faults = place_faults(image, cfg, seed)
        m = image_machine(image, cfg, faults=faults)
        if any(m.execute(c, on_undefined="mask").name.startswith("AXI_") for c in image.commands):
            return seed, faults
    raise AssertionError("no seed of 101..160 places a fault that a transfer meets")


def test_place_faults():
    """``--faults``: deterministic per seed; in about 2 of 3 programs one or two windows, each inside a legal
    transfer's GM range; over a golden stream of dense programs some instructions answer AXI errors and the
    stream still passes (the golden agrees with itself: an error it causes is not an unexpected status)."""
    from golden.access import access
    from golden.check import check
    from rtl.isa import Status
    from sim.programs.fuzz import _prepare, place_faults
    cfg = preset("small")
    with_faults = 0
    for seed in range(30):
        _, q, inputs, _ = _prepare(seed, "small", RTL_OPS, 8, True)
        image = q.assemble("small").bind(inputs)
        f = place_faults(image, cfg, seed)
        assert f == place_faults(image, cfg, seed)
        with_faults += bool(f)
        spans = [sp for c in image.commands if check(c, cfg) == Status.OK
                 for sp in (lambda a: a.gm_reads + a.gm_writes)(access(c))]
        for lo, hi in f.read + f.write:
            assert any(lo < b and a < hi for a, b in spans), (seed, (lo, hi))
    assert 12 <= with_faults <= 27
    res = stream(300, seed=0, sim="none", ops=RTL_OPS, n_instrs=8, dense=True, faults=True)
    assert res.ok and res.faulted >= 5, (res.failures, res.faulted)


def test_back_to_back_compare_sees_faults():
    """With GM faults the end-of-program comparison expects the golden's AXI errors: a unit that meets the
    same faults passes, one that meets none fails on the status."""
    from golden.faults import GmFaults
    from sim.failures import StatusMismatch
    seed, faults = _faulted_seed()
    results = _back_to_back_against(lambda ub, m: ub, seed, faults)
    assert results["error"] is None
    assert any(c["status"].startswith("AXI_") and c["undefined"] > 0 for c in results["commands"])
    with pytest.raises(StatusMismatch):
        _back_to_back_against(lambda ub, m: ub, seed, faults, rtl_faults=GmFaults())


@pytest.mark.cocotb
def test_stream_rtl_faults(tmp_path):
    """AXI errors mid-program (``--faults``) on Icarus, each command compared as it answers: the statuses are
    the golden's, nothing outside a destination changes, the pipes that follow go on."""
    res = stream(40, seed=0, sim="icarus", ops=RTL_OPS, n_instrs=8, out_dir=tmp_path, batch=40, dense=True,
                 faults=True)
    assert res.ok and res.instructions >= 40 and res.faulted >= 2, (res.failures, res.faulted)


@pytest.mark.cocotb
def test_stream_rtl_concurrent(tmp_path):
    """The concurrent unit (``small_concurrent``): dense programs with GM faults streamed back to back equal
    the golden machine run one instruction at a time, and most of their instructions ran while another pipe
    ran (the comparison proves something only if they overlap)."""
    res = stream(48, seed=100, sim="icarus", ops=RTL_OPS, n_instrs=8, out_dir=tmp_path, batch=48, dense=True,
                 back_to_back=True, faults=True, config="small_concurrent")
    assert res.ok and res.instructions == 48, res.failures
    assert res.timed > 40 and res.overlapped > res.timed // 2, (res.overlapped, res.timed)
    assert res.faulted >= 2


@pytest.mark.cocotb
def test_back_to_back_gather_on_undefined_indices(tmp_path):
    """Seed 339 (found by the Verilator stream): an MGATHER_ELEM whose index tile an undefined TPARTADD result
    (a source overlapping its destination) wrote, with a read fault in its table: the unit read other table
    elements than the golden and met the fault. Back to back the golden cannot adopt the unit's indices, so
    either status is right there (``undetermined``) and its destination is left out."""
    res = stream(8, seed=339, sim="icarus", ops=RTL_OPS, n_instrs=8, out_dir=tmp_path, batch=8, dense=True,
                 back_to_back=True, faults=True, config="small_concurrent")
    assert res.ok and res.faulted == 1, (res.failures, res.faulted)


@pytest.mark.cocotb
def test_stream_rtl_concurrent_checked(tmp_path):
    """The concurrent unit with each command alone (the UB compared after every one, GM faults)."""
    res = stream(32, seed=300, sim="icarus", ops=RTL_OPS, n_instrs=8, out_dir=tmp_path, batch=32, dense=True,
                 faults=True, config="small_concurrent")
    assert res.ok and res.instructions >= 32, res.failures


@pytest.mark.slow
@pytest.mark.cocotb
@pytest.mark.parametrize("rule, balanced", [("ub_raw", False), ("ub_war", False), ("gm_raw", True)])
def test_concurrent_unit_needs_each_hazard_rule(rule, balanced, tmp_path):
    """Mutation check on the unit: built without one of the scoreboard's rules (``scoreboard_disable``), the
    dense back-to-back fuzz finds a mismatch (UB rules: within 80 / 176 instructions from seed 1000; ``gm_war``
    within 128, not run here). ``gm_raw`` 's case (a TLOAD of a region a TSTORE before it writes) the uniform
    draw did not meet in 800 instructions; drawn ``balanced`` (TSTOREs a quarter of the instructions, not one
    in 18) within 64 (seed 1007). The GM rules also have directed programs (tests/test_concurrent_unit.py);
    ``gm_waw`` none: only TSTOREs write GM and their pipe runs in order, so without it nothing changes
    (tests/rtl/test_rtl_dispatch.py shows that on mock engines)."""
    res = stream(800, seed=1000, sim="icarus", ops=RTL_OPS, n_instrs=8, out_dir=tmp_path, batch=200, dense=True,
                 back_to_back=True, config=f"small_concurrent,scoreboard_disable={rule}", balanced=balanced)
    assert not res.ok, f"the fuzz did not notice a unit without {rule}"
    # (a wrong result, not a build that failed or a hang: the order the rule keeps was broken)
    problems = [p for _, ps, _ in res.failures for p in ps]
    assert any(("UbMismatch" in p or "GmMismatch" in p) for p in problems), problems


@pytest.mark.slow
@pytest.mark.cocotb
def test_fuzz_long_verilator():
    """``make fuzz-long``: at least 10,000 instructions on Verilator (small), no mismatch (README, PTO-AS row)."""
    r = subprocess.run([sys.executable, "-m", "sim", "fuzz", "--sim", "verilator", "--config", "small",
                        "--instructions", "10000", "--seed", "0", "--instrs", "8", "--batch", "1000"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert ": 0 mismatches" in r.stdout.splitlines()[-1]


def test_failing_program_is_written_and_replays(tmp_path, monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("injected")
    monkeypatch.setattr(sim.programs.run, "run_program", broken)
    ok, (rep, problems), path = run_one(7, out_dir=tmp_path)
    assert not ok and "injected" in problems[0]
    assert path.exists() and path.with_suffix(".npz").exists()
    monkeypatch.undo()
    r = subprocess.run([sys.executable, "-m", "sim", "run", str(path), "--data", str(path.with_suffix(".npz")),
                        "--sim", "none"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_replay_lines():
    """What a failing stream prints to replay: back to back, the batch from its first seed as far as the
    failing program (the programs before it ran in the same simulation: the failure of a planted ordering
    bug at seed 210044 came back only that way) and, without faults, the written program alone back to back;
    with faults, the seed; else the written program."""
    from argparse import Namespace
    from pathlib import Path
    from sim.programs.fuzz import replay_line
    a = Namespace(instrs=8, sim="verilator", config="small_concurrent", faults=True, dense=True, balanced=False,
                  ops=None, back_to_back=True, batch=800)
    assert replay_line(a, 210044, None, (210000, 360)) == (
        " -> replay: python -m sim fuzz --seed 210000 --instructions 360 --batch 800 --back-to-back --instrs 8"
        " --sim verilator --config small_concurrent --faults --dense")
    a.faults = False            # (without faults the written program can run alone, back to back)
    assert replay_line(a, 210044, Path("out/fuzz_210044.pto"), (210000, 360)) == (
        " -> replay: python -m sim fuzz --seed 210000 --instructions 360 --batch 800 --back-to-back --instrs 8"
        " --sim verilator --config small_concurrent --dense; the program alone (it may pass): python -m sim run"
        " out/fuzz_210044.pto --data out/fuzz_210044.npz --back-to-back --sim verilator --config small_concurrent"
        " --waves")
    a.faults, a.back_to_back = True, False
    assert replay_line(a, 210044, None, (210000, 360)) == (
        " -> replay: python -m sim fuzz --seed 210044 --count 1 --instrs 8 --sim verilator"
        " --config small_concurrent --faults --dense")
    a.faults = False
    assert replay_line(a, 7, Path("out/fuzz_7.pto")) == " -> replay: python -m sim run out/fuzz_7.pto --data out/fuzz_7.npz"


def test_dependencies():
    """The dependencies the fuzzer reports: every ordered pair of legal commands, by pipe and hazard kind
    (golden.access), TSYNC and rejected commands left out."""
    from rtl.isa import DType, Pipe, gm_region, tile
    from sim.programs.fuzz import dependencies, dependency_summary
    G, V, S = Pipe.GM_TO_UB, Pipe.VECTOR, Pipe.UB_TO_GM
    a, b = tile(0x000, 4, 8, DType.FP32), tile(0x200, 4, 8, DType.FP32)
    load_a = {"opcode": Opcode.TLOAD, "dst": a, "gm": gm_region(0x1000, 4, 8, DType.FP32)}
    add = {"opcode": Opcode.TPARTADD, "dst": b, "src0": a, "src1": a}
    store_b = {"opcode": Opcode.TSTORE, "src0": b, "gm": gm_region(0x2000, 4, 8, DType.FP32)}
    load_b = {"opcode": Opcode.TLOAD, "dst": b, "gm": gm_region(0x2000, 4, 8, DType.FP32)}
    bad = dict(load_b, dst=dict(b, base=0x201))                    # UB_MISALIGNED: no dependency
    got = dependencies([load_a, add, {"opcode": Opcode.TSYNC}, store_b, bad, load_b], preset("small"))
    # a destination counts as read too (golden.access): the second load "reads" B, which the add wrote
    assert got == {(G, V, "RAW"): 1, (V, S, "RAW"): 1, (V, G, "WAR"): 1, (V, G, "RAW"): 1, (V, G, "WAW"): 1,
                   (S, G, "RAW"): 1, (S, G, "WAR"): 1}, got
    assert dependency_summary(got).startswith("dependencies RAW 4, WAR 2, WAW 1; across pipes: 7 of the 26 possible")


def test_possible_dependencies():
    """From the table: only TSTORE writes GM and only GM -> UB reads it, so 10 of the 36 cross-pipe
    combinations cannot occur (e.g. no WAW with a TSTORE, no RAW from a TSTORE to the vector pipe)."""
    from rtl.isa import Pipe
    from sim.programs.fuzz import possible_dependencies
    possible = possible_dependencies()
    assert len(possible) == 26
    assert (Pipe.UB_TO_GM, Pipe.GM_TO_UB, "RAW") in possible and (Pipe.UB_TO_GM, Pipe.VECTOR, "RAW") not in possible
    assert not any(k == "WAW" and Pipe.UB_TO_GM in (a, b) for a, b, k in possible)


def test_dense_stream_meets_every_dependency():
    """``--dense`` programs (results, inputs and GM regions placed over earlier ones) meet every possible
    (pipe pair, kind) combination within a short stream, and still equal the golden model's sequential run
    (on the golden here; make fuzz-long runs them on Verilator)."""
    from sim.programs.fuzz import dependency_summary, possible_dependencies
    res = stream(600, seed=0, sim="none", dense=True)
    assert res.ok, res.failures
    missing = possible_dependencies() - {k for k, n in res.dependencies.items() if n}
    assert not missing, dependency_summary(res.dependencies)
    plain = stream(300, seed=0, sim="none")
    assert possible_dependencies() - {k for k, n in plain.dependencies.items() if n}, "plain programs meet all"


def test_balanced_draws_every_pipe_alike():
    """``--balanced`` draws each instruction's pipe first: over many programs each of the four pipes gets
    about a quarter of the instructions in a pipe (uniform over the opcodes the vector pipe gets 10 of 17 and
    UB -> GM 1 of 17), TSYNC keeps its uniform share, and dense balanced programs still meet every
    dependency kind."""
    from collections import Counter
    from rtl.isa import INSTRUCTIONS, Pipe
    from pto.program import mnemonic
    from sim.programs.fuzz import possible_dependencies

    def shares(balanced):
        pipes = Counter()
        for seed in range(150):
            p, _ = random_program(seed, "small", RTL_OPS, 8, dense=True, balanced=balanced)
            ops = {mnemonic(op): op for op in RTL_OPS}
            pipes.update(INSTRUCTIONS[ops[i.name]].pipe for i in p.instrs if i.name in ops)
        total = sum(pipes.values())
        return {pipe: pipes[pipe] / total for pipe in list(Pipe) + [None]}

    uniform, balanced = shares(False), shares(True)
    assert uniform[Pipe.VECTOR] > 0.45 and uniform[Pipe.UB_TO_GM] < 0.1
    for pipe in Pipe:
        assert 0.18 < balanced[pipe] * (1 - balanced[None]) ** -1 < 0.32, (pipe, balanced)
    assert abs(balanced[None] - uniform[None]) < 0.04
    res = stream(600, seed=0, sim="none", ops=RTL_OPS, n_instrs=8, dense=True, balanced=True)
    assert res.ok, res.failures
    assert not possible_dependencies() - {k for k, n in res.dependencies.items() if n}
