"""The cocotb harness's pieces that need no simulator: failure classes and their messages, parameters,
configuration and timeout resolution, the runner's test naming and filtering, results parsing and the
export stamp."""

import re

import numpy as np
import pytest

from sim.failures import (GmMismatch, HangError, MemoryMismatch, StatusMismatch, UbMismatch,
                                 format_command, status_name)
from cocotb_tests.harness import Params, resolve_config, resolve_timeout
from rtl.config import preset
from rtl.isa import DType, gm_region, Layout, OobMode, Opcode, Status, tile
from sim import runner
from sim.driver import DEFAULT_TIMEOUT_CYCLES

TLOAD = {"opcode": Opcode.TLOAD, "tag": 7, "dst": tile(0x100, 4, 8, DType.INT16, valid=(3, 5)),
         "gm": gm_region(0x2_0000, 3, 5, DType.INT16, 64)}


# ---- failure classes ------------------------------------------------------------------------------

def test_hang_error():
    e = HangError(TLOAD, 200_000)
    assert isinstance(e, AssertionError)
    assert e.command is TLOAD and e.cycles == 200_000
    assert str(e) == ("no response within 200000 cycles: the unit hangs on TLOAD tag=7 "
                      "dst={base=0x100 4x8 valid 3x5 INT16} gm={base=0x20000 3x5 stride 64 INT16}")


def test_status_mismatch():
    e = StatusMismatch(TLOAD, Status.OK, Status.GM_MISALIGNED)
    assert isinstance(e, AssertionError)
    assert (e.command, e.expected, e.actual) == (TLOAD, Status.OK, Status.GM_MISALIGNED)
    assert str(e).startswith("status GM_MISALIGNED from the RTL, golden says OK for TLOAD tag=7 ")
    e = StatusMismatch(TLOAD, Status.AXI_READ_ERROR, 0x55, reference=None)
    assert e.actual == 0x55
    assert str(e).startswith("status 0x55 from the RTL, expected AXI_READ_ERROR for TLOAD")
    assert status_name(0x0b) == "GM_MISALIGNED" and status_name(Status.OK) == "OK"


@pytest.mark.parametrize("cls, space", [(UbMismatch, "UB"), (GmMismatch, "GM")])
def test_memory_mismatch(cls, space):
    e = cls(0x1234, 0xab, 0x01, 3)
    assert isinstance(e, AssertionError) and isinstance(e, MemoryMismatch)
    assert (e.address, e.expected, e.actual, e.count) == (0x1234, 0xab, 0x01, 3)
    assert str(e) == f"{space} differs from golden at 3 bytes, first at 0x1234: rtl 0x01 golden 0xab"
    want = bytes(range(64))
    got = bytearray(want)
    got[10], got[40] = 0xff, 0xee
    e = cls.compare(0x8000, want, bytes(got))
    assert type(e) is cls and (e.address, e.expected, e.actual, e.count) == (0x800a, 10, 0xff, 2)
    assert cls.compare(0x8000, want, want) is None
    care = np.ones(64, bool)
    care[10] = False
    e = cls.compare(0, np.frombuffer(want, np.uint8), bytes(got), care=care, what="defined", context="ctx")
    assert (e.address, e.count) == (40, 1)
    assert str(e) == f"ctx: {space} differs from golden at 1 defined bytes, first at 0x28: rtl 0xee golden 0x28"
    with pytest.raises(ValueError):
        cls.compare(0, b"ab", b"a")


def test_format_command():
    cmd = {"opcode": Opcode.MGATHER_ELEM, "oob": OobMode.ZERO, "src0": tile(0x100, 4, 8, DType.UINT32),
           "dst": tile(0x800, 4, 8, 13, layout=Layout.COL_MAJOR), "gm": gm_region(0x6_0000, 8, 32, DType.INT16)}
    text = format_command(cmd)
    assert text.startswith("MGATHER_ELEM oob=ZERO dst={base=0x800 4x8 valid 4x8 0xd COL_MAJOR} ")
    assert "src0={base=0x100 4x8 valid 4x8 UINT32}" in text and "gm={base=0x60000 8x32 stride 64 INT16}" in text
    assert format_command({"opcode": 0x7F}) == "opcode 0x7f"


# ---- parameters, configuration, timeout -----------------------------------------------------------

