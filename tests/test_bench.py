"""The benchmark runs end to end (its results are still checked bit-exactly against golden inside).
No assertion on cycle counts: performance is reported by ``make bench``, not tested.

The normal set runs the TLOAD/TSTORE bench (the table, the CSV and the bound check end to end); every bench,
with its own builds, is ``slow`` (every engine's results are bit-exact in its cocotb regression runs)."""

import pytest

from sim import bench

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("only", ["transfer", pytest.param(None, id="all", marks=pytest.mark.slow)])
def test_bench_runs(only, tmp_path, capsys):
    assert bench.main(["--config", "small"] + (["--only", only] if only else [])) == 0
    out = capsys.readouterr().out
    assert "TLOAD" in out and "TSTORE" in out
    # A figure above 100% of its bound means the bound is wrong (the hardware cannot beat its bound).
    lines = [l for l in out.splitlines() if l.count(" | ") > 4]
    head = [c.strip() for c in lines[0].split(" | ")]
    col = head.index("of bound")
    for line in lines[2:]:
        cells = [c.strip() for c in line.split(" | ")]
        assert float(cells[col].rstrip("%")) <= 100.0, f"above its bound: {line}"


def test_program_row():
    """The programs table from a run's report: the bound is the largest pipe's sum of its instructions' own
    cycles (TSYNC in no pipe, an instruction without cycles left out), of bound its share of the run, the
    speed-up serial over run."""
    from types import SimpleNamespace
    from rtl.isa import Opcode
    ops = [Opcode.TLOAD, Opcode.TPARTADD, Opcode.TSYNC, Opcode.TPARTADD, Opcode.TSTORE, Opcode.TLOAD]
    cycles = [40, 70, 4, 50, 30, "-"]
    rep = SimpleNamespace(sum_cycles=194, total_cycles=160, rows=[SimpleNamespace(cycles=c) for c in cycles],
                          schedule=[(op.value, 0, 1) for op in ops],
                          busy={"GM -> UB": 100, "UB -> GM": 80, "vector": 130, "matrix": 0})
    row = bench.program_row("p", rep)
    assert (row["serial"], row["run"], row["bound"], row["bound pipe"]) == (194, 160, 120, "vector")
    assert row["of bound"] == "75.0%" and row["speed-up"] == "1.21"
    assert row["pipes alone"].startswith("GM -> UB 40, UB -> GM 30, vector 120")
    assert "lanes bound" not in row
    row = bench.program_row("p", rep, lanes_bound=100)
    assert row["lanes bound"] == 100 and row["of lanes bound"] == "62.5%"


def test_pipe_bounds_with_overlap():
    """On a unit whose elementwise engine overlaps consecutive instructions (``default_concurrent``) the vector
    pipe's bound is its first instruction's cycles plus the engine's bound (the lanes) for each later one, so a
    run that hides the fills stays within it; on the serial unit it is the sum of the cycles alone."""
    from types import SimpleNamespace
    from rtl.config import preset
    from rtl.engines.elementwise.engine import ElementwiseEngine
    from rtl.isa import DType, Layout, Opcode, Pipe
    t = lambda base: {"base": base, "rows": 16, "cols": 16, "valid_rows": 16, "valid_cols": 16,
                      "dtype": DType.FP16, "layout": Layout.ROW_MAJOR}
    cmds = [{"opcode": Opcode.TPARTADD, "dst": t(k * 1536), "src0": t(k * 1536 + 512), "src1": t(k * 1536 + 1024)}
            for k in range(3)] + [{"opcode": Opcode.TSYNC}]
    rows = [SimpleNamespace(cycles=c) for c in (153, 153, 153, 2)]
    conc = preset("default_concurrent")
    lanes = ElementwiseEngine.bound(conc, cmds[0])
    assert lanes == 128
    assert bench.pipe_bounds(rows, cmds, conc)[Pipe.VECTOR] == (459, 153 + 2 * lanes)
    assert bench.pipe_bounds(rows, cmds, preset("default"))[Pipe.VECTOR] == (459, 459)
    assert bench.pipe_bounds(rows, cmds, preset("default_concurrent", pipe_overlap=False))[Pipe.VECTOR] == (459, 459)
    # TSTOREs overlap in the concurrent unit's UB -> GM half (the transfer engine's bound: its bus beats)
    from rtl.engines.transfer.engine import TransferEngine
    gm = lambda k: {"base": 4096 * k, "rows": 16, "cols": 16, "row_stride": 32, "dtype": DType.FP16}
    stores = [{"opcode": Opcode.TSTORE, "src0": t(k * 512), "gm": gm(k)}
              for k in range(3)]
    srows = [SimpleNamespace(cycles=c) for c in (40, 41, 39)]
    beats = TransferEngine.bound(conc, stores[0])
    assert beats == 16
    assert bench.pipe_bounds(srows, stores, conc)[Pipe.UB_TO_GM] == (120, 40 + 2 * beats)
    assert bench.pipe_bounds(srows, stores, preset("default"))[Pipe.UB_TO_GM] == (120, 120)
    # TLOADs and MGATHERs likewise in the GM -> UB half (MGATHER_ROW's bound: a UB word per row of 32 bytes)
    loads = [{"opcode": Opcode.TLOAD, "dst": t(k * 512), "gm": gm(k)} for k in range(3)]
    gather = {"opcode": Opcode.MGATHER_ROW, "dst": t(0), "src0": t(512), "gm": gm(0), "oob": 0}
    words = TransferEngine.bound(conc, gather)
    assert words == 16
    lrows = [SimpleNamespace(cycles=c) for c in (30, 31, 29, 50, 33)]
    assert bench.pipe_bounds(lrows, loads + [gather, loads[0]], conc)[Pipe.GM_TO_UB] == (173, 30 + 3 * beats + words)
    assert bench.pipe_bounds(lrows, loads + [gather, loads[0]], preset("default"))[Pipe.GM_TO_UB] == (173, 173)


