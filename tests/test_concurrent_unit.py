"""The concurrent unit (``Config.concurrent``, preset ``small_concurrent``; rtl/concurrent.py): directed programs
whose result depends on one GM hazard rule, run back to back on Icarus against the golden machine, on the unit
and on the unit built without that rule (``Config.scoreboard_disable``), which must fail. The dense fuzz
catches the UB rules (tests/test_pto_fuzz.py::test_concurrent_unit_needs_each_hazard_rule); GM hazards
between the two transfer pipes are rarer in it, so each has a program of its own here."""

import numpy as np
import pytest

from pto.parser import parse
from rtl.config import preset
from sim.programs.run import run_images

T = "!pto.memref<8x16xf32>"
TILE = "!pto.tile<8x16xf32>"
W = "!pto.tile<8x1xf32, col_major>"

#: GM read-after-write across pipes: the TSTORE waits for the vector instruction that computes its tile, the
#: TLOAD after it (another pipe, nothing in the UB in common) must still wait for the TSTORE.
GM_RAW = f"""
func.func @gm_raw(%v: {TILE}, %w: {W}, %z: {T}) -> ({TILE}) {{
  %s = trowexpandmul %v, %w : ({TILE}, {W}) -> {TILE}
  tstore %s, %z : {TILE}, {T}
  %u = tload %z : {T} -> {TILE}
  return %u : {TILE}
}}
"""

#: GM write-after-read across pipes: the TLOAD of %z waits behind another TLOAD in its pipe, the TSTORE
#: into %z (another pipe, a tile ready at once) must still wait for it.
GM_WAR = f"""
func.func @gm_war(%x: {T}, %z: {T}, %v: {TILE}) -> ({TILE}) {{
  %t = tload %x : {T} -> {TILE}
  %u = tload %z : {T} -> {TILE}
  tstore %v, %z : {TILE}, {T}
  return %u : {TILE}
}}
"""


def _inputs(program):
    rng = np.random.default_rng(7)
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    return {"gm_raw": {"v": f(8, 16), "w": f(8, 1), "z": f(8, 16)},
            "gm_war": {"x": f(8, 16), "z": f(8, 16), "v": f(8, 16)}}[program]


def _run(text, name, spec):
    image = parse(text, f"{name}.pto").assemble("small").bind(_inputs(name))
    reports, result = run_images([image], preset("small"), spec, "icarus", label=f"conc-{name}",
                                 back_to_back=True)
    return reports[0] if reports else None, result


@pytest.mark.cocotb
@pytest.mark.parametrize("name,text", [("gm_raw", GM_RAW), ("gm_war", GM_WAR)])
def test_gm_hazard_programs(name, text):
    """The unit computes both programs right (and they ran back to back)."""
    rep, result = _run(text, name, "small_concurrent")
    assert rep is not None and rep.ok, (rep and rep.problems, result.summary())
    assert rep.schedule and len(rep.schedule) == len(rep.rows)


@pytest.mark.slow
@pytest.mark.cocotb
@pytest.mark.parametrize("name,text,rule", [("gm_raw", GM_RAW, "gm_raw"), ("gm_war", GM_WAR, "gm_war")])
def test_gm_hazard_rule_is_needed(name, text, rule, tmp_path):
    """Mutation check (``-m slow``: a build of its own each): without the rule the program goes wrong, and
    ``python -m sim run --back-to-back`` says so where ``python -m sim run`` (one command at a time, the UB
    compared after each: nothing overlaps) cannot."""
    spec = f"small_concurrent,scoreboard_disable={rule}"
    rep, result = _run(text, name, spec)
    assert rep is not None and not rep.ok, f"the unit without {rule} still computed {name} right"
    assert any("UbMismatch" in p for p in rep.problems), rep.problems      # wrong bytes, not a broken run
    code, out = _sim_run(text, name, tmp_path, "--config", spec)
    assert code == 0, out
    code, out = _sim_run(text, name, tmp_path, "--config", spec, "--back-to-back")
    assert code == 1 and "UbMismatch" in out, out


def _sim_run(text, name, tmp_path, *args):
    """``python -m sim run`` (``sim.programs.run.main``) on Icarus with ``text`` written to a .pto and its
    inputs to an .npz: (exit code, what it printed)."""
    import contextlib
    import io
    from sim.programs.run import main
    pto, npz = tmp_path / f"{name}.pto", tmp_path / f"{name}.npz"
    pto.write_text(text)
    np.savez(npz, **_inputs(name))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main([str(pto), "--data", str(npz), "--sim", "icarus", *args])
    return code, out.getvalue()