def test_params():
    p = Params({"TILEVEC_DTYPE": "FP16", "TILEVEC_ROUNDS": "3", "TILEVEC_BACKPRESSURE": "0",
                "TILEVEC_CONFIG": "small", "TILEVEC_RECORDS": "/x", "TILEVEC_TEST": "t",
                "TILEVEC_TIMEOUT_CYCLES": "9", "OTHER": "1"})
    assert dict(p) == {"dtype": "FP16", "rounds": "3", "backpressure": "0"}
    assert p["DTYPE"] == p["dtype"] == "FP16"
    assert p.get("rounds", 4) == 3 and p.get("missing", 4) == 4 and p.get("dtype", "FP32") == "FP16"
    assert p.get("backpressure", True) is False and p.get("rounds", cast=float) == 3.0
    with pytest.raises(ValueError):
        Params({"TILEVEC_FLAG": "maybe"}).get("flag", cast=bool)


def test_resolve_config(monkeypatch):
    monkeypatch.delenv("TILEVEC_CONFIG", raising=False)
    assert resolve_config() == preset("small")
    monkeypatch.setenv("TILEVEC_CONFIG", "default")
    assert resolve_config() == preset("default")
    assert resolve_config("a2a3") == preset("a2a3")
    cfg = preset("small", gm_addr_bits=40)
    assert resolve_config(cfg) is cfg
    with pytest.raises(ValueError):
        resolve_config("nope")
    with pytest.raises(TypeError):
        resolve_config(3)


def test_resolve_timeout(monkeypatch):
    monkeypatch.delenv("TILEVEC_TIMEOUT_CYCLES", raising=False)
    assert resolve_timeout() == DEFAULT_TIMEOUT_CYCLES == 200_000
    monkeypatch.setenv("TILEVEC_TIMEOUT_CYCLES", "5000")
    assert resolve_timeout() == 5000 and resolve_timeout(77) == 77
    with pytest.raises(ValueError):
        resolve_timeout(0)


# ---- runner: test names, filters, results -------------------------------------------------------

#: ``small`` has an engine for every opcode, so UNSUPPORTED is not among its error cases (it runs on
#: ``small,ub_read_ports=1``, tests/test_cocotb_errors.py).
ERRORS = ["UNKNOWN_OPCODE", "DTYPE_INVALID", "DTYPE_MISMATCH", "UB_MISALIGNED",
          "UB_OUT_OF_RANGE", "VALID_EXCEEDS_STATIC", "SHAPE_MISMATCH", "GM_MISALIGNED", "GM_OUT_OF_RANGE"]


def test_parametrized_testcases():
    """cocotb.parametrize cases are listed one by one, and the regression runs each with the label the
    hand-made tests had (one ``make sim`` row per status)."""
    from sim.regress import REGRESSION
    names = runner.list_testcases("test_errors")
    assert names[:9] == [f"error/status={s}" for s in ERRORS]
    assert names[9:] == ["error_axi_read", "error_axi_read_mgather", "error_axi_write", "status_sweep"]
    labels = [e.name for e in REGRESSION if e.module == "test_errors"]
    assert labels[:9] == [f"error_{s.lower()}" for s in ERRORS]
    lg = [e.name for e in REGRESSION if e.module == "test_local_gather" and e.name.startswith("lg_error")]
    assert len(lg) == 10 and "lg_error_index_dtype" in lg and "lg_error_dim_out_of_range" in lg
    all_labels = [e.name for e in REGRESSION]
    assert len(all_labels) == len(set(all_labels))


def test_cocotb_filter_is_exact():
    """Every regression testcase's filter selects exactly that test of its module, whatever other names
    end or begin with it (cocotb applies the filter with re.search to ``<module>.<name>``)."""
    from sim.regress import REGRESSION
    for module in {e.module for e in REGRESSION}:
        full = [f"cocotb_tests.{module}.{name}" for name in runner.list_testcases(module)]
        for name in runner.list_testcases(module):
            pattern = re.compile(runner.cocotb_filter(module, name))
            assert [f for f in full if pattern.search(f)] == [f"cocotb_tests.{module}.{name}"], name
    # what the runner's own testcase= filter would have done: a name that ends another one
    loose = re.compile(r"\.(.*" + re.escape("error_axi_read") + ")$")
    assert loose.search("cocotb_tests.test_errors.x_error_axi_read")
    assert not re.search(runner.cocotb_filter("test_errors", "error_axi_read"), "cocotb_tests.test_errors.x_error_axi_read")


