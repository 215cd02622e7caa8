"""Verilog export: every preset exports, ports are named for cocotbext-axi, Verilator lint is clean.

The presets' Verilog is the simulators' cached export (``sim.runner``: redone only when ``rtl/`` or
``flow/export.py`` changed, shared by the xdist workers, the cocotb builds and the lint), not a fresh one per
test. ``slow``: ``fullrate``, the largest preset (its export alone takes ~45 s), and ``a2a3``, the
``default`` hardware with the A2/A3 type profile (the same ports; its checker is compared with golden in
tests/rtl/test_rtl_checker.py)."""

import re

import pytest

from rtl.config import PRESETS, preset
from rtl.isa import COMMAND_BITS, RESPONSE_BITS
from flow.lint import lint
from flow.export import cached_export

SLOW_PRESETS = {"fullrate", "a2a3", "default_concurrent", "ecp5_concurrent"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_PRESETS else n
                                  for n in sorted(PRESETS)])
def test_export_ports(name):
    cfg = preset(name)
    text = cached_export(cfg, name).read_text()
    widths = {n: int(w) + 1 if w else 1 for w, n in re.findall(r"^\s*(?:input|output)\s+(?:\[(\d+):0\]\s+)?(\w+);", text, re.M)}
    assert widths["s_axis_cmd__tdata"] == COMMAND_BITS
    assert widths["m_axis_rsp__tdata"] == RESPONSE_BITS
    assert widths["m_axi__rdata"] == cfg.axi_data_bits
    assert widths["m_axi__araddr"] == cfg.gm_addr_bits
    for sig in ("arid", "rid", "awid", "bid", "wstrb", "wlast", "rlast", "arlen", "awlen"):
        assert f"m_axi__{sig}" in widths
    assert "always @*" not in text and "always_comb" not in text   # see flow/export.py (Icarus 11)


@pytest.mark.parametrize("name", ["small", "default", "small_concurrent"])
def test_verilator_lint(name):
    """Verilator's lint is clean on the serial presets and on the unit whose pipes run at once (its front end,
    scoreboard and overlapping engines are Verilog the serial unit does not have)."""
    code, out = lint(name)
    assert code == 0, out


def test_export_any_parameter(tmp_path):
    """``--set`` overrides any Config field (checked by Config); the file's header lists every field, the
    tool versions and the source revision. (``ub_read_ports=1``: no elementwise or GEMV engine, a 5x faster
    export.)"""
    from dataclasses import fields
    from flow.export import main
    out = tmp_path / "unit.v"
    main(["--config", "small", "--set", "ub_bytes=8192", "--set", "max_outstanding_reads=8", "--set", "ub_read_ports=1",
          "-o", str(out)])
    head = out.read_text().split("\nmodule ", 1)[0]
    assert "//   ub_bytes = 8192" in head and "//   max_outstanding_reads = 8" in head
    for f in fields(preset("small")):
        assert f"//   {f.name} = " in head, f.name
    assert "source revision: " in head and "amaranth " in head


def test_export_ecp5_target(tmp_path):
    """``--target ecp5``: the ECP5 form make synth measures (rtl.fpga): every product a MULT18X18D with
    its output register (and its input registers where the design has them), one DCCA per engine reset;
    the generic export has neither. (``ub_read_ports=1``: the transfer engine's and the checker's
    products, a quick export.)"""
    from flow.export import main
    out, plain = tmp_path / "ecp5.v", tmp_path / "generic.v"
    sets = ["--config", "small", "--set", "ub_read_ports=1"]
    main(sets + ["--target", "ecp5", "-o", str(out)])
    main(sets + ["-o", str(plain)])
    text = out.read_text()
    assert "// target: ecp5" in text
    blocks = re.findall(r"MULT18X18D #\((.*?)\)\s*\\?[\w$.]+\s*\(", text, re.S)
    assert blocks, "no MULT18X18D in the ECP5 export"
    for params in blocks:
        assert re.search(r'\.REG_OUTPUT_CLK\("CLK0"\)', params), params
    assert len(re.findall(r"\bDCCA\b", text)) == 2        # the transfer and local_gather engines' resets
    generic = plain.read_text()
    assert "MULT18X18D" not in generic and "DCCA" not in generic and "// target: generic" in generic


@pytest.mark.parametrize("bad, message", [
    ("foo=1", "field one of"), ("ub_bytes", "field one of"), ("ub_bytes=lots", "not a valid value for ub_bytes"),
    ("ub_bytes=1000", "must be a power of two"), ("profile=B7", "not a valid value for profile"),
    ("ew_lane_bytes=32", "ew_lane_bytes=32 must be a power of two in [4, ub_word_bytes=16]"),
    ("ew_lane_bytes=2", "ew_lane_bytes=2 must be a power of two"),
])
def test_export_bad_parameter(bad, message, capsys):
    from flow.export import main
    with pytest.raises(SystemExit) as e:
        main(["--config", "small", "--set", bad, "-o", "/dev/null"])
    assert e.value.code == 2
    assert message in capsys.readouterr().err
