"""Verilog export: every preset exports, ports are named for cocotbext-axi, Verilator lint is clean."""

import re

import pytest

from rtl.config import PRESETS, preset
from rtl.isa import COMMAND_BITS, RESPONSE_BITS
from rtl.top import VectorUnit
from sim.export import verilog
from sim.lint import lint


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_export_ports(name):
    cfg = preset(name)
    text = verilog(VectorUnit(cfg))
    widths = {n: int(w) + 1 if w else 1 for w, n in re.findall(r"^\s*(?:input|output)\s+(?:\[(\d+):0\]\s+)?(\w+);", text, re.M)}
    assert widths["s_axis_cmd__tdata"] == COMMAND_BITS
    assert widths["m_axis_rsp__tdata"] == RESPONSE_BITS
    assert widths["m_axi__rdata"] == cfg.axi_data_bits
    assert widths["m_axi__araddr"] == cfg.gm_addr_bits
    for sig in ("arid", "rid", "awid", "bid", "wstrb", "wlast", "rlast", "arlen", "awlen"):
        assert f"m_axi__{sig}" in widths
    assert "always @*" not in text and "always_comb" not in text   # see sim/export.py (Icarus 11)


@pytest.mark.parametrize("name", ["small", "default"])
def test_verilator_lint(name):
    code, out = lint(name)
    assert code == 0, out