@pytest.mark.cocotb
def test_sim_run_back_to_back(tmp_path):
    """``python -m sim run --back-to-back``: the commands streamed, the pipes overlapping, compared at the end
    (UB and outputs), with the pipes' counters and the timeline of that run; refused without a simulator."""
    png = tmp_path / "t.png"
    code, out = _sim_run(GM_RAW, "gm_raw", tmp_path, "--config", "small_concurrent", "--back-to-back",
                         "--timeline", str(png))
    assert code == 0, out
    assert "compared at the end" in out and "stalled-on-hazard cycles per pipe" in out, out
    assert png.stat().st_size > 0
    code, out = _sim_run(GM_RAW, "gm_raw", tmp_path, "--sim", "none", "--back-to-back")
    assert code == 2 and "--back-to-back streams the commands into the RTL" in out, out


@pytest.mark.cocotb
def test_alone_takes_serial_cycles_and_the_done_register():
    """One instruction at a time (one per pipe: MGATHER, TROWEXPANDMUL, TGEMV, TSTORE), each takes on
    ``small_concurrent`` the cycles it takes on ``small`` (the speculative start) and the engine boundary's
    register (``rtl.concurrent.ENGINE_OUTPUT_REGISTER_CYCLES``: its ``done`` reaches the front end a cycle
    late), no more."""
    from rtl.concurrent import ENGINE_OUTPUT_REGISTER_CYCLES
    from sim.examples import EXAMPLES, example_module
    from sim.programs.run import run_program
    x = example_module("gather_scale_gemv").inputs()
    reps = {cfg: run_program(EXAMPLES / "gather_scale_gemv.pto", x, sim="icarus", config=cfg,
                             label=f"alone-{cfg.replace('_', '-')}") for cfg in ("small", "small_concurrent")}
    for rep in reps.values():
        assert rep.ok, rep.problems
    serial = [(r.op, r.cycles) for r in reps["small"].rows]
    assert len(serial) == 4 and all(isinstance(c, int) for _, c in serial), serial
    assert [(r.op, r.cycles) for r in reps["small_concurrent"].rows] == [
        (op, c + ENGINE_OUTPUT_REGISTER_CYCLES) for op, c in serial]


#: Three instructions in three pipes that share no byte: none may wait on another.
INDEPENDENT = f"""
func.func @independent(%x: {T}, %v: {TILE}, %w: {W}, %u: {TILE}) -> ({TILE}, {TILE}, {T}) {{
  %t = tload %x : {T} -> {TILE}
  %s = trowexpandmul %v, %w : ({TILE}, {W}) -> {TILE}
  %y = tstore %u : {TILE} -> {T}
  return %t, %s, %y : {TILE}, {TILE}, {T}
}}
"""


@pytest.mark.cocotb
def test_no_conflict_no_stall():
    """The stalled-on-hazard counters (``perf__stalled__*``): zero for instructions that conflict with nothing
    (and they ran at once), counting for a program whose instructions wait on each other (GM_RAW)."""
    from sim.programs.run import run_program
    rng = np.random.default_rng(3)
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    rep = run_program(parse(INDEPENDENT, "independent.pto"), {"x": f(8, 16), "v": f(8, 16), "w": f(8, 1),
                                                              "u": f(8, 16)},
                      sim="icarus", config="small_concurrent", label="conc-independent")
    assert rep.ok, rep.problems
    assert rep.stalled is not None and sum(rep.stalled.values()) == 0, rep.stalled
    starts_ends = [(a, b) for _, a, b in rep.schedule]
    assert max(a for a, _ in starts_ends) < min(b for _, b in starts_ends)      # all three in flight at once
    rep = run_program(parse(GM_RAW, "gm_raw.pto"), _inputs("gm_raw"), sim="icarus", config="small_concurrent",
                      label="conc-gm-raw")
    assert rep.ok and sum(rep.stalled.values()) > 0, (rep.problems, rep.stalled)


#: TSTOREs back to back in UB -> GM's engine (``UbToGmEngine.OVERLAP``): the second starts while the first waits
#: for its B response; the third writes the first's region again (GM WAW in one pipe: it waits for the
#: first to retire), and the TLOAD reads the region (GM RAW across pipes) after all of them.
TSTORES = f"""
func.func @tstores(%a: {TILE}, %b: {TILE}, %c: {TILE}, %z1: {T}, %z2: {T}) -> ({TILE}) {{
  tstore %a, %z1 : {TILE}, {T}
  tstore %b, %z2 : {TILE}, {T}
  tstore %c, %z1 : {TILE}, {T}
  %u = tload %z1 : {T} -> {TILE}
  return %u : {TILE}
}}
"""


@pytest.mark.cocotb
def test_tstores_back_to_back():
    """The unit's UB -> GM pipe takes a TSTORE while the one before it waits for its B responses
    (``perf__early__``), still orders a later TSTORE and a TLOAD of the same GM region after it, and
    tstore_stream's 16 independent TSTOREs overlap all but the first."""
    from sim.programs.run import run_program
    from rtl.isa import Pipe
    rng = np.random.default_rng(5)
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    x = {"a": f(8, 16), "b": f(8, 16), "c": f(8, 16), "z1": f(8, 16), "z2": f(8, 16)}
    rep = run_program(parse(TSTORES, "tstores.pto"), x, sim="icarus", config="small_concurrent",
                      label="conc-tstores")
    assert rep.ok, rep.problems
    assert rep.outputs["u"].tobytes() == x["c"].tobytes()
    assert rep.early[Pipe.UB_TO_GM.value] >= 1, rep.early
    _stream_overlaps("tstore_stream", Pipe.UB_TO_GM)


