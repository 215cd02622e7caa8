"""One test per constraint error (golden.check), the checking order, and decode() round trips."""

import pytest

from rtl.config import preset
from rtl.isa import Command, decode, DType, encode, Layout, OobMode, Opcode, Profile, Status
from golden import check, check_strict, IsaError, CHECKING_ORDER

from golden_cmds import base_cmds, cmd

A5 = preset("small", gm_addr_bits=16)           # 4 KiB UB, 64 KiB of GM address space
A2 = preset("small", gm_addr_bits=16, profile=Profile.A2A3)
O, D, S, L = Opcode, DType, Status, Layout
COL, ROW = L.COL_MAJOR, L.ROW_MAJOR


@pytest.mark.parametrize("op", list(Opcode))
def test_base_commands_are_legal(op):
    c = base_cmds()[op]
    assert check(c, A5) == S.OK
    assert check(decode(Command, encode(Command, c)), A5) == S.OK


# (id, opcode, changes, config, status): every constraint of the seeds and of the transfer rules
CASES = [
    ("unknown opcode", 0x7F, {}, A5, S.UNKNOWN_OPCODE),
    ("reserved dtype dst", O.TLOAD, {"dst.dtype": 13}, A5, S.DTYPE_INVALID),
    ("reserved dtype gm", O.TLOAD, {"gm.dtype": 11}, A5, S.DTYPE_INVALID),
    ("reserved dtype index", O.MGATHER_ROW, {"src0.dtype": 15}, A5, S.DTYPE_INVALID),
    ("tload gm type != tile", O.TLOAD, {"gm.dtype": D.INT32}, A5, S.DTYPE_MISMATCH),
    ("tload misaligned ub", O.TLOAD, {"dst.base": 0x108}, A5, S.UB_MISALIGNED),
    ("tload ub out of range", O.TLOAD, {"dst.base": 4096 - 96}, A5, S.UB_OUT_OF_RANGE),
    ("tload valid > static", O.TLOAD, {"dst.valid_cols": 9, "gm.cols": 9}, A5, S.VALID_EXCEEDS_STATIC),
    ("tload gm shape != valid", O.TLOAD, {"gm.rows": 2}, A5, S.SHAPE_MISMATCH),
    ("tload gm base misaligned", O.TLOAD, {"gm.base": 0x1002}, A5, S.GM_MISALIGNED),
    ("tload gm stride misaligned", O.TLOAD, {"gm.row_stride": 66}, A5, S.GM_MISALIGNED),
    ("tload gm out of range", O.TLOAD, {"gm.base": 0x10000 - 2 * 64 - 16}, A5, S.GM_OUT_OF_RANGE),
    ("tstore gm out of range colmajor", O.TSTORE, {"gm.base": 0x10000 - 4 * 16 - 8}, A5, S.GM_OUT_OF_RANGE),
    ("mgather in a2a3", O.MGATHER_ROW, {}, A2, S.DTYPE_UNSUPPORTED),
    ("mgather table type", O.MGATHER_ELEM, {"gm.dtype": D.BF16}, A5, S.DTYPE_MISMATCH),
    ("mgather index int16", O.MGATHER_ROW, {"src0.dtype": D.INT16}, A5, S.INDEX_DTYPE),
    ("mgather dst col-major", O.MGATHER_ELEM, {"dst.layout": COL}, A5, S.LAYOUT_UNSUPPORTED),
    ("mgather idx rows != dst rows", O.MGATHER_ROW, {"src0.rows": 5}, A5, S.SHAPE_MISMATCH),
    ("mgather row idx cols != 1", O.MGATHER_ROW, {"src0.cols": 2}, A5, S.SHAPE_MISMATCH),
    ("mgather row idx valid", O.MGATHER_ROW, {"src0.valid_rows": 2}, A5, S.SHAPE_MISMATCH),
    ("mgather row width != dst cols", O.MGATHER_ROW, {"gm.cols": 7}, A5, S.SHAPE_MISMATCH),
    ("mgather elem idx cols != dst cols", O.MGATHER_ELEM, {"src0.cols": 7}, A5, S.SHAPE_MISMATCH),
    ("mgather elem idx valid", O.MGATHER_ELEM, {"src0.valid_cols": 5}, A5, S.SHAPE_MISMATCH),
    ("mgather empty table", O.MGATHER_ROW, {"gm.rows": 0}, A5, S.DIM_OUT_OF_RANGE),
    ("mgather gm base misaligned", O.MGATHER_ROW, {"gm.base": 0x2001}, A5, S.GM_MISALIGNED),
    ("mgather row stride misaligned", O.MGATHER_ROW, {"gm.row_stride": 33}, A5, S.GM_MISALIGNED),
    ("mgather table out of range", O.MGATHER_ELEM, {"gm.base": 0x10000 - 158}, A5, S.GM_OUT_OF_RANGE),
    ("local_gather type mismatch", O.LOCAL_GATHER, {"src0.dtype": D.INT32}, A5, S.DTYPE_MISMATCH),
    ("local_gather index not uint16", O.LOCAL_GATHER, {"src1.dtype": D.INT16}, A5, S.INDEX_DTYPE),
    ("local_gather col-major", O.LOCAL_GATHER, {"src0.layout": COL}, A5, S.LAYOUT_UNSUPPORTED),
    ("local_gather rows differ", O.LOCAL_GATHER, {"src1.valid_rows": 8}, A5, S.SHAPE_MISMATCH),
    ("local_gather dst shape", O.LOCAL_GATHER, {"dst.valid_cols": 8}, A5, S.SHAPE_MISMATCH),
    ("local_gather nepi 64", O.LOCAL_GATHER, {"nepi_log2": 6, "num_valid": 0, "dst.valid_cols": 0,
                                             "dst.valid_rows": 16, "src1.valid_cols": 0}, A5, S.PARAM_INVALID),
    ("local_gather num_valid > group", O.LOCAL_GATHER, {"num_valid": 33, "dst.cols": 66, "dst.valid_cols": 66, "dst.base": 0x600},
     preset("default"), S.PARAM_INVALID),
    ("local_gather num_valid > 4096", O.LOCAL_GATHER, {"num_valid": 4097, "nepi_log2": 0, "dst.cols": 4097, "dst.valid_cols": 4097,
                                                      "dst.rows": 16, "dst.base": 0x1000}, preset("default", ub_bytes=1 << 20),
     S.PARAM_INVALID),
    ("local_gather rows % 16", O.LOCAL_GATHER, {"src0.valid_rows": 8, "src1.valid_rows": 8, "dst.valid_rows": 8},
     A5, S.DIM_OUT_OF_RANGE),
    ("local_gather default count > 4096", O.LOCAL_GATHER, {"num_valid": 0, "nepi_log2": 0, "src1.cols": 257,
                                                           "src1.valid_cols": 257, "dst.cols": 4112,
                                                           "dst.valid_cols": 4112, "dst.base": 0x20000},
     preset("default", ub_bytes=1 << 20), S.DIM_OUT_OF_RANGE),
    ("trowexpandmul int8 in a2a3", O.TROWEXPANDMUL, {"dst.dtype": D.INT8, "src0.dtype": D.INT8,
                                                     "src1.dtype": D.INT8}, A2, S.DTYPE_UNSUPPORTED),
    ("trowexpandmul fp8", O.TROWEXPANDMUL, {"dst.dtype": D.FP8E4M3}, A5, S.DTYPE_UNSUPPORTED),
    ("trowexpandmul type mismatch", O.TROWEXPANDMUL, {"src1.dtype": D.BF16}, A5, S.DTYPE_MISMATCH),
    ("trowexpandmul dst col-major", O.TROWEXPANDMUL, {"dst.layout": COL}, A5, S.LAYOUT_UNSUPPORTED),
    ("trowexpandmul full col-major", O.TROWEXPANDMUL, {"src0.layout": COL}, A5, S.LAYOUT_UNSUPPORTED),
    ("trowexpandmul none full", O.TROWEXPANDMUL, {"src0.valid_cols": 9}, A5, S.SHAPE_MISMATCH),
    ("trowexpandmul both full", O.TROWEXPANDMUL, {"src1.cols": 16, "src1.valid_cols": 10, "src1.layout": ROW},
     A5, S.SHAPE_MISMATCH),
    ("trowexpandmul mode1 rows", O.TROWEXPANDMUL, {"src1.valid_rows": 2}, A5, S.SHAPE_MISMATCH),
    ("trowexpandmul mode2 block", O.TROWEXPANDMUL, {"src1.layout": ROW, "src1.cols": 16, "src1.valid_cols": 8},
     A5, S.SHAPE_MISMATCH),
    ("trowexpandmul both full mode1 C > 1", O.TROWEXPANDMUL, {"src1.cols": 16, "src1.valid_cols": 10}, A5,
     S.SHAPE_MISMATCH),
    ("trowexpandmul both full src0 col-major", O.TROWEXPANDMUL, {"dst.valid_cols": 1, "src0.valid_cols": 1,
                                                                 "src0.layout": COL}, A5, S.LAYOUT_UNSUPPORTED),
    ("trowexpandadd fp8", O.TROWEXPANDADD, {"dst.dtype": D.FP8E5M2, "src0.dtype": D.FP8E5M2,
                                            "src1.dtype": D.FP8E5M2}, A5, S.DTYPE_UNSUPPORTED),
    ("trowexpandadd uint32 in a2a3", O.TROWEXPANDADD, {"dst.dtype": D.UINT32, "src0.dtype": D.UINT32,
                                                       "src1.dtype": D.UINT32}, A2, S.DTYPE_UNSUPPORTED),
    ("trowexpandadd mode2 block", O.TROWEXPANDADD, {"src1.valid_cols": 7}, A5, S.SHAPE_MISMATCH),
    ("trowexpandadd both full mode2 C != block", O.TROWEXPANDADD, {"src1.cols": 16, "src1.valid_cols": 10},
     A5, S.SHAPE_MISMATCH),
    ("trowexpandsub type mismatch", O.TROWEXPANDSUB, {"src0.dtype": D.FP32}, A5, S.DTYPE_MISMATCH),
    ("trowexpandsub full src1 col-major", O.TROWEXPANDSUB, {"src1.layout": COL}, A5, S.LAYOUT_UNSUPPORTED),
    ("trowexpandsub expanded src0 rows", O.TROWEXPANDSUB, {"src0.valid_rows": 2}, A5, S.SHAPE_MISMATCH),
    ("trowexpandsub none full", O.TROWEXPANDSUB, {"src1.valid_cols": 9}, A5, S.SHAPE_MISMATCH),
    ("trowexpandmax dst col-major", O.TROWEXPANDMAX, {"dst.layout": COL}, A5, S.LAYOUT_UNSUPPORTED),
    ("trowexpandmax mode1 rows", O.TROWEXPANDMAX, {"src1.valid_rows": 4}, A5, S.SHAPE_MISMATCH),
    ("trowexpandmin misaligned", O.TROWEXPANDMIN, {"src0.base": 0x210}, A5, S.UB_MISALIGNED),
    ("trowexpandmin expanded src0 block", O.TROWEXPANDMIN, {"src0.valid_cols": 8}, A5, S.SHAPE_MISMATCH),
    ("tpartmul col-major in a2a3", O.TPARTMUL, {"dst.layout": COL}, A2, S.LAYOUT_UNSUPPORTED),
    ("tpartmul pattern", O.TPARTMUL, {"src1.valid_rows": 3}, A5, S.VALIDITY_PATTERN),
    ("tpartmax bf16 in a2a3", O.TPARTMAX, {"dst.dtype": D.BF16, "src0.dtype": D.BF16, "src1.dtype": D.BF16}, A2,
     S.DTYPE_UNSUPPORTED),
    ("tpartmax pattern exceeds", O.TPARTMAX, {"src1.valid_cols": 7, "src1.valid_rows": 2}, A5,
     S.VALIDITY_PATTERN),
    ("tpartmin fp8", O.TPARTMIN, {"src1.dtype": D.FP8E4M3}, A5, S.DTYPE_UNSUPPORTED),
    ("tpartmin pattern", O.TPARTMIN, {"src0.valid_cols": 5, "src1.valid_rows": 3}, A5, S.VALIDITY_PATTERN),
    ("tpartadd uint8 in a2a3", O.TPARTADD, {"dst.dtype": D.UINT8, "src0.dtype": D.UINT8, "src1.dtype": D.UINT8},
     A2, S.DTYPE_UNSUPPORTED),
    ("tpartadd type mismatch", O.TPARTADD, {"src1.dtype": D.INT32}, A5, S.DTYPE_MISMATCH),
    ("tpartadd col-major in a2a3", O.TPARTADD, {"src1.layout": COL}, A2, S.LAYOUT_UNSUPPORTED),
    ("tpartadd pattern", O.TPARTADD, {"src0.valid_rows": 3}, A5, S.VALIDITY_PATTERN),
    ("tpartadd pattern exceeds", O.TPARTADD, {"src1.valid_cols": 7}, A5, S.VALIDITY_PATTERN),
    ("gemv acc int16", O.TGEMV, {"dst.dtype": D.INT16}, A5, S.DTYPE_UNSUPPORTED),
    ("gemv fp8 in a2a3", O.TGEMV, {"src0.dtype": D.FP8E5M2, "src1.dtype": D.FP8E5M2}, A2, S.DTYPE_UNSUPPORTED),
    ("gemv triple", O.TGEMV, {"src1.dtype": D.BF16}, A5, S.DTYPE_MISMATCH),
    ("gemv int32 with half", O.TGEMV, {"dst.dtype": D.INT32}, A5, S.DTYPE_MISMATCH),
    ("gemv acc C_in type", O.TGEMV_ACC, {"src2.dtype": D.INT32}, A5, S.DTYPE_MISMATCH),
    ("gemv B col-major", O.TGEMV, {"src1.layout": COL}, A5, S.LAYOUT_UNSUPPORTED),
    ("gemv static A.cols != B.rows", O.TGEMV, {"src0.cols": 15, "src0.valid_cols": 12}, A5, S.SHAPE_MISMATCH),
    ("gemv A valid cols != K", O.TGEMV, {"src0.valid_cols": 11}, A5, S.SHAPE_MISMATCH),
    ("gemv C valid cols != N", O.TGEMV, {"dst.valid_cols": 4}, A5, S.SHAPE_MISMATCH),
    ("gemv bias valid", O.TGEMV_BIAS, {"src2.valid_cols": 4}, A5, S.SHAPE_MISMATCH),
    ("gemv bias static", O.TGEMV_BIAS, {"src2.cols": 16}, A5, S.SHAPE_MISMATCH),
    ("gemv m != 1", O.TGEMV, {"dst.rows": 2, "dst.valid_rows": 2, "src0.rows": 2, "src0.valid_rows": 2}, A5,
     S.DIM_OUT_OF_RANGE),
    ("gemv K = 0", O.TGEMV, {"src1.valid_rows": 0, "src0.valid_cols": 0}, A5, S.DIM_OUT_OF_RANGE),
    ("gemv N = 0", O.TGEMV, {"src1.valid_cols": 0, "dst.valid_cols": 0}, A5, S.DIM_OUT_OF_RANGE),
    ("gemv K = 4096", O.TGEMV, {"src0.cols": 4096, "src0.valid_cols": 4096, "src1.rows": 4096, "src1.cols": 1,
                                "src1.valid_rows": 4096, "src1.valid_cols": 1, "dst.cols": 1, "dst.valid_cols": 1,
                                "src1.base": 0x10000}, preset("default", ub_bytes=1 << 20), S.DIM_OUT_OF_RANGE),
]


