"""Legal base commands for every opcode (as decode() would give them), for the checker and machine tests."""

import copy

from rtl.isa import DType, Layout, OobMode, Opcode

ROW, COL = Layout.ROW_MAJOR, Layout.COL_MAJOR


def tile(base, rows, cols, dtype, vr=None, vc=None, layout=ROW):
    return {"base": base, "rows": rows, "cols": cols, "valid_rows": rows if vr is None else vr,
            "valid_cols": cols if vc is None else vc, "dtype": dtype, "layout": layout}


def gm(base, rows, cols, stride, dtype):
    return {"base": base, "rows": rows, "cols": cols, "row_stride": stride, "dtype": dtype}


def base_cmds():
    F32, F16 = DType.FP32, DType.FP16
    return {
        Opcode.TLOAD: {"opcode": Opcode.TLOAD, "dst": tile(0x100, 4, 8, F32, 3, 5),
                       "gm": gm(0x1000, 3, 5, 64, F32)},
        Opcode.TSTORE: {"opcode": Opcode.TSTORE, "src0": tile(0x100, 4, 8, F32, 3, 5, COL),
                        "gm": gm(0x1000, 3, 5, 16, F32)},
        Opcode.MGATHER_ROW: {"opcode": Opcode.MGATHER_ROW, "oob": OobMode.CLAMP,
                             "dst": tile(0x200, 4, 8, F16, 3, 8), "src0": tile(0x100, 4, 1, DType.INT32, 3, 1),
                             "gm": gm(0x2000, 10, 8, 32, F16)},
        Opcode.MGATHER_ELEM: {"opcode": Opcode.MGATHER_ELEM, "oob": OobMode.WRAP,
                              "dst": tile(0x200, 4, 8, F16, 3, 6), "src0": tile(0x100, 4, 8, DType.UINT32, 3, 6),
                              "gm": gm(0x2000, 10, 8, 0, F16)},
        Opcode.LOCAL_GATHER: {"opcode": Opcode.LOCAL_GATHER, "nepi_log2": 1, "num_valid": 5,
                              "dst": tile(0x800, 16, 10, F32), "src0": tile(0x000, 16, 16, F32),
                              "src1": tile(0x400, 16, 2, DType.UINT16)},
        Opcode.TROWEXPANDMUL: {"opcode": Opcode.TROWEXPANDMUL, "dst": tile(0x000, 4, 16, F16, 3, 10),
                               "src0": tile(0x100, 4, 16, F16, 3, 10), "src1": tile(0x200, 4, 1, F16, 3, 1, COL)},
        Opcode.TPARTADD: {"opcode": Opcode.TPARTADD, "dst": tile(0x000, 4, 8, F32, 4, 6),
                          "src0": tile(0x100, 4, 8, F32, 4, 6), "src1": tile(0x200, 4, 8, F32, 2, 3)},
        # the siblings: each another type / mode / operand placement
        Opcode.TROWEXPANDADD: {"opcode": Opcode.TROWEXPANDADD, "dst": tile(0x000, 4, 16, F32, 3, 10),
                               "src0": tile(0x100, 4, 16, F32, 3, 10), "src1": tile(0x200, 4, 8, F32, 3, 8)},
        Opcode.TROWEXPANDSUB: {"opcode": Opcode.TROWEXPANDSUB, "dst": tile(0x000, 4, 16, F16, 3, 10),
                               "src0": tile(0x200, 4, 1, F16, 3, 1, COL), "src1": tile(0x100, 4, 16, F16, 3, 10)},
        Opcode.TROWEXPANDMAX: {"opcode": Opcode.TROWEXPANDMAX, "dst": tile(0x000, 4, 16, DType.INT16, 3, 10),
                               "src0": tile(0x100, 4, 16, DType.INT16, 3, 10),
                               "src1": tile(0x200, 4, 1, DType.INT16, 3, 1, COL)},
        Opcode.TROWEXPANDMIN: {"opcode": Opcode.TROWEXPANDMIN, "dst": tile(0x000, 4, 16, DType.BF16, 3, 10),
                               "src0": tile(0x200, 4, 16, DType.BF16, 3, 16),
                               "src1": tile(0x100, 4, 16, DType.BF16, 3, 10)},
        Opcode.TPARTMUL: {"opcode": Opcode.TPARTMUL, "dst": tile(0x000, 4, 8, DType.INT32, 4, 6),
                          "src0": tile(0x100, 4, 8, DType.INT32, 1, 2), "src1": tile(0x200, 4, 8, DType.INT32, 4, 6)},
        Opcode.TPARTMAX: {"opcode": Opcode.TPARTMAX, "dst": tile(0x000, 4, 8, F16, 4, 6),
                          "src0": tile(0x100, 4, 8, F16, 4, 6), "src1": tile(0x200, 4, 8, F16, 3, 6)},
        Opcode.TPARTMIN: {"opcode": Opcode.TPARTMIN, "dst": tile(0x000, 4, 8, DType.UINT8, 4, 6),
                          "src0": tile(0x100, 4, 8, DType.UINT8, 4, 6), "src1": tile(0x200, 4, 8, DType.UINT8, 4, 6)},
        Opcode.TGEMV: {"opcode": Opcode.TGEMV, "dst": tile(0x000, 1, 8, F32, 1, 5),
                       "src0": tile(0x040, 1, 16, F16, 1, 12), "src1": tile(0x100, 16, 8, F16, 12, 5)},
        Opcode.TGEMV_ACC: {"opcode": Opcode.TGEMV_ACC, "dst": tile(0x000, 1, 8, F32, 1, 5),
                           "src0": tile(0x040, 1, 16, F16, 1, 12), "src1": tile(0x100, 16, 8, F16, 12, 5),
                           "src2": tile(0x000, 1, 8, F32, 1, 5)},
        Opcode.TGEMV_BIAS: {"opcode": Opcode.TGEMV_BIAS, "dst": tile(0x000, 1, 8, F32, 1, 5),
                            "src0": tile(0x040, 1, 16, DType.BF16, 1, 12),
                            "src1": tile(0x100, 16, 8, DType.BF16, 12, 5), "src2": tile(0x400, 1, 8, F32, 1, 5)},
    }


def cmd(op, **changes):
    """The base command of ``op`` with ``changes`` applied: key "slot.field" or top-level field."""
    c = copy.deepcopy(base_cmds()[op])
    for k, v in changes.items():
        if "." in k:
            s, f = k.split(".")
            c.setdefault(s, {})[f] = v
        else:
            c[k] = v
    return c
