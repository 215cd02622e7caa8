"""Instruction checking: the status the hardware answers for a command, in a fixed checking order.

``check(cmd, config) -> Status`` and ``check_strict(cmd, config)`` (raises ``IsaError``) take the command
dict exactly as ``rtl.isa.decode(Command, word)`` returns it (enum members, raw ints for reserved codes,
missing keys = 0). Only the operand slots an opcode uses are looked at. When several constraints fail,
the first in this order wins (docs/semantics.md, "Checking order"):

     1 UNKNOWN_OPCODE        8 VALID_EXCEEDS_STATIC
    1b UNSUPPORTED (only if the caller passes ``supported``)
     2 DTYPE_INVALID         9 LAYOUT_UNSUPPORTED
     3 DTYPE_UNSUPPORTED    10 SHAPE_MISMATCH
     4 DTYPE_MISMATCH       11 PARAM_INVALID, then DIM_OUT_OF_RANGE
     5 INDEX_DTYPE          12 GM_MISALIGNED
     6 UB_MISALIGNED        13 GM_OUT_OF_RANGE
     7 UB_OUT_OF_RANGE      14 VALIDITY_PATTERN

Within one step, operands are examined in slot order dst, src0, src1, src2, gm (only the message differs).
"""

from collections import namedtuple

from rtl.isa import (CHECK_ORDER, DType, DTYPE_BYTES, INSTRUCTIONS, Layout, OobMode, Opcode, Status,
    UB_ALIGN)

from .errors import IsaError
from .ops import (GEMV_MAX_DIM, LOCAL_GATHER_GROUP, LOCAL_GATHER_MAX_INDICES, TPART_FUNCTIONS,
                  TROWEXPAND_FUNCTIONS, trowexpand_expanded_shape, trowexpand_roles,
                  tpart_pattern_ok)

__all__ = ["check", "check_strict", "SLOTS", "tile_view", "gm_view", "normalize", "Tile", "Gm",
           "CHECKING_ORDER"]

#: The checking order (``rtl.isa.CHECK_ORDER``; this name is kept for the golden's users).
CHECKING_ORDER = CHECK_ORDER

#: Tile slots each opcode uses, with their role names, and whether it uses the GM descriptor (a view of
#: ``rtl.isa.INSTRUCTIONS``).
SLOTS = {op: ({s.name: s.role for s in ins.slots}, bool(ins.gm)) for op, ins in INSTRUCTIONS.items()}

Tile = namedtuple("Tile", "slot role base rows cols vr vc dtype layout")
Gm = namedtuple("Gm", "base rows cols row_stride dtype")


def _enum(cls, v):
    if isinstance(v, cls):
        return v
    try:
        return cls(int(v))
    except ValueError:
        return int(v)


def normalize(cmd):
    """The command with top-level enum fields as members where the code is valid (raw ints otherwise)."""
    out = dict(cmd)
    out["opcode"] = _enum(Opcode, cmd.get("opcode", 0))
    out["oob"] = _enum(OobMode, cmd.get("oob", 0))
    out["nepi_log2"] = int(cmd.get("nepi_log2", 0))
    out["num_valid"] = int(cmd.get("num_valid", 0))
    return out


def tile_view(cmd, slot, role=None):
    d = cmd.get(slot, {}) or {}
    return Tile(slot, role or slot, int(d.get("base", 0)), int(d.get("rows", 0)), int(d.get("cols", 0)),
                int(d.get("valid_rows", 0)), int(d.get("valid_cols", 0)),
                _enum(DType, d.get("dtype", 0)), _enum(Layout, d.get("layout", 0)))


def gm_view(cmd):
    d = cmd.get("gm", {}) or {}
    return Gm(int(d.get("base", 0)), int(d.get("rows", 0)), int(d.get("cols", 0)), int(d.get("row_stride", 0)),
              _enum(DType, d.get("dtype", 0)))


def _name(t):
    if isinstance(t, Gm):
        return "gm"
    return f"{t.slot} ({t.role})" if t.role != t.slot else t.slot


# ------------------------------------------------------------------------------------------------ steps 2-9
# The checks every instruction gets, driven by its entry in ``rtl.isa.INSTRUCTIONS``.

def _accepted(allowed):
    return ", ".join(sorted(x.name for x in allowed)) or "none"