@pytest.mark.parametrize("name,op,changes,config,status", CASES, ids=[c[0] for c in CASES])
def test_constraint(name, op, changes, config, status):
    c = cmd(op, **changes) if isinstance(op, Opcode) else {"opcode": op}
    assert check(c, config) == status
    with pytest.raises(IsaError) as e:
        check_strict(c, config)
    assert e.value.status == status and e.value.message
    # the same status through the wire format
    assert check(decode(Command, encode(Command, c)), config) == status


def test_every_seed_status_is_exercised():
    used = {c[4] for c in CASES}
    assert set(CHECKING_ORDER) - {S.UNSUPPORTED} <= used
    assert check(cmd(O.TGEMV), A5, supported={O.TLOAD}) == S.UNSUPPORTED
    assert check({"opcode": 0x7F}, A5, supported={O.TLOAD}) == S.UNKNOWN_OPCODE


def test_messages_name_the_values():
    with pytest.raises(IsaError) as e:
        check_strict(cmd(O.TLOAD, **{"dst.base": 0x108}), A5)
    assert "0x108" in str(e.value) and "32" in str(e.value)
    with pytest.raises(IsaError) as e:
        check_strict(cmd(O.TGEMV, **{"src1.valid_cols": 0, "dst.valid_cols": 0}), A5)
    assert "N = 0" in str(e.value)


