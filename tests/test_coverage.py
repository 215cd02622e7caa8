"""Functional coverage (issue #14) without a simulator: the bins come from the instruction table,
synthetic commands hit the bins they should, and merging two runs' files adds their hits."""

import itertools

import numpy as np
import pytest

pytest.importorskip("cocotb_coverage")

from cocotb_tests import coverage as cov
from golden.machine import Machine
from rtl.config import preset
from rtl.isa import DType, gm_region, INSTRUCTIONS, Layout, main_slot, OobMode, Opcode, Profile, Status, tile
from golden.numerics import DTYPE_NUMPY
from sim import coverage as report

_roots = itertools.count()


def new_model(profile=Profile.A5, supported=None):
    """A model under a root of its own (cocotb-coverage's database is one per process)."""
    return cov.CoverageModel(profile, root=f"test_{profile.value}_{next(_roots)}", supported=supported)


#: The opcodes of a unit built without the GEMV engine (``Config.engines``).
NO_GEMV = frozenset(op for op in Opcode if INSTRUCTIONS[op].family != "gemv")


@pytest.mark.parametrize("profile", list(Profile))
def test_opcode_dtype_bins_are_the_table(profile):
    bins = cov.goal_bins(profile)
    legal = set(bins["opcode_dtype.legal"])
    expected = set()
    for op, ins in INSTRUCTIONS.items():
        if not ins.slots:                               # TSYNC: one bin, no type
            expected.add(f"{op.name}/{cov.NO_TYPE}")
            continue
        types = ins.allowed(ins.slot(main_slot(op)), profile) if ins.type_rule == "gemv" else ins.types[profile]
        expected |= {f"{op.name}/{dt.name}" for dt in types}
    assert legal == expected and "TSYNC/-" in legal
    illegal = set(cov.illegal_bins(profile))
    assert not legal & illegal
    assert legal | illegal >= {f"{op.name}/{dt.name}" for op in Opcode if INSTRUCTIONS[op].slots for dt in DType}
    # a unit with every engine never answers UNSUPPORTED (nor the reserved INDEX_OUT_OF_RANGE)
    assert bins["status.code"] == [s.name for s in Status if s not in (Status.INDEX_OUT_OF_RANGE,
                                                                       Status.UNSUPPORTED)]


def test_goal_follows_the_units_engines():
    """A unit without an engine: its opcodes' bins are no goal, UNSUPPORTED is, and its model has a root
    of its own (so its runs never merge into the whole unit's goal)."""
    from rtl.config import preset
    from rtl.top import supported_opcodes
    whole, no_gemv = cov.goal_bins(Profile.A5), cov.goal_bins(Profile.A5, NO_GEMV)
    assert "gemv.variant_x_triple" in whole and not any(item.startswith("gemv.") for item in no_gemv)
    assert not any(b.startswith("TGEMV") for b in no_gemv["opcode_dtype.legal"])
    assert "UNSUPPORTED" in no_gemv["status.code"] and "UNSUPPORTED" not in whole["status.code"]
    only = supported_opcodes(preset("small", engines=("transfer",)))
    bins = cov.goal_bins(Profile.A5, only)
    assert {b.split("/")[0] for b in bins["opcode_dtype.legal"]} == {op.name for op in only}
    assert cov.CoverageModel(Profile.A5, supported=only).root == \
        "tilevec_a5_without_elementwise_gemv_local_gather"


def test_family_bins_from_the_table():
    a5, a2a3 = cov.goal_bins(Profile.A5), cov.goal_bins(Profile.A2A3)
    # MGATHER is A5 only: mode x oob x index type
    assert len(a5["mgather.mode_x_oob_x_index"]) == 2 * len(OobMode) * 2
    assert "mgather.mode" not in a2a3
    # GEMV bins exist although no engine executes it: variant x the profile's triples
    for bins, profile in ((a5, Profile.A5), (a2a3, Profile.A2A3)):
        triples = INSTRUCTIONS[Opcode.TGEMV].triples[profile]
        assert len(bins["gemv.variant_x_triple"]) == 3 * len(triples)
    assert len(a5["trowexpand.opcode_x_mode_x_expanded"]) == 5 * 2 * 2
    assert len(a5["tpart.opcode_x_pattern"]) == 4 * len(cov.TPART_PATTERNS)
    assert len(a5["tpart.layout"]) == 8 and a2a3["tpart.layout"] == ["ROW/ROW/ROW"]
    assert "FP8E4M3/src0/inf" not in a5["float_classes.gemv"] and "FP8E5M2/src0/inf" in a5["float_classes.gemv"]
    assert "BF16/src1/subnormal" in a5["float_classes.tpart"] and "BF16/src1/nan" not in a2a3["float_classes.tpart"]