def _types_same(ins, t, gm, profile):
    """``same`` rule: data tiles (and the GM type, if it joins) in the op's set and all equal; index tiles
    in the op's index set."""
    op = ins.opcode
    allowed = ins.types[profile]
    data = [t[s.name] for s in ins.data_slots()] + ([gm] if gm is not None and ins.gm_typed else [])
    for x in data:
        if x.dtype not in allowed:
            yield Status.DTYPE_UNSUPPORTED, (f"{op.name}: {_name(x)} type {x.dtype.name} not accepted in profile "
                                             f"{profile.value} (accepted: {_accepted(allowed)})")
    ref = data[0]
    for x in data[1:]:
        if x.dtype != ref.dtype:
            yield Status.DTYPE_MISMATCH, (f"{op.name}: {_name(x)} type {x.dtype.name} != {_name(ref)} type "
                                          f"{ref.dtype.name}")
    for s in ins.slots:
        if s.kind == "index" and t[s.name].dtype not in ins.index_types:
            yield Status.INDEX_DTYPE, (f"{op.name}: {_name(t[s.name])} type {t[s.name].dtype.name} not in "
                                       f"{sorted(x.name for x in ins.index_types)}")


def _types_gemv(ins, t, profile):
    """``gemv`` rule: each role in its set, (C, A, B) a supported triple, C_in / bias of C's type."""
    op = ins.opcode
    for s in ins.slots:
        allowed = ins.allowed(s, profile)
        if t[s.name].dtype not in allowed:
            yield Status.DTYPE_UNSUPPORTED, (f"{op.name}: {_name(t[s.name])} type {t[s.name].dtype.name} not "
                                             f"accepted in profile {profile.value} (accepted: {_accepted(allowed)})")
    c, a, b, init = t["dst"], t["src0"], t["src1"], t.get("src2")
    if (c.dtype, a.dtype, b.dtype) not in ins.triples[profile]:
        yield Status.DTYPE_MISMATCH, (f"{op.name}: (C, A, B) types ({c.dtype.name}, {a.dtype.name}, "
                                      f"{b.dtype.name}) are not a supported triple in profile {profile.value}")
    if init and init.dtype != c.dtype:
        yield Status.DTYPE_MISMATCH, f"{op.name}: {_name(init)} type {init.dtype.name} != C type {c.dtype.name}"


def _ub(tiles, config):
    for t in tiles:
        if t.base % UB_ALIGN:
            yield Status.UB_MISALIGNED, f"{_name(t)}: base {t.base:#x} is not a multiple of {UB_ALIGN}"
    for t in tiles:
        end = t.base + t.rows * t.cols * DTYPE_BYTES[t.dtype]
        if end > config.ub_bytes:
            yield Status.UB_OUT_OF_RANGE, (f"{_name(t)}: base {t.base:#x} + {t.rows} x {t.cols} x "
                                           f"{DTYPE_BYTES[t.dtype]} bytes = {end:#x} > ub_bytes {config.ub_bytes:#x}")
    for t in tiles:
        if t.vr > t.rows or t.vc > t.cols:
            yield Status.VALID_EXCEEDS_STATIC, (f"{_name(t)}: valid shape ({t.vr}, {t.vc}) exceeds static "
                                                f"shape ({t.rows}, {t.cols})")


def _layouts(ins, t, profile):
    for s in ins.slots:
        if profile in s.row_major and t[s.name].layout != Layout.ROW_MAJOR:
            yield Status.LAYOUT_UNSUPPORTED, (f"{ins.opcode.name}: {_name(t[s.name])} must be ROW_MAJOR, is "
                                              f"{t[s.name].layout.name}")


def _common(ins, t, gm, config):
    """Steps 2-9 (types, UB placement, layouts) from the instruction's table entry."""
    op = ins.opcode
    for tile in t.values():
        if not isinstance(tile.dtype, DType):
            yield Status.DTYPE_INVALID, f"{op.name}: {_name(tile)} dtype code {tile.dtype} is not a DType"
    if gm is not None and ins.gm_typed and not isinstance(gm.dtype, DType):
        yield Status.DTYPE_INVALID, f"{op.name}: gm dtype code {gm.dtype} is not a DType"
    if ins.type_rule == "gemv":
        yield from _types_gemv(ins, t, config.profile)
    else:
        yield from _types_same(ins, t, gm, config.profile)
    yield from _ub(list(t.values()), config)
    yield from _layouts(ins, t, config.profile)