def test_checking_order_lowest_wins():
    # misaligned (6) and out of range (7) and valid > static (8): 6 wins
    c = cmd(O.TLOAD, **{"dst.base": 4096 - 8, "dst.valid_rows": 9})
    assert check(c, A5) == S.UB_MISALIGNED
    # reserved dtype (2) beats unknown layout combos and everything else
    c = cmd(O.TPARTADD, **{"src0.dtype": 12, "src0.valid_rows": 99, "dst.base": 3})
    assert check(c, A5) == S.DTYPE_INVALID
    # unsupported (3) beats mismatch (4)
    c = cmd(O.TPARTADD, **{"src0.dtype": D.FP8E4M3})
    assert check(c, A5) == S.DTYPE_UNSUPPORTED
    # index dtype (5) beats UB checks (6)
    c = cmd(O.MGATHER_ROW, **{"src0.dtype": D.FP32, "dst.base": 1})
    assert check(c, A5) == S.INDEX_DTYPE
    # layout (9) beats shape (10); shape beats param (11); param beats dim; dim beats GM (12)
    c = cmd(O.LOCAL_GATHER, **{"src0.layout": COL, "dst.valid_cols": 3, "nepi_log2": 7})
    assert check(c, A5) == S.LAYOUT_UNSUPPORTED
    c = cmd(O.LOCAL_GATHER, **{"dst.valid_cols": 3, "nepi_log2": 7})
    assert check(c, A5) == S.SHAPE_MISMATCH
    c = cmd(O.LOCAL_GATHER, **{"num_valid": 40, "src0.valid_rows": 8, "src1.valid_rows": 8, "dst.valid_rows": 8,
                               "dst.valid_cols": 80, "dst.cols": 80})
    assert check(c, preset("default")) == S.PARAM_INVALID
    c = cmd(O.MGATHER_ROW, **{"gm.rows": 0, "gm.base": 1})
    assert check(c, A5) == S.DIM_OUT_OF_RANGE
    # GM misaligned (12) beats GM out of range (13)
    c = cmd(O.TLOAD, **{"gm.base": 0xFFFF})
    assert check(c, A5) == S.GM_MISALIGNED
    # TPARTADD pattern (14) is last: a shape-free op with a bad UB base reports the UB error
    c = cmd(O.TPARTADD, **{"src0.valid_rows": 3, "dst.base": 0x1000})
    assert check(c, A5) == S.UB_OUT_OF_RANGE