def test_float_classes():
    vals = np.array([0.0, -0.0, 1.5, np.inf, np.nan, 2.0 ** -20], np.float32).astype(DTYPE_NUMPY[DType.FP16])
    assert cov.float_classes(vals, DType.FP16) == {"zero", "normal", "inf", "nan", "subnormal"}
    # 2**-20 is normal in fp32 / bf16, subnormal in fp16
    assert cov.float_classes(np.array([2.0 ** -20], np.float32), DType.FP32) == {"normal"}
    assert cov.float_classes(np.zeros((0, 3), np.float32), DType.FP32) == set()


def _ew(op, dtype, dst_valid, v0, v1, l0=Layout.ROW_MAJOR, l1=Layout.ROW_MAJOR, ldst=Layout.ROW_MAJOR):
    return {"opcode": op, "dst": tile(0x000, 4, 16, dtype, dst_valid, ldst),
            "src0": tile(0x200, 4, 16, dtype, v0, l0), "src1": tile(0x400, 4, 16, dtype, v1, l1)}


def test_synthetic_commands_hit_the_expected_bins():
    m = new_model(supported=NO_GEMV)        # GEMV answers UNSUPPORTED
    golden = Machine(preset("small"))
    # src0: 4 x 16 fp16 with a NaN, a subnormal and normals; src1 (mode 1, column-major 4 x 1): zeros
    a = np.full((4, 16), 1.0, np.float16)
    a[0, 0], a[1, 1] = np.nan, np.float16(2.0 ** -20)
    cmd = _ew(Opcode.TROWEXPANDADD, DType.FP16, (4, 16), (4, 16), (4, 1), l1=Layout.COL_MAJOR)
    golden.write_tile(cmd["src0"], a)
    m.sample(cmd, Status.OK, golden)
    m.sample({"opcode": Opcode.TLOAD, "dst": tile(0, 2, 8, DType.BF16), "gm": gm_region(0x1000, 2, 8, DType.BF16)},
             Status.OK)
    m.sample({"opcode": Opcode.TLOAD, "dst": tile(0, 2, 8, DType.INT8), "gm": gm_region(0x1000, 2, 9, DType.INT8)},
             Status.SHAPE_MISMATCH)                     # rejected: a status, not an executed INT8 TLOAD
    m.sample(_ew(Opcode.TPARTMAX, DType.INT16, (4, 16), (2, 16), (4, 16), ldst=Layout.COL_MAJOR), Status.OK)
    m.sample({"opcode": Opcode.MGATHER_ELEM, "oob": OobMode.WRAP, "dst": tile(0, 2, 8, DType.FP32),
              "src0": tile(0x100, 2, 8, DType.UINT32), "gm": gm_region(0x1000, 4, 8, DType.FP32)},
             Status.AXI_READ_ERROR)                     # found during execution: executed
    m.sample(_ew(Opcode.TROWEXPANDMUL, DType.FP8E4M3, (4, 16), (4, 16), (4, 1)), Status.DTYPE_UNSUPPORTED)
    m.sample({"opcode": Opcode.TGEMV, "dst": tile(0, 1, 8, DType.FP32)}, Status.UNSUPPORTED)
    m.sample({"opcode": 0x7F}, Status.UNKNOWN_OPCODE)
    m.sample({"opcode": Opcode.TSYNC, "dst": tile(0, 2, 8, DType.INT8)}, Status.OK)     # fields ignored
    it = m.items()
    assert it["opcode_dtype.legal"]["TROWEXPANDADD/FP16"] == 1
    assert it["opcode_dtype.legal"]["TLOAD/BF16"] == 1
    assert it["opcode_dtype.legal"]["TLOAD/INT8"] == 0
    assert it["opcode_dtype.legal"]["TPARTMAX/INT16"] == 1
    assert it["opcode_dtype.legal"]["MGATHER_ELEM/FP32"] == 1
    assert "TGEMV/FP32" not in it["opcode_dtype.legal"]            # no engine: no goal
    assert it["opcode_dtype.legal"]["TSYNC/-"] == 1
    assert sum(it["opcode_dtype.legal"].values()) == 5
    assert it["illegal.opcode_dtype"]["TROWEXPANDMUL/FP8E4M3"] == 1
    assert sum(it["illegal.opcode_dtype"].values()) == 1
    st = it["status.code"]
    assert (st["OK"], st["SHAPE_MISMATCH"], st["AXI_READ_ERROR"], st["DTYPE_UNSUPPORTED"], st["UNSUPPORTED"],
            st["UNKNOWN_OPCODE"]) == (4, 1, 1, 1, 1, 1)
    assert it["trowexpand.opcode_x_mode_x_expanded"][("TROWEXPANDADD", "mode1", "src1")] == 1
    assert sum(it["trowexpand.opcode_x_mode_x_expanded"].values()) == 1
    assert it["tpart.opcode_x_pattern"][("TPARTMAX", "partial_rows")] == 1
    assert it["tpart.layout"]["COL/ROW/ROW"] == 1
    assert it["mgather.mode_x_oob_x_index"][("ELEM", "WRAP", "UINT32")] == 1
    assert "gemv.variant_x_triple" not in it
    fc = it["float_classes.trowexpand"]
    assert {b for b, n in fc.items() if n} == {"FP16/src0/nan", "FP16/src0/subnormal", "FP16/src0/normal",
                                               "FP16/src1/zero"}