# ------------------------------------------------------------------------------------------------ GM

def _gm_last_byte(base, lines, stride, line_bytes):
    return base + (lines - 1) * stride + line_bytes - 1


def _gm_range(op, gm, lines, line_len, size, config, what):
    if lines and line_len:
        last = _gm_last_byte(gm.base, lines, gm.row_stride, line_len * size)
        if last >= 1 << config.gm_addr_bits:
            yield Status.GM_OUT_OF_RANGE, (f"{op.name}: {what}: last byte {last:#x} (base {gm.base:#x}, {lines} "
                                           f"lines of {line_len} x {size} bytes, stride {gm.row_stride}) >= "
                                           f"2**gm_addr_bits = {1 << config.gm_addr_bits:#x}")


# ------------------------------------------------------------------------------------------------ per opcode
# Each instruction's own rules (steps 9-14: the statuses in its table entry's ``special``), in checking order.

def _rules_transfer(op, t, gm, cmd, config):
    tile = t["dst"] if op == Opcode.TLOAD else t["src0"]
    if (gm.rows, gm.cols) != (tile.vr, tile.vc):
        yield Status.SHAPE_MISMATCH, (f"{op.name}: gm rows x cols ({gm.rows}, {gm.cols}) != tile valid shape "
                                      f"({tile.vr}, {tile.vc})")
    size = DTYPE_BYTES[tile.dtype]
    for name, v in (("base", gm.base), ("row_stride", gm.row_stride)):
        if v % size:
            yield Status.GM_MISALIGNED, f"{op.name}: gm {name} {v:#x} not a multiple of element size {size}"
    rm = tile.layout == Layout.ROW_MAJOR
    lines, line_len = (tile.vr, tile.vc) if rm else (tile.vc, tile.vr)
    yield from _gm_range(op, gm, lines, line_len, size, config, "transfer")


def _rules_mgather(op, t, gm, cmd, config):
    dst, idx = t["dst"], t["src0"]
    row = op == Opcode.MGATHER_ROW
    if row:
        if (idx.rows, idx.cols) != (dst.rows, 1):
            yield Status.SHAPE_MISMATCH, (f"{op.name}: index tile static shape ({idx.rows}, {idx.cols}) must be "
                                          f"(dst rows {dst.rows}, 1)")
        if (idx.vr, idx.vc) != (dst.vr, 1):
            yield Status.SHAPE_MISMATCH, (f"{op.name}: index tile valid shape ({idx.vr}, {idx.vc}) must be "
                                          f"(dst valid rows {dst.vr}, 1)")
        if gm.cols != dst.vc:
            yield Status.SHAPE_MISMATCH, f"{op.name}: table row width gm.cols {gm.cols} != dst valid cols {dst.vc}"
    else:
        if (idx.rows, idx.cols) != (dst.rows, dst.cols):
            yield Status.SHAPE_MISMATCH, (f"{op.name}: index tile static shape ({idx.rows}, {idx.cols}) != dst "
                                          f"static shape ({dst.rows}, {dst.cols})")
        if (idx.vr, idx.vc) != (dst.vr, dst.vc):
            yield Status.SHAPE_MISMATCH, (f"{op.name}: index tile valid shape ({idx.vr}, {idx.vc}) != dst valid "
                                          f"shape ({dst.vr}, {dst.vc})")
    size_entries = gm.rows if row else gm.rows * gm.cols
    if dst.vr and dst.vc and size_entries == 0:
        yield Status.DIM_OUT_OF_RANGE, (f"{op.name}: table size (gm.rows {gm.rows}"
                                        f"{'' if row else f' x gm.cols {gm.cols}'}) is 0")
    size = DTYPE_BYTES[dst.dtype]
    if gm.base % size:
        yield Status.GM_MISALIGNED, f"{op.name}: gm base {gm.base:#x} not a multiple of element size {size}"
    if row and gm.row_stride % size:
        yield Status.GM_MISALIGNED, f"{op.name}: gm row_stride {gm.row_stride} not a multiple of element size {size}"
    if row:
        yield from _gm_range(op, gm, gm.rows, gm.cols, size, config, "table")
    else:
        yield from _gm_range(op, gm._replace(row_stride=0), 1, gm.rows * gm.cols, size, config, "table")