def test_unused_slots_are_not_checked():
    c = cmd(O.TLOAD, src0={"base": 3, "dtype": 14}, src1={"base": 5}, nepi_log2=7)
    assert check(c, A5) == S.OK
    c = cmd(O.TPARTADD, gm={"base": 1, "dtype": 13})
    assert check(c, A5) == S.OK


def test_missing_keys_mean_zero_and_raw_ints_accepted():
    assert check({}, A5) == S.UNKNOWN_OPCODE                                  # opcode 0 is reserved
    c = {"opcode": 0x01, "dst": {"rows": 1, "cols": 1, "dtype": 8}, "gm": {"dtype": 8}}
    assert check(c, A5) == S.OK                                               # a zero valid region is legal
    assert check({"opcode": 0x01, "dst": {"dtype": 0}, "gm": {}}, A5) == S.OK


def test_zero_valid_region_skips_gm_range_and_tpartadd_pattern():
    c = cmd(O.TLOAD, **{"dst.valid_rows": 0, "gm.rows": 0, "gm.base": 0xFFF0})
    assert check(c, A5) == S.OK
    c = cmd(O.TPARTADD, **{"dst.valid_rows": 0, "src0.valid_rows": 3})
    assert check(c, A5) == S.OK


def test_profiles_type_sets():
    for dt in DType:
        c = cmd(O.TLOAD, **{"dst.dtype": dt, "gm.dtype": dt, "dst.base": 0})
        assert check(c, A5) == S.OK and check(c, A2) == S.OK
    for dt in DType:
        c = cmd(O.MGATHER_ELEM, **{"dst.dtype": dt, "gm.dtype": dt})
        assert check(c, A5) == S.OK and check(c, A2) == S.DTYPE_UNSUPPORTED