@pytest.mark.parametrize("dst,v0,v1,pattern", [
    ((4, 16), (4, 16), (4, 16), "full"), ((4, 16), (4, 16), (4, 3), "partial_cols"),
    ((4, 16), (1, 2), (4, 16), "partial_both"), ((4, 16), (4, 16), (0, 16), "empty_src"),
    ((0, 16), (4, 16), (2, 16), "zero_dst")])
def test_tpart_patterns(dst, v0, v1, pattern):
    f = cov.command_features(_ew(Opcode.TPARTADD, DType.INT32, dst, v0, v1), Status.OK)
    assert f["tpart"] == ("TPARTADD", pattern)


def test_trowexpand_roles_and_modes():
    # src0 expanded (mode 2: row-major (R, 32 / size)), src1 full
    f = cov.command_features(_ew(Opcode.TROWEXPANDSUB, DType.FP32, (4, 16), (4, 8), (4, 16)), Status.OK)
    assert f["trowexpand"] == ("TROWEXPANDSUB", "mode2", "src0")


def test_merge_adds_hits(tmp_path):
    m = new_model()
    cmd = {"opcode": Opcode.TLOAD, "dst": tile(0, 2, 8, DType.INT16), "gm": gm_region(0x1000, 2, 8, DType.INT16)}
    m.sample(cmd, Status.OK)
    a = tmp_path / "a" / "coverage.yml"
    a.parent.mkdir()
    m.export(a)
    m.sample(cmd, Status.OK)
    m.sample(_ew(Opcode.TPARTADD, DType.FP32, (4, 16), (4, 16), (4, 16)), Status.OK)
    b = tmp_path / "b" / "coverage.yml"
    b.parent.mkdir()
    m.export(b)                                                 # cumulative: 2 TLOADs, 1 TPARTADD
    assert report.find_files(tmp_path) == [a, b]
    merged = report.load(report.merge([a, b], tmp_path / "merged.yml"))
    legal = merged[f"{m.root}.opcode_dtype.legal"]
    assert legal["TLOAD/INT16"] == 1 + 2
    assert legal["TPARTADD/FP32"] == 0 + 1
    assert merged[f"{m.root}.status.code"]["OK"] == 1 + 3
    assert merged[f"{m.root}.tpart.opcode_x_pattern"]["TPARTADD x full"] == 1
    # the report: totals, holes (GEMV among them), the plot
    mine = {k: v for k, v in merged.items() if k.startswith(m.root + ".")}
    text = report.report(mine, 2)
    goal, _ = report.summarize(mine)
    hit, size, _ = report.totals(goal)
    assert size == sum(len(v) for v in cov.goal_bins(Profile.A5).values())
    assert f"TOTAL  {hit} of {size} goal bins hit" in text
    assert "HOLES" in text and "TGEMV x FP32/FP16/FP16" in text
    png = report.plot(mine, tmp_path / "coverage.png")
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_harness_model_roots(monkeypatch):
    """``model(profile, supported)`` (what the harness samples into) names its root after the profile and
    the missing families: the whole unit's runs (every opcode supported) merge under ``tilevec_a5``."""
    from rtl.isa import Opcode
    monkeypatch.setattr(cov, "_models", {})
    assert cov.model(Profile.A5, frozenset(Opcode)).root == "tilevec_a5"
    assert cov.model(Profile.A5, None).root == "tilevec_a5"
    assert cov.model(Profile.A5, NO_GEMV).root == "tilevec_a5_without_gemv"