def _rules_local_gather(op, t, gm, cmd, config):
    dst, src, idx = t["dst"], t["src0"], t["src1"]
    nepi = 1 << cmd["nepi_log2"]
    nv = cmd["num_valid"]
    X = idx.vc
    n = nv if nv else LOCAL_GATHER_GROUP * X
    if idx.vr != src.vr:
        yield Status.SHAPE_MISMATCH, f"{op.name}: index valid rows {idx.vr} != source valid rows {src.vr}"
    if (dst.vr, dst.vc) != (src.vr, n * nepi):
        yield Status.SHAPE_MISMATCH, (f"{op.name}: dst valid shape ({dst.vr}, {dst.vc}) != (source valid rows "
                                      f"{src.vr}, num_valid_indices {n} x num_elem_per_idx {nepi} = {n * nepi})")
    if cmd["nepi_log2"] > INSTRUCTIONS[op].limits["max_nepi_log2"]:
        yield Status.PARAM_INVALID, (f"{op.name}: nepi_log2 {cmd['nepi_log2']} > 5 (num_elem_per_idx {nepi} not "
                                     f"in 1, 2, 4, 8, 16, 32)")
    if nv > LOCAL_GATHER_MAX_INDICES:
        yield Status.PARAM_INVALID, f"{op.name}: num_valid_indices {nv} > {LOCAL_GATHER_MAX_INDICES}"
    if nv > LOCAL_GATHER_GROUP * X:
        yield Status.PARAM_INVALID, (f"{op.name}: num_valid_indices {nv} > indices per 16-row group "
                                     f"(16 x index valid cols {X} = {16 * X})")
    if src.vr % LOCAL_GATHER_GROUP:
        yield Status.DIM_OUT_OF_RANGE, f"{op.name}: source valid rows {src.vr} not a multiple of 16"
    if n > LOCAL_GATHER_MAX_INDICES:
        yield Status.DIM_OUT_OF_RANGE, (f"{op.name}: 16 x index valid cols {X} = {n} indices per group > "
                                        f"{LOCAL_GATHER_MAX_INDICES}")


def _rules_trowexpand(op, t, gm, cmd, config):
    """TROWEXPAND*: the full operand is the source with dst's valid shape (src0 when both have it), row-major
    [9]; the expanded operand's valid shape is its mode's (its layout picks the mode) [10]."""
    dst, s0, s1 = t["dst"], t["src0"], t["src1"]
    role = trowexpand_roles((dst.vr, dst.vc), (s0.vr, s0.vc), (s1.vr, s1.vc))
    if role is not None:
        full = (s0, s1)[role]
        if full.layout != Layout.ROW_MAJOR:
            yield Status.LAYOUT_UNSUPPORTED, f"{op.name}: full operand {full.slot} must be ROW_MAJOR"
    if role is None:
        yield Status.SHAPE_MISMATCH, (f"{op.name}: one of src0 valid ({s0.vr}, {s0.vc}) / src1 valid "
                                      f"({s1.vr}, {s1.vc}) must equal dst valid ({dst.vr}, {dst.vc})")
        return
    exp = (s1, s0)[role]
    mode, want = trowexpand_expanded_shape((dst.vr, dst.vc), exp.layout, dst.dtype)
    if (exp.vr, exp.vc) != want:
        both = (" (both sources have dst's valid shape: src1 is the expanded one)"
                if (s0.vr, s0.vc) == (s1.vr, s1.vc) else "")
        yield Status.SHAPE_MISMATCH, (f"{op.name}: expanded operand {exp.slot} (mode {mode}, {exp.layout.name}) "
                                      f"valid shape ({exp.vr}, {exp.vc}) must be {want}{both}")


def _rules_tpart(op, t, gm, cmd, config):
    dst, s0, s1 = t["dst"], t["src0"], t["src1"]
    if not tpart_pattern_ok((dst.vr, dst.vc), (s0.vr, s0.vc), (s1.vr, s1.vc)):
        yield Status.VALIDITY_PATTERN, (f"{op.name}: validity pattern src0 ({s0.vr}, {s0.vc}), src1 ({s1.vr}, "
                                        f"{s1.vc}), dst ({dst.vr}, {dst.vc}): one source must equal dst's valid "
                                        f"shape and the other must not exceed it")


