"""Legal base commands for every opcode (as decode() would give them), for the checker and machine tests."""

import copy

from rtl.isa import FRONT_END_OPCODES, DType, Layout, OobMode, Opcode

ROW, COL = Layout.ROW_MAJOR, Layout.COL_MAJOR
#: The opcodes with operands (every one but the front end's TSYNC, which has none and ignores its fields).
OPERAND_OPS = [op for op in Opcode if op not in FRONT_END_OPCODES]


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
        Opcode.TSYNC: {"opcode": Opcode.TSYNC},
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


def legal_command(op, d):
    """A random legal command of ``op`` (small config: four 1 KiB tile slots at 0, 0x400, 0x800, 0xC00; GM
    from 0x1000) drawn with ``d`` (hypothesis' ``data.draw``), or None when the draw gives none."""
    from hypothesis import strategies as st
    from golden import ops
    from golden.numerics import DTYPE_NUMPY
    from golden.profiles import TYPES, GEMV_TRIPLES
    from rtl.isa import Profile
    I = lambda lo, hi: d(st.integers(lo, hi))
    lay = lambda: d(st.sampled_from(list(Layout)))
    R, C = I(1, 8), I(1, 8)
    if op in (Opcode.TLOAD, Opcode.TSTORE):
        dt = d(st.sampled_from(list(DType)))
        layout = lay()
        vr, vc = I(1, R), I(1, C)
        size = DTYPE_NUMPY[dt].itemsize
        line_len = vc if layout == ROW else vr
        stride = (line_len + I(0, 3)) * size
        slot = "dst" if op == Opcode.TLOAD else "src0"
        return {"opcode": op, slot: tile(0x400 * I(0, 3), R, C, dt, vr, vc, layout),
                "gm": gm(0x1000 + I(0, 8) * size, vr, vc, stride, dt)}
    if op in (Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM):
        dt = d(st.sampled_from(sorted(TYPES[op][Profile.A5], key=lambda x: x.value)))
        it = d(st.sampled_from([DType.INT32, DType.UINT32]))
        vr, vc = I(1, R), I(1, C)
        size = DTYPE_NUMPY[dt].itemsize
        row = op == Opcode.MGATHER_ROW
        T = I(1, 12)
        g = gm(0x1000 + I(0, 4) * 8, T, vc if row else I(1, 6), (vc + I(0, 3)) * size if row else 0, dt)
        idx = tile(0x400, R, 1 if row else C, it, vr, 1 if row else vc)
        return {"opcode": op, "oob": d(st.sampled_from(list(OobMode))), "dst": tile(0, R, C, dt, vr, vc),
                "src0": idx, "gm": g}
    if op == Opcode.LOCAL_GATHER:
        dt = d(st.sampled_from([DType.UINT8, DType.INT16, DType.FP32]))
        rows = 16 * I(1, 2)
        X, nepi_log2 = I(1, 2), I(0, 2)
        n = I(0, 16 * X)
        n_eff = n or 16 * X
        size = DTYPE_NUMPY[dt].itemsize
        cols = I(1, max(1, 1024 // max(1, rows * size)))
        cols = min(cols, 1024 // size // max(rows, 1))
        if n_eff * (1 << nepi_log2) * max(rows, 1) * size > 1024:
            n, X = 0, 0
            n_eff = 0
        return {"opcode": op, "nepi_log2": nepi_log2, "num_valid": n,
                "dst": tile(0, rows, n_eff << nepi_log2, dt), "src0": tile(0x400, rows, cols, dt),
                "src1": tile(0x800, rows, X, DType.UINT16)}
    if op in ops.TROWEXPAND_FUNCTIONS:
        dt = d(st.sampled_from(sorted(TYPES[op][Profile.A5], key=lambda x: x.value)))
        vr, vc = I(1, R), I(1, C)
        blk = 32 // DTYPE_NUMPY[dt].itemsize
        mode1 = d(st.booleans())
        exp = tile(0x800, R, 1, dt, vr, 1, Layout.COL_MAJOR) if mode1 else tile(0x800, R, blk, dt, vr, blk)
        if d(st.booleans()):                   # both at dst's valid shape: src1 is the expanded operand
            vc = exp["valid_cols"]
            return {"opcode": op, "dst": tile(0, R, exp["cols"], dt, vr, vc),
                    "src0": tile(0x400, R, exp["cols"], dt, vr, vc), "src1": exp}
        full = tile(0x400, R, C, dt, vr, vc)
        if (exp["valid_rows"], exp["valid_cols"]) == (vr, vc):
            full["valid_cols"] = vc = 0 if vc else 1
            if vc > C:
                return None
        s0, s1 = (full, exp) if d(st.booleans()) else (exp, full)
        return {"opcode": op, "dst": tile(0, R, C, dt, vr, vc), "src0": s0, "src1": s1}
    if op in ops.TPART_FUNCTIONS:
        dt = d(st.sampled_from(sorted(TYPES[op][Profile.A5], key=lambda x: x.value)))
        vr, vc = I(1, R), I(1, C)
        o = (I(0, vr), I(0, vc))
        a, b = ((vr, vc), o) if d(st.booleans()) else (o, (vr, vc))
        return {"opcode": op, "dst": tile(0, R, C, dt, vr, vc, lay()), "src0": tile(0x400, R, C, dt, *a, lay()),
                "src1": tile(0x800, R, C, dt, *b, lay())}
    if op in (Opcode.TGEMV, Opcode.TGEMV_ACC, Opcode.TGEMV_BIAS):
        ct, at, bt = d(st.sampled_from(sorted(GEMV_TRIPLES[Profile.A5], key=lambda x: [y.value for y in x])))
        K, N = I(1, 12), I(1, 8)
        c = {"opcode": op, "dst": tile(0, 1, N, ct), "src0": tile(0x400, 1, K, at), "src1": tile(0x800, K, N, bt)}
        if op != Opcode.TGEMV:
            c["src2"] = tile(0 if d(st.booleans()) and op == Opcode.TGEMV_ACC else 0xC00, 1, N, ct)
        return c
    return None