def test_chain_bound():
    """The dependency-aware bound: TLOAD -> TPARTADD -> TSTORE, each reading what the one before wrote, cost
    their own cycles one after another, however idle the pipes are; an independent TLOAD beside them adds
    nothing (its pipe takes it early, at its bound); WAR counts as RAW does; on the serial unit the bound is
    the sum; an illegal instruction counts nothing."""
    from types import SimpleNamespace
    from rtl.config import preset
    from rtl.engines.transfer.engine import TransferEngine
    from rtl.isa import DType, Layout, Opcode
    t = lambda base: {"base": base, "rows": 16, "cols": 16, "valid_rows": 16, "valid_cols": 16,
                      "dtype": DType.FP16, "layout": Layout.ROW_MAJOR}
    gm = lambda k: {"base": 4096 * k, "rows": 16, "cols": 16, "row_stride": 32, "dtype": DType.FP16}
    conc = preset("default_concurrent")
    load = {"opcode": Opcode.TLOAD, "dst": t(0), "gm": gm(0)}
    other = {"opcode": Opcode.TLOAD, "dst": t(8192), "gm": gm(2)}
    add = {"opcode": Opcode.TPARTADD, "dst": t(1024), "src0": t(0), "src1": t(512)}
    store = {"opcode": Opcode.TSTORE, "src0": t(1024), "gm": gm(1)}
    rows = [SimpleNamespace(cycles=c) for c in (30, 31, 153, 40)]
    assert bench.chain_bound(rows, [load, other, add, store], conc) == 30 + 153 + 40
    assert bench.chain_bound(rows, [load, other, add, store], preset("default")) == 30 + 31 + 153 + 40
    # the independent TLOAD behind the chain: its pipe's bound, the first TLOAD's cycles and its beats
    late = [load, add, store, other]
    rows2 = [SimpleNamespace(cycles=c) for c in (30, 153, 40, 31)]
    assert bench.chain_bound(rows2, late, conc) == 30 + 153 + 40
    assert bench.chain_bound(rows2[:1] + rows2[3:], [load, other], conc) == 30 + TransferEngine.bound(conc, other)
    # WAR: a TLOAD into the TPARTADD's source waits for it
    war = {"opcode": Opcode.TLOAD, "dst": t(512), "gm": gm(3)}
    rows3 = [SimpleNamespace(cycles=c) for c in (153, 30)]
    assert bench.chain_bound(rows3, [add, war], conc) == 153 + 30
    bad = dict(add, dst=dict(t(1024), base=8))              # misaligned: the checker answers it
    assert bench.chain_bound(rows3, [bad, war], conc) == 30


@pytest.mark.slow            # the examples run on the RTL in make sim; test_pto_rtl checks Report.busy
def test_bench_programs(capsys):
    """The programs table on the RTL (the examples of bench.PROGRAMS, results checked against the golden)."""
    assert bench.main(["--config", "small", "--only", "programs"]) == 0
    out = capsys.readouterr().out
    assert "double_buffer" in out and "gather_scale_gemv" in out
    lines = [l for l in out.splitlines() if l.startswith(bench.PROGRAMS) and " | " in l]
    assert "tpartadd_stream: left out (does not fit the UB of small)" in out
    for line in lines:
        cells = [c.strip() for c in line.split(" | ")]
        serial, run_cycles, bound = int(cells[2]), int(cells[3]), int(cells[4])
        assert bound <= serial <= run_cycles, line      # one instruction at a time: no overlap yet