def _init_like_c(op, init, c, *, valid):
    """TGEMV_ACC's / TGEMV_BIAS's third source (``init``, if any) has C's static shape, or its valid shape."""
    if not init:
        return
    got, want = ((init.vr, init.vc), (c.vr, c.vc)) if valid else ((init.rows, init.cols), (c.rows, c.cols))
    if got != want:
        yield Status.SHAPE_MISMATCH, (f"{op.name}: {_name(init)} {'valid' if valid else 'static'} shape {got} != C "
                                      f"{'valid ' if valid else ''}{want}")


def _rules_gemv(op, t, gm, cmd, config):
    c, a, b, init = t["dst"], t["src0"], t["src1"], t.get("src2")
    if a.rows != c.rows or a.cols != b.rows or b.cols != c.cols:
        yield Status.SHAPE_MISMATCH, (f"{op.name}: static shapes A ({a.rows}, {a.cols}), B ({b.rows}, {b.cols}), "
                                      f"C ({c.rows}, {c.cols}) must satisfy A.rows == C.rows, A.cols == B.rows, "
                                      f"B.cols == C.cols")
    yield from _init_like_c(op, init, c, valid=False)
    K, N = b.vr, b.vc
    if a.vr != c.vr or a.vc != K or c.vc != N:
        yield Status.SHAPE_MISMATCH, (f"{op.name}: valid shapes A ({a.vr}, {a.vc}), B ({K}, {N}), C ({c.vr}, "
                                      f"{c.vc}) must satisfy A.valid_rows == C.valid_rows, A.valid_cols == K, "
                                      f"C.valid_cols == N")
    yield from _init_like_c(op, init, c, valid=True)
    if c.vr != 1:
        yield Status.DIM_OUT_OF_RANGE, f"{op.name}: m = C valid rows {c.vr} must be 1"
    for name, v in (("K", K), ("N", N)):
        if not 1 <= v <= GEMV_MAX_DIM:
            yield Status.DIM_OUT_OF_RANGE, f"{op.name}: {name} = {v} (B valid shape) not in [1, {GEMV_MAX_DIM}]"


_RULES = {
    Opcode.TLOAD: _rules_transfer, Opcode.TSTORE: _rules_transfer,
    Opcode.MGATHER_ROW: _rules_mgather, Opcode.MGATHER_ELEM: _rules_mgather,
    Opcode.LOCAL_GATHER: _rules_local_gather,
    **{op: _rules_trowexpand for op in TROWEXPAND_FUNCTIONS},
    **{op: _rules_tpart for op in TPART_FUNCTIONS},
    Opcode.TGEMV: _rules_gemv, Opcode.TGEMV_ACC: _rules_gemv, Opcode.TGEMV_BIAS: _rules_gemv,
}


def _failures(cmd, config, supported=None, special=True):
    """(status, message) of every failing check, lazily, in checking order (the first one is the answer;
    later steps may assume that earlier ones passed, e.g. that dtype codes are valid)."""
    cmd = normalize(cmd)
    op = cmd["opcode"]
    if not isinstance(op, Opcode):
        yield Status.UNKNOWN_OPCODE, f"opcode {op:#04x} is not an instruction"
        return
    if supported is not None and op not in supported:
        yield Status.UNSUPPORTED, f"{op.name}: this configuration has no engine for it"
        return
    ins = INSTRUCTIONS[op]
    if not ins.slots and not ins.gm:
        return                  # TSYNC: no operands, nothing to check (its other fields are ignored)
    t = {s.name: tile_view(cmd, s.name, s.role) for s in ins.slots}
    gm = gm_view(cmd) if ins.gm else None
    yield from _common(ins, t, gm, config)
    if special:
        yield from _RULES[op](op, t, gm, cmd, config)


def check_strict(cmd, config, supported=None, *, special=True):
    """Raise ``IsaError`` with the status of the first failing check; return None for a legal command.

    ``supported``: optional set of the opcodes the hardware configuration has engines for; any other known
    opcode answers ``UNSUPPORTED`` (step 1b, right after UNKNOWN_OPCODE). None means all.
    """
    for status, message in _failures(cmd, config, supported, special):
        raise IsaError(status, message)


def check(cmd, config, supported=None, *, special=True):
    """The status the hardware answers for ``cmd`` before execution (``Status.OK`` when legal).

    ``special=False`` runs only the checks common to every instruction (the instruction table's: types,
    UB placement, layouts), which the hardware checker builds from the table; for testing it."""
    try:
        check_strict(cmd, config, supported, special=special)
    except IsaError as e:
        return e.status
    return Status.OK