def test_testcase_label():
    assert runner.testcase_label("error/status=UB_OUT_OF_RANGE") == "error_ub_out_of_range"
    assert runner.testcase_label("t/a=1/b=FP16") == "t_1_fp16"
    assert runner.testcase_label("plain_name") == "plain_name"


RESULTS = """<?xml version='1.0' encoding='utf-8'?>
<testsuites name="cocotb tests"><testsuite name="cocotb_tests.m" errors="1" failures="1" skipped="1" tests="4">
<testcase classname="cocotb_tests.m" name="ok" time="1.5"><properties /></testcase>
<testcase classname="cocotb_tests.m" name="bad/status=OK" time="0.5"><failure message="UB differs from golden at 1 bytes" type="UbMismatch">Traceback ...</failure></testcase>
<testcase classname="cocotb_tests.m" name="broken" time="0.1"><error message="boom" type="RuntimeError">Traceback</error></testcase>
<testcase classname="cocotb_tests.m" name="later" time="0"><skipped message="not now" /></testcase>
</testsuite></testsuites>
"""


def test_run_result(tmp_path):
    xml = tmp_path / "results.xml"
    xml.write_text(RESULTS)
    records = tmp_path / "records.jsonl"
    records.write_text('{"label": "x", "cycles": 3}\n')
    r = runner.RunResult("m", xml, records, tmp_path / "w.fst")
    assert (r.tests, r.failed, r.passed) == (4, 2, False)
    assert [(c.name, c.result) for c in r.cases] == [("ok", "pass"), ("bad/status=OK", "fail"),
                                                     ("broken", "fail"), ("later", "skip")]
    assert r.cases[1].message == "UB differs from golden at 1 bytes" and r.cases[1].type == "UbMismatch"
    assert r.cases[0].time == 1.5 and r.cases[3].message == "not now"
    assert [c.name for c in r.failures] == ["bad/status=OK", "broken"]
    assert r.records == [{"label": "x", "cycles": 3}] and r.waves_file == tmp_path / "w.fst"
    assert "FAIL bad/status=OK: UB differs" in r.summary()
    missing = runner.RunResult("m", tmp_path / "none.xml", tmp_path / "none.jsonl", None)
    assert (missing.tests, missing.failed, missing.passed, missing.cases) == (0, 1, False, [])
    assert "no results" in missing.summary()


# ---- export stamp -----------------------------------------------------------------------------------

def test_export_skipped_when_unchanged(tmp_path, monkeypatch):
    import flow.export
    calls = []

    def fake_export(config, path, name="vector_unit"):
        calls.append(config)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("// verilog\n")
        return path
    monkeypatch.setattr(flow.export, "export", fake_export)
    small = preset("small")
    path = flow.export.cached_export(small, "small", tmp_path / "verilog")
    assert path == tmp_path / "verilog" / "vector_unit_small.v" and len(calls) == 1
    assert flow.export.cached_export(small, "small", tmp_path / "verilog") == path and len(calls) == 1          # unchanged: no export
    path.unlink()
    flow.export.cached_export(small, "small", tmp_path / "verilog")
    assert len(calls) == 2                                                      # file missing
    stamp = path.with_name(path.name + ".stamp")
    stamp.write_text("stale\n")
    flow.export.cached_export(small, "small", tmp_path / "verilog")
    assert len(calls) == 3                                                      # sources changed
    assert flow.export.export_stamp(small) == flow.export.export_stamp(preset("small"))
    assert flow.export.export_stamp(small) != flow.export.export_stamp(preset("small", ub_debug_port=False))
    # the stamp is of the sources the process imported (rtl.SOURCE_DIGEST), not of what is on disk when it
    # exports: a process started before an edit of rtl/ must not label its old netlist with the new sources
    import rtl
    assert rtl.SOURCE_DIGEST == rtl.source_digest()
    assert flow.export.export_stamp(small) == flow.export.export_stamp(small, rtl.SOURCE_DIGEST)
    assert flow.export.export_stamp(small) != flow.export.export_stamp(small, rtl.source_digest() + "edited")