@pytest.mark.cocotb
def test_tloads_back_to_back():
    """The unit's GM -> UB pipe takes each of tload_stream's 16 independent TLOADs while the one before it is
    still in the engine (``perf__early__``: all but the first), and the stream takes fewer cycles than the
    sixteen one at a time."""
    from rtl.isa import Pipe
    _stream_overlaps("tload_stream", Pipe.GM_TO_UB)


@pytest.mark.cocotb
def test_mgathers_back_to_back():
    """The unit's GM -> UB pipe takes each of mgather_stream's 8 independent MGATHER_ROWs once the one before it
    has queued its last line (``perf__early__``: all but the first), and the stream takes fewer cycles than the
    eight one at a time."""
    from rtl.isa import Pipe
    _stream_overlaps("mgather_stream", Pipe.GM_TO_UB, count=8)


@pytest.mark.cocotb
def test_gemvs_back_to_back():
    """The unit's matrix pipe takes each of gemv_stream's 8 independent TGEMVs once the one before it has fired
    its last product (``perf__early__``: all but the first), and the stream takes fewer cycles than the eight
    one at a time."""
    from rtl.isa import Pipe
    _stream_overlaps("gemv_stream", Pipe.MATRIX, count=8)


def _stream_overlaps(name, pipe, count=16):
    """Example ``name`` (``count`` independent instructions of ``pipe``) on ``small_concurrent`` (Icarus): results
    as the golden's, all but the first started early, fewer cycles than one at a time; the first ``CHECK_DEPTH``
    commands accepted in consecutive cycles (the check stage takes a command per cycle while it has room)."""
    from rtl.frontend.check_stage import CHECK_DEPTH
    from sim.examples import EXAMPLES, example_module
    from sim.programs.run import run_program
    rep = run_program(EXAMPLES / f"{name}.pto", example_module(name).inputs(), sim="icarus",
                      config="small_concurrent", label=f"conc-{name.replace('_', '-')}")
    assert rep.ok, rep.problems
    assert rep.early[pipe.value] == count - 1, rep.early
    assert rep.total_cycles < rep.sum_cycles, (rep.total_cycles, rep.sum_cycles)
    accepted = rep.accepted
    assert accepted[:CHECK_DEPTH] == list(range(accepted[0], accepted[0] + CHECK_DEPTH)), accepted


def test_concurrent_configuration_errors():
    """What ``Config.concurrent`` needs is said by name: the read ports and the write queues; a scoreboard
    rule that does not exist, ``scoreboard_disable`` or ``ub_write_banks`` on a serial unit, and fewer than
    two scoreboard entries or queue entries, are refused (the unit's own checks before it builds anything)."""
    from rtl.top import VectorUnit
    from amaranth.back import rtlil
    with pytest.raises(ValueError, match="ub_read_ports >= 4"):
        preset("small", concurrent=True)
    with pytest.raises(ValueError, match="ub_write_queues=True"):
        preset("small", concurrent=True, ub_read_ports=4)
    with pytest.raises(ValueError, match="only with concurrent=True"):
        preset("small", scoreboard_disable=("ub_raw",))
    # (refused before anything is built: no module or engine is left behind to warn as unused; earlier
    # tests' leftovers are collected first, so that only this one's could be caught)
    import gc
    import warnings
    from amaranth.hdl import UnusedElaboratable
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnusedElaboratable)
        with pytest.raises(ValueError, match="no rules"):
            rtlil.convert(VectorUnit(preset("small_concurrent", scoreboard_disable=("ub_rawr",))))
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, UnusedElaboratable)], [str(w.message) for w in caught]
    with pytest.raises(ValueError, match="ub_write_banks=True needs concurrent=True"):
        preset("small", ub_write_banks=True)
    with pytest.raises(ValueError, match="pipe_entries=1 and pipe_queue_depth=4 must be >= 2"):
        preset("small_concurrent", pipe_entries=1)
    with pytest.raises(ValueError, match="pipe_queue_depth=1 must be >= 2"):
        preset("small_concurrent", pipe_queue_depth=1)


@pytest.mark.cocotb
def test_command_in_the_first_cycle_after_reset():
    """A command offered in the first cycle out of reset is taken once and answered, on the concurrent unit
    (``cocotb_tests/test_sync.py``; the serial unit runs it in the regression's ``test_sync`` group,
    ``tests/test_cocotb_sync.py``)."""
    from sim.runner import run
    result = run("test_sync", "command_in_the_first_cycle_after_reset", "small_concurrent,engines=transfer",
                 "icarus", label="first-cycle-after-reset")
    assert result.passed, result.results_xml.parent / "sim.log"