EW_SIBLINGS = [O.TROWEXPANDADD, O.TROWEXPANDSUB, O.TROWEXPANDMAX, O.TROWEXPANDMIN, O.TPARTMUL, O.TPARTMAX,
               O.TPARTMIN]


@pytest.mark.parametrize("op", [O.TROWEXPANDMUL, *EW_SIBLINGS[:4]], ids=lambda o: o.name)
def test_trowexpand_both_full_legal(op):
    """Both sources at dst's valid shape: src1 is the expanded operand; legal in mode 1 with C == 1 (src1
    column-major) and in mode 2 with C == 32 / size (src1 row-major); src0 must be row-major."""
    F32, I8 = D.FP32, D.INT8
    mode1 = {"opcode": op, "dst": {"base": 0x000, "rows": 4, "cols": 1, "valid_rows": 3, "valid_cols": 1,
                                   "dtype": F32, "layout": ROW},
             "src0": {"base": 0x100, "rows": 4, "cols": 1, "valid_rows": 3, "valid_cols": 1, "dtype": F32,
                      "layout": ROW},
             "src1": {"base": 0x200, "rows": 4, "cols": 1, "valid_rows": 3, "valid_cols": 1, "dtype": F32,
                      "layout": COL}}
    assert check(mode1, A5) == S.OK and check(mode1, A2) == S.OK
    mode1["src1"]["layout"] = ROW          # now src1 is a mode-2 block: (3, 8) wanted
    assert check(mode1, A5) == S.SHAPE_MISMATCH
    mode2 = cmd(op, **{"dst.dtype": F32, "dst.valid_cols": 8, "src0.dtype": F32, "src0.valid_cols": 8,
                       "src0.layout": ROW, "src1.dtype": F32, "src1.rows": 4, "src1.cols": 8, "src1.valid_rows": 3,
                       "src1.valid_cols": 8, "src1.layout": ROW, "src0.rows": 4, "src0.cols": 16, "src0.base": 0x100,
                       "src1.base": 0x200})
    assert check(mode2, A5) == S.OK
    int8 = cmd(op, **{f"{s}.{f}": v for s in ("dst", "src0", "src1")
                      for f, v in (("dtype", I8), ("cols", 32), ("valid_cols", 32), ("layout", ROW))})
    assert check(int8, A5) == S.OK
    assert check(int8, A2) == S.DTYPE_UNSUPPORTED
    int8["src1"]["valid_cols"] = int8["src0"]["valid_cols"] = int8["dst"]["valid_cols"] = 16   # not the block
    with pytest.raises(IsaError) as e:
        check_strict(int8, A5)
    assert e.value.status == S.SHAPE_MISMATCH and op.name in str(e.value) and "both" in str(e.value)


@pytest.mark.parametrize("op", EW_SIBLINGS, ids=lambda o: o.name)
def test_sibling_messages_name_the_opcode(op):
    bad = {"src0.valid_rows": 3, "src1.valid_rows": 3} if op.name.startswith("TPART") else \
        {"src1.valid_rows": 2, "src0.valid_rows": 2}
    c = cmd(op, **bad)
    with pytest.raises(IsaError) as e:
        check_strict(c, A5)
    assert e.value.status in (S.VALIDITY_PATTERN, S.SHAPE_MISMATCH)
    assert str(e.value).count(op.name) >= 1 and "TROWEXPANDMUL" not in str(e.value) and \
        "TPARTADD" not in str(e.value)
