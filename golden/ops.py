"""Array-level semantics: one function per instruction.

Every function takes numpy arrays in *logical* (rows, cols) order at their static shape (storage order is
the machine's business) plus the descriptor values it needs, and returns a new destination array of the
destination's static shape in which only the destination's valid region (top-left ``valid`` block) is
computed; every other element keeps its value from the ``dst`` argument.

The functions check the data-level constraints they can see (types under the profile, shapes, valid
regions, parameters, validity patterns) and raise ``IsaError`` with the same status ``golden.check`` gives.
Descriptor-level constraints (UB alignment and range, GM alignment and range) are checked by
``golden.check`` only.
"""

import numpy as np

from rtl.isa import (DType, DTYPE_BYTES, EXPAND_BLOCK_BYTES, GEMV_MAX_DIM, GEMV_PARTIAL_SUMS, Layout,
    LOCAL_GATHER_GROUP, LOCAL_GATHER_MAX_INDICES, LOCAL_GATHER_MAX_NEPI_LOG2, OobMode, Opcode, Profile,
    Status)

from .errors import IsaError, UndefinedResult
from .numerics import add, bits, from_bits, mul, widening_product, dtype_of
from .numerics import canonicalize_nan, maximum, minimum, sub
from .profiles import TYPES, INDEX_TYPES, GEMV_TRIPLES, gemv_roles

__all__ = [
    "tload", "tstore", "mgather_row", "mgather_elem", "local_gather", "trowexpandmul", "trowexpandadd",
    "trowexpandsub", "trowexpandmax", "trowexpandmin", "tpartadd", "tpartmul", "tpartmax", "tpartmin",
    "trowexpand_roles", "tpart_pattern_ok", "TROWEXPAND_FUNCTIONS", "TPART_FUNCTIONS", "tgemv", "tgemv_acc",
    "tgemv_bias", "gemv_reduce", "resolve_indices", "tsync",
    "GEMV_MAX_DIM", "LOCAL_GATHER_GROUP", "LOCAL_GATHER_MAX_INDICES",
]

LOCAL_GATHER_NEPI = tuple(1 << k for k in range(LOCAL_GATHER_MAX_NEPI_LOG2 + 1))   # 1, 2, 4, ..., 32


def _fail(status, msg):
    raise IsaError(status, msg)


def _valid(v, name):
    r, c = (int(x) for x in v)
    return r, c


def _check_static(arr, valid, name):
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D array, got shape {arr.shape}")
    r, c = valid
    if r > arr.shape[0] or c > arr.shape[1]:
        _fail(Status.VALID_EXCEEDS_STATIC,
              f"{name}: valid shape ({r}, {c}) exceeds static shape {arr.shape}")


def _types(op, profile, **arrays):
    """Type checks of a single-type instruction: every array in the op's set, all equal."""
    allowed = TYPES[op][profile]
    dts = {name: dtype_of(a) for name, a in arrays.items()}
    for name, dt in dts.items():
        if dt not in allowed:
            _fail(Status.DTYPE_UNSUPPORTED,
                  f"{op.name}: {name} type {dt.name} not accepted in profile {profile.value} "
                  f"(accepted: {sorted(t.name for t in allowed) or 'none'})")
    first = next(iter(dts.items()))
    for name, dt in dts.items():
        if dt != first[1]:
            _fail(Status.DTYPE_MISMATCH, f"{op.name}: {name} type {dt.name} != {first[0]} type {first[1].name}")
    return first[1]


def _write_valid(dst, region):
    """Copy of ``dst`` with its top-left ``region.shape`` block replaced by ``region`` (bits unchanged)."""
    out = np.array(dst, copy=True)
    r, c = region.shape
    bits(out)[:r, :c] = bits(np.asarray(region, dtype=out.dtype))
    return out


# ------------------------------------------------------------------------------------------------ TLOAD/TSTORE

def tload(dst, dst_valid, block):
    """TLOAD: ``dst[i, j] = block[i, j]`` over the valid region; bits unchanged. ``block`` is the GM region,
    shape == valid shape, same type."""
    dst = np.asarray(dst)
    r, c = _valid(dst_valid, "dst")
    _check_static(dst, (r, c), "dst")
    block = np.asarray(block)
    if block.dtype != dst.dtype:
        _fail(Status.DTYPE_MISMATCH, f"TLOAD: GM type {block.dtype} != tile type {dst.dtype}")
    if block.shape != (r, c):
        _fail(Status.SHAPE_MISMATCH, f"TLOAD: GM region shape {block.shape} != tile valid shape ({r}, {c})")
    return _write_valid(dst, block)


def tstore(src, src_valid):
    """TSTORE: the GM region (shape = valid shape) receives ``src``'s valid region; bits unchanged."""
    src = np.asarray(src)
    r, c = _valid(src_valid, "src")
    _check_static(src, (r, c), "src")
    return from_bits(bits(src)[:r, :c].copy(), dtype_of(src))


def tsync():
    """TSYNC: a barrier; no data changes. Its response comes when every instruction before it has finished
    (docs/semantics.md, "TSYNC"); one instruction at a time, as this model runs them, that is at once."""
    return None


# ------------------------------------------------------------------------------------------------ MGATHER

def resolve_indices(idx, size, oob):
    """Apply an out-of-bounds mode to indices (read as uint32) for a table of ``size`` entries.

    Returns ``(effective, read)``: ``effective`` int64 indices into the table (meaningful where ``read``),
    ``read`` a boolean mask: False where the result is zero (ZERO mode, out of range) or undefined
    (UNDEFINED mode, out of range).
    """
    u = bits(np.asarray(idx)).astype(np.int64) & 0xFFFFFFFF
    inside = u < size
    oob = OobMode(oob)
    if oob == OobMode.CLAMP:
        return np.minimum(u, size - 1), np.ones_like(inside)
    if oob == OobMode.WRAP:
        return u % size, np.ones_like(inside)
    return np.where(inside, u, 0), inside


def _mgather_types(op, dst, idx, table, profile):
    dt = dtype_of(dst)
    allowed = TYPES[op][profile]
    if dt not in allowed:
        _fail(Status.DTYPE_UNSUPPORTED, f"{op.name}: dst type {dt.name} not accepted in profile "
                                        f"{profile.value} (accepted: {sorted(t.name for t in allowed) or 'none'})")
    if np.dtype(table.dtype) != dst.dtype:
        _fail(Status.DTYPE_MISMATCH, f"{op.name}: table type {table.dtype} != dst type {dst.dtype}")
    it = dtype_of(idx)
    if it not in INDEX_TYPES[op]:
        _fail(Status.INDEX_DTYPE, f"{op.name}: index tile type {it.name} is not INT32 or UINT32")
    return dt


def mgather_row(dst, dst_valid, idx, idx_valid, table, oob=OobMode.UNDEFINED, *, profile=Profile.A5):
    """MGATHER row mode: ``dst[i, j] = table[idx[i, 0], j]`` for ``i < R, j < C`` (R, C = dst valid shape).

    ``table`` has shape (table rows, row width) (any object with ``shape``, ``dtype`` and row fancy-indexing
    works, e.g. the machine's lazy GM view); row width must equal C. Index tile: static rows == dst rows,
    static cols == 1, valid shape (R, 1). Raises ``UndefinedResult`` (with ``elements`` and ``partial``, the
    result with those rows left unchanged) in UNDEFINED mode when an index is >= table rows.
    """
    op = Opcode.MGATHER_ROW
    dst, idx = np.asarray(dst), np.asarray(idx)
    dt = _mgather_types(op, dst, idx, table, profile)
    R, C = _valid(dst_valid, "dst")
    ir, ic = _valid(idx_valid, "idx")
    _check_static(dst, (R, C), "dst")
    _check_static(idx, (ir, ic), "idx")
    if idx.shape[0] != dst.shape[0] or idx.shape[1] != 1:
        _fail(Status.SHAPE_MISMATCH, f"MGATHER_ROW: index tile static shape {idx.shape} must be ({dst.shape[0]}, 1)")
    if (ir, ic) != (R, 1):
        _fail(Status.SHAPE_MISMATCH, f"MGATHER_ROW: index tile valid shape ({ir}, {ic}) must be ({R}, 1)")
    rows, width = (int(x) for x in table.shape)
    if width != C:
        _fail(Status.SHAPE_MISMATCH, f"MGATHER_ROW: table row width {width} != dst valid cols {C}")
    if R and C and rows == 0:
        _fail(Status.DIM_OUT_OF_RANGE, "MGATHER_ROW: table has 0 rows")
    out = np.array(dst, copy=True)
    if R == 0 or C == 0:
        return out
    eff, read = resolve_indices(idx[:R, 0], rows, oob)
    ob = bits(out)
    ob[:R, :C] = 0
    if read.any():
        ob[np.nonzero(read)[0], :C] = bits(np.asarray(table[eff[read]], dtype=dst.dtype))
    undefined = ~read if OobMode(oob) == OobMode.UNDEFINED else np.zeros_like(read)
    if undefined.any():
        ob[np.nonzero(undefined)[0], :C] = bits(dst)[np.nonzero(undefined)[0], :C]
        mask = np.zeros(dst.shape, bool)
        mask[np.nonzero(undefined)[0], :C] = True
        bad = np.nonzero(undefined)[0]
        e = UndefinedResult(f"MGATHER_ROW: UNDEFINED mode and index {int(bits(idx)[bad[0], 0])} (row {bad[0]}, "
                            f"{len(bad)} rows in all) >= table rows {rows}", mask)
        e.partial = out
        raise e
    return out


def mgather_elem(dst, dst_valid, idx, idx_valid, table, oob=OobMode.UNDEFINED, *, profile=Profile.A5):
    """MGATHER element mode: ``dst[i, j] = table[idx[i, j]]`` over dst's valid region.

    ``table`` is 1-D (the table's rows x cols elements, row after row). Index tile: static shape == dst
    static shape, valid shape == dst valid shape. UNDEFINED mode with an index >= table size raises
    ``UndefinedResult`` (``elements``, ``partial``).
    """
    op = Opcode.MGATHER_ELEM
    dst, idx = np.asarray(dst), np.asarray(idx)
    _mgather_types(op, dst, idx, table, profile)
    R, C = _valid(dst_valid, "dst")
    ir, ic = _valid(idx_valid, "idx")
    _check_static(dst, (R, C), "dst")
    _check_static(idx, (ir, ic), "idx")
    if idx.shape != dst.shape:
        _fail(Status.SHAPE_MISMATCH, f"MGATHER_ELEM: index tile static shape {idx.shape} != dst {dst.shape}")
    if (ir, ic) != (R, C):
        _fail(Status.SHAPE_MISMATCH, f"MGATHER_ELEM: index tile valid shape ({ir}, {ic}) != dst ({R}, {C})")
    size = int(table.shape[0])
    if R and C and size == 0:
        _fail(Status.DIM_OUT_OF_RANGE, "MGATHER_ELEM: table has 0 elements")
    out = np.array(dst, copy=True)
    if R == 0 or C == 0:
        return out
    eff, read = resolve_indices(idx[:R, :C], size, oob)
    ob = bits(out)
    region = np.zeros((R, C), ob.dtype)
    if read.any():
        region[read] = bits(np.asarray(table[eff[read]], dtype=dst.dtype))
    undefined = ~read if OobMode(oob) == OobMode.UNDEFINED else np.zeros_like(read)
    region[undefined] = bits(dst)[:R, :C][undefined]
    ob[:R, :C] = region
    if undefined.any():
        mask = np.zeros(dst.shape, bool)
        mask[:R, :C] = undefined
        i, j = (int(x[0]) for x in np.nonzero(undefined))
        e = UndefinedResult(f"MGATHER_ELEM: UNDEFINED mode and index {int(bits(idx)[i, j])} at ({i}, {j}) "
                            f"({int(undefined.sum())} elements in all) >= table size {size}", mask)
        e.partial = out
        raise e
    return out


# ------------------------------------------------------------------------------------------------ local_gather

def local_gather_indices(idx, idx_valid, group, num_valid):
    """``indices_1d`` of 16-row group ``group``: the group's valid index block flattened partition-first."""
    X = idx_valid[1]
    block = np.asarray(idx)[group * 16:(group + 1) * 16, :X]
    return block.flatten(order="F")[:num_valid].astype(np.int64)


def local_gather(dst, dst_valid, src, src_valid, idx, idx_valid, num_elem_per_idx=1, num_valid_indices=0, *,
                 profile=Profile.A5):
    """NKI local_gather inside the UB.

    ``src`` valid shape R x C (R a multiple of 16), ``idx`` uint16 with valid shape R x X holding element
    offsets. For each group g of 16 rows, ``indices_1d`` = the group's index block (16 x X) flattened
    partition-first (Fortran order), cut to n = ``num_valid_indices`` (0 means 16 X). Then for p in the group,
    ``dst[p, k * nepi + e] = src[p, indices_1d[k] + e]`` for k < n, e < nepi. dst valid shape must be
    (R, n * nepi). An offset with ``indices_1d[k] + nepi > C`` makes those nepi columns of the group's 16
    rows undefined (``UndefinedResult`` with ``elements`` and ``partial``).
    """
    op = Opcode.LOCAL_GATHER
    dst, src, idx = np.asarray(dst), np.asarray(src), np.asarray(idx)
    _types(op, profile, dst=dst, src=src)
    if dtype_of(idx) != DType.UINT16:
        _fail(Status.INDEX_DTYPE, f"LOCAL_GATHER: index tile type {dtype_of(idx).name} is not UINT16")
    R, C = _valid(src_valid, "src")
    ir, X = _valid(idx_valid, "idx")
    dr, dc = _valid(dst_valid, "dst")
    for a, v, name in ((dst, (dr, dc), "dst"), (src, (R, C), "src"), (idx, (ir, X), "idx")):
        _check_static(a, v, name)
    nepi = int(num_elem_per_idx)
    nv = int(num_valid_indices)
    n = nv if nv else LOCAL_GATHER_GROUP * X
    if ir != R:
        _fail(Status.SHAPE_MISMATCH, f"LOCAL_GATHER: index valid rows {ir} != source valid rows {R}")
    if (dr, dc) != (R, n * nepi):
        _fail(Status.SHAPE_MISMATCH, f"LOCAL_GATHER: dst valid shape ({dr}, {dc}) != (source valid rows {R}, "
                                     f"num_valid_indices {n} x num_elem_per_idx {nepi} = {n * nepi})")
    if nepi not in LOCAL_GATHER_NEPI:
        _fail(Status.PARAM_INVALID, f"LOCAL_GATHER: num_elem_per_idx {nepi} not in {LOCAL_GATHER_NEPI}")
    if nv > LOCAL_GATHER_MAX_INDICES:
        _fail(Status.PARAM_INVALID, f"LOCAL_GATHER: num_valid_indices {nv} > {LOCAL_GATHER_MAX_INDICES}")
    if nv > LOCAL_GATHER_GROUP * X:
        _fail(Status.PARAM_INVALID, f"LOCAL_GATHER: num_valid_indices {nv} > indices per 16-row group "
                                    f"(16 x {X} = {16 * X})")
    if R % LOCAL_GATHER_GROUP:
        _fail(Status.DIM_OUT_OF_RANGE, f"LOCAL_GATHER: source valid rows {R} not a multiple of 16")
    if n > LOCAL_GATHER_MAX_INDICES:
        _fail(Status.DIM_OUT_OF_RANGE, f"LOCAL_GATHER: 16 x index valid cols {X} = {n} indices per group "
                                       f"> {LOCAL_GATHER_MAX_INDICES}")
    out = np.array(dst, copy=True)
    ob, sb = bits(out), bits(src)
    mask = np.zeros(dst.shape, bool)
    first_bad = None
    for g in range(R // LOCAL_GATHER_GROUP):
        offs = local_gather_indices(idx, (ir, X), g, n)
        cols = (offs[:, None] + np.arange(nepi)[None, :]).reshape(-1)          # (n * nepi,)
        ok_k = offs + nepi <= C                                                  # per index
        ok = np.repeat(ok_k, nepi)
        rows = slice(g * 16, (g + 1) * 16)
        block = ob[rows, :n * nepi]
        block[:, ok] = sb[rows][:, cols[ok]]
        if not ok.all():
            mask[rows, np.nonzero(~ok)[0]] = True
            if first_bad is None:
                k = int(np.nonzero(~ok_k)[0][0])
                first_bad = (g, k, int(offs[k]))
    if first_bad is not None:
        g, k, o = first_bad
        e = UndefinedResult(f"LOCAL_GATHER: offset {o} (group {g}, index {k}) + num_elem_per_idx {nepi} > "
                            f"source valid cols {C}", mask)
        e.partial = out
        raise e
    return out


# ------------------------------------------------------------------------------------------------ TROWEXPAND*

def _elementwise_operands(op, profile, dst, dst_valid, src0, src0_valid, src1, src1_valid):
    """The common prologue of the two-source elementwise instructions: arrays, the element type (types
    checked under ``profile``), dst's valid shape and the sources' valid shapes (each within its static
    shape)."""
    dst, src0, src1 = np.asarray(dst), np.asarray(src0), np.asarray(src1)
    dt = _types(op, profile, dst=dst, src0=src0, src1=src1)
    R, C = _valid(dst_valid, "dst")
    v0, v1 = _valid(src0_valid, "src0"), _valid(src1_valid, "src1")
    for a, v, name in ((dst, (R, C), "dst"), (src0, v0, "src0"), (src1, v1, "src1")):
        _check_static(a, v, name)
    return dst, src0, src1, dt, (R, C), v0, v1


def trowexpand_roles(dst_valid, src0_valid, src1_valid):
    """Which source is the full operand of a TROWEXPAND* instruction: 0 or 1, or None when neither has dst's
    valid shape. When both have it, src0 is the full operand and src1 the expanded one (0)."""
    m0 = tuple(src0_valid) == tuple(dst_valid)
    m1 = tuple(src1_valid) == tuple(dst_valid)
    if not (m0 or m1):
        return None
    return 0 if m0 else 1


#: The former name of :func:`trowexpand_roles` (the rule is the whole family's).
trowexpandmul_roles = trowexpand_roles


def trowexpand_expanded_shape(dst_valid, layout, dtype):
    """(mode, valid shape) the expanded operand must have: COL_MAJOR -> mode 1, ``(R, 1)``; ROW_MAJOR ->
    mode 2, ``(R, 32 / size)`` (``dtype`` a ``DType``)."""
    R = int(dst_valid[0])
    if Layout(layout) == Layout.COL_MAJOR:
        return 1, (R, 1)
    return 2, (R, EXPAND_BLOCK_BYTES // DTYPE_BYTES[dtype])


def _trowexpand(op, fn, dst, dst_valid, src0, src0_valid, src0_layout, src1, src1_valid, src1_layout, dst_layout,
                profile):
    name = op.name
    dst, src0, src1, dt, (R, C), v0, v1 = _elementwise_operands(op, profile, dst, dst_valid, src0, src0_valid,
                                                                src1, src1_valid)
    if Layout(dst_layout) != Layout.ROW_MAJOR:
        _fail(Status.LAYOUT_UNSUPPORTED, f"{name}: dst must be ROW_MAJOR")
    role = trowexpand_roles((R, C), v0, v1)
    layouts = (Layout(src0_layout), Layout(src1_layout))
    if role is not None and layouts[role] != Layout.ROW_MAJOR:
        _fail(Status.LAYOUT_UNSUPPORTED, f"{name}: full operand src{role} must be ROW_MAJOR")
    if role is None:
        _fail(Status.SHAPE_MISMATCH, f"{name}: one of src0 valid {v0} / src1 valid {v1} must equal dst valid "
                                     f"({R}, {C})")
    full, exp = (src0, src1) if role == 0 else (src1, src0)
    ev, elay = (v1, layouts[1]) if role == 0 else (v0, layouts[0])
    mode, want = trowexpand_expanded_shape((R, C), elay, dt)
    if ev != want:
        both = " (both sources have dst's valid shape: src1 is the expanded one)" if v0 == v1 else ""
        _fail(Status.SHAPE_MISMATCH, f"{name}: expanded operand src{1 - role} (mode {mode}) valid shape {ev} "
                                     f"must be {want}{both}")
    if mode == 1:
        e = np.repeat(exp[:R, :1], C, axis=1)
    else:
        e = exp[:R, np.arange(C) % want[1]] if C else exp[:R, :0]
    f = full[:R, :C]
    res = fn(f, e, dt) if role == 0 else fn(e, f, dt)
    return _write_valid(dst, res)


def trowexpandmul(dst, dst_valid, src0, src0_valid, src0_layout, src1, src1_valid, src1_layout, *,
                  dst_layout=Layout.ROW_MAJOR, profile=Profile.A5):
    """Row-broadcast multiply. One of src0 / src1 (the *full* operand, row-major) has dst's valid shape
    (R, C); the other is the *expanded* operand (when both have it, src1 is the expanded one):

    * mode 1, expanded operand COL_MAJOR with valid shape (R, 1): ``dst[i, j] = full[i, j] * e[i, 0]``;
    * mode 2, expanded operand ROW_MAJOR with valid shape (R, 32 / size):
      ``dst[i, j] = full[i, j] * e[i, j mod (32 / size)]``.

    Integers wrap; floats RNE with canonical NaN. The siblings (``trowexpandadd``, ``trowexpandsub``,
    ``trowexpandmax``, ``trowexpandmin``) take the same arguments; the result is always
    ``op(src0 value, src1 value)``.
    """
    return _trowexpand(Opcode.TROWEXPANDMUL, mul, dst, dst_valid, src0, src0_valid, src0_layout, src1, src1_valid,
                       src1_layout, dst_layout, profile)


def trowexpandadd(dst, dst_valid, src0, src0_valid, src0_layout, src1, src1_valid, src1_layout, *,
                  dst_layout=Layout.ROW_MAJOR, profile=Profile.A5):
    """Row-broadcast add: as :func:`trowexpandmul` with ``full + e`` (``numerics.add``)."""
    return _trowexpand(Opcode.TROWEXPANDADD, add, dst, dst_valid, src0, src0_valid, src0_layout, src1, src1_valid,
                       src1_layout, dst_layout, profile)


def trowexpandsub(dst, dst_valid, src0, src0_valid, src0_layout, src1, src1_valid, src1_layout, *,
                  dst_layout=Layout.ROW_MAJOR, profile=Profile.A5):
    """Row-broadcast subtract, always src0 - src1 (``numerics.sub``): ``dst[i, j] = src0[i, j] - e[i, .]``
    when src1 is expanded, ``dst[i, j] = e[i, .] - src1[i, j]`` when src0 is."""
    return _trowexpand(Opcode.TROWEXPANDSUB, sub, dst, dst_valid, src0, src0_valid, src0_layout, src1, src1_valid,
                       src1_layout, dst_layout, profile)


def trowexpandmax(dst, dst_valid, src0, src0_valid, src0_layout, src1, src1_valid, src1_layout, *,
                  dst_layout=Layout.ROW_MAJOR, profile=Profile.A5):
    """Row-broadcast maximum (``numerics.maximum``)."""
    return _trowexpand(Opcode.TROWEXPANDMAX, maximum, dst, dst_valid, src0, src0_valid, src0_layout, src1,
                       src1_valid, src1_layout, dst_layout, profile)


def trowexpandmin(dst, dst_valid, src0, src0_valid, src0_layout, src1, src1_valid, src1_layout, *,
                  dst_layout=Layout.ROW_MAJOR, profile=Profile.A5):
    """Row-broadcast minimum (``numerics.minimum``)."""
    return _trowexpand(Opcode.TROWEXPANDMIN, minimum, dst, dst_valid, src0, src0_valid, src0_layout, src1,
                       src1_valid, src1_layout, dst_layout, profile)


# ------------------------------------------------------------------------------------------------ TPART*

def tpart_pattern_ok(dst_valid, src0_valid, src1_valid):
    """The seed's supported validity patterns: one source's valid shape equals dst's, the other's does not
    exceed dst's in either dimension. (A zero dst valid region is always accepted: early return.)"""
    R, C = dst_valid
    if R == 0 or C == 0:
        return True
    v0, v1 = tuple(src0_valid), tuple(src1_valid)
    fits = lambda v: v[0] <= R and v[1] <= C
    return (v0 == (R, C) and fits(v1)) or (v1 == (R, C) and fits(v0))


#: The former name of :func:`tpart_pattern_ok` (the rule is the whole family's).
tpartadd_pattern_ok = tpart_pattern_ok


def _tpart(op, fn, dst, dst_valid, src0, src0_valid, src1, src1_valid, profile):
    dst, src0, src1, dt, (R, C), v0, v1 = _elementwise_operands(op, profile, dst, dst_valid, src0, src0_valid,
                                                                src1, src1_valid)
    if not tpart_pattern_ok((R, C), v0, v1):
        _fail(Status.VALIDITY_PATTERN, f"{op.name}: validity pattern src0 {v0}, src1 {v1}, dst ({R}, {C}): one "
                                       f"source must equal dst's valid shape, the other must not exceed it")
    out = np.array(dst, copy=True)
    if R == 0 or C == 0:
        return out
    ii, jj = np.meshgrid(np.arange(R), np.arange(C), indexing="ij")
    in0 = (ii < v0[0]) & (jj < v0[1])
    in1 = (ii < v1[0]) & (jj < v1[1])
    a = np.zeros((R, C), dst.dtype)
    b = np.zeros((R, C), dst.dtype)
    bits(a)[: v0[0], : v0[1]] = bits(src0)[: v0[0], : v0[1]]
    bits(b)[: v1[0], : v1[1]] = bits(src1)[: v1[0], : v1[1]]
    s = fn(a, b, dt)
    region = np.where(in0 & in1, bits(s), np.where(in0, bits(a), bits(b)))
    bits(out)[:R, :C] = region
    return out


def tpartadd(dst, dst_valid, src0, src0_valid, src1, src1_valid, *, profile=Profile.A5):
    """Partial add over dst's valid region: both sources valid at (i, j) -> sum (wrapping / RNE, canonical
    NaN); only one valid -> a bit-exact copy of it. The siblings (``tpartmul``, ``tpartmax``, ``tpartmin``)
    take the same arguments."""
    return _tpart(Opcode.TPARTADD, add, dst, dst_valid, src0, src0_valid, src1, src1_valid, profile)


def tpartmul(dst, dst_valid, src0, src0_valid, src1, src1_valid, *, profile=Profile.A5):
    """Partial multiply: as :func:`tpartadd` with ``src0 x src1`` (``numerics.mul``) where both are valid."""
    return _tpart(Opcode.TPARTMUL, mul, dst, dst_valid, src0, src0_valid, src1, src1_valid, profile)


def tpartmax(dst, dst_valid, src0, src0_valid, src1, src1_valid, *, profile=Profile.A5):
    """Partial maximum: as :func:`tpartadd` with ``max(src0, src1)`` (``numerics.maximum``)."""
    return _tpart(Opcode.TPARTMAX, maximum, dst, dst_valid, src0, src0_valid, src1, src1_valid, profile)


def tpartmin(dst, dst_valid, src0, src0_valid, src1, src1_valid, *, profile=Profile.A5):
    """Partial minimum: as :func:`tpartadd` with ``min(src0, src1)`` (``numerics.minimum``)."""
    return _tpart(Opcode.TPARTMIN, minimum, dst, dst_valid, src0, src0_valid, src1, src1_valid, profile)


#: The array function of every TROWEXPAND* / TPART* opcode (same arguments within a family).
TROWEXPAND_FUNCTIONS = {Opcode.TROWEXPANDMUL: trowexpandmul, Opcode.TROWEXPANDADD: trowexpandadd,
                        Opcode.TROWEXPANDSUB: trowexpandsub, Opcode.TROWEXPANDMAX: trowexpandmax,
                        Opcode.TROWEXPANDMIN: trowexpandmin}
TPART_FUNCTIONS = {Opcode.TPARTADD: tpartadd, Opcode.TPARTMUL: tpartmul, Opcode.TPARTMAX: tpartmax,
                   Opcode.TPARTMIN: tpartmin}


# ------------------------------------------------------------------------------------------------ TGEMV

#: ``partial_sums`` when not given: the ISA's reference P (``rtl.isa.GEMV_PARTIAL_SUMS``, also the default
#: of a configuration's ``gemv_partial_sums``).
DEFAULT_PARTIAL_SUMS = GEMV_PARTIAL_SUMS

def gemv_reduce(products, init, partial_sums):
    """The defined fp32 accumulation order (see docs/semantics.md, "TGEMV accumulation order").

    ``products``: float32 (K, N), already rounded and NaN-canonical; ``init``: float32 (N,). Product k goes to
    partial sum ``k mod P``; each partial sum starts at -0.0 and adds its products in increasing k (fp32
    RNE); the P sums are combined pairwise level by level ((s0+s1), (s2+s3), ...); finally init + tree.
    """
    P = int(partial_sums)
    if P < 1 or P & (P - 1):
        raise ValueError(f"partial_sums={P} must be a power of two")
    K, N = products.shape
    T = -(-K // P)
    padded = np.full((T * P, N), -0.0, np.float32)
    padded[:K] = products
    s = np.full((P, N), -0.0, np.float32)
    with np.errstate(all="ignore"):
        for t in range(T):
            s = s + padded[t * P:(t + 1) * P]          # adding -0.0 is the exact identity
        while s.shape[0] > 1:
            s = s[0::2] + s[1::2]
        r = np.asarray(init, np.float32) + s[0]
    return canonicalize_nan(r, DType.FP32)


def _gemv(variant, c, c_valid, init, init_valid, a, a_valid, b, b_valid, partial_sums, profile):
    op = {"": Opcode.TGEMV, "acc": Opcode.TGEMV_ACC, "bias": Opcode.TGEMV_BIAS}[variant]
    c, a, b = np.asarray(c), np.asarray(a), np.asarray(b)
    ct, at, bt = dtype_of(c), dtype_of(a), dtype_of(b)
    accs, as_, bs = gemv_roles(profile)
    named = [("C", ct, accs), ("A", at, as_), ("B", bt, bs)]
    if init is not None:
        init = np.asarray(init)
        named.append(("C_in" if variant == "acc" else "bias", dtype_of(init), accs))
    for name, t, allowed in named:
        if t not in allowed:
            _fail(Status.DTYPE_UNSUPPORTED, f"{op.name}: {name} type {t.name} not accepted in profile "
                                            f"{profile.value} (accepted: {sorted(x.name for x in allowed)})")
    if (ct, at, bt) not in GEMV_TRIPLES[profile]:
        _fail(Status.DTYPE_MISMATCH, f"{op.name}: (C, A, B) types ({ct.name}, {at.name}, {bt.name}) not a "
                                     f"supported triple in profile {profile.value}")
    if init is not None and dtype_of(init) != ct:
        _fail(Status.DTYPE_MISMATCH, f"{op.name}: {named[3][0]} type {dtype_of(init).name} != C type {ct.name}")
    m, n_c = _valid(c_valid, "C")
    am, ak = _valid(a_valid, "A")
    K, N = _valid(b_valid, "B")
    ops = [(c, (m, n_c), "C"), (a, (am, ak), "A"), (b, (K, N), "B")]
    if init is not None:
        iv = _valid(init_valid, named[3][0])
        ops.append((init, iv, named[3][0]))
    for arr, v, name in ops:
        _check_static(arr, v, name)
    if a.shape[0] != c.shape[0] or a.shape[1] != b.shape[0] or b.shape[1] != c.shape[1]:
        _fail(Status.SHAPE_MISMATCH, f"{op.name}: static shapes A {a.shape}, B {b.shape}, C {c.shape} must satisfy "
                                     f"A.rows == C.rows, A.cols == B.rows, B.cols == C.cols")
    if init is not None and init.shape != c.shape:
        _fail(Status.SHAPE_MISMATCH, f"{op.name}: {named[3][0]} static shape {init.shape} != C {c.shape}")
    if am != m or ak != K or n_c != N:
        _fail(Status.SHAPE_MISMATCH, f"{op.name}: valid shapes A ({am}, {ak}), B ({K}, {N}), C ({m}, {n_c}) must "
                                     f"satisfy A.valid_rows == C.valid_rows, A.valid_cols == K, C.valid_cols == N")
    if init is not None and iv != (m, n_c):
        _fail(Status.SHAPE_MISMATCH, f"{op.name}: {named[3][0]} valid shape {iv} != C valid ({m}, {n_c})")
    if m != 1:
        _fail(Status.DIM_OUT_OF_RANGE, f"{op.name}: m = C valid rows = {m} must be 1")
    for name, v in (("K", K), ("N", N)):
        if not 1 <= v <= GEMV_MAX_DIM:
            _fail(Status.DIM_OUT_OF_RANGE, f"{op.name}: {name} = {v} not in [1, {GEMV_MAX_DIM}]")
    av, bm = a[0, :K], b[:K, :N]
    if ct == DType.INT32:
        acc = (av.astype(np.int64)[:, None] * bm.astype(np.int64)).sum(axis=0)
        if init is not None:
            acc = acc + init[0, :N].astype(np.int64)
        res = (acc & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    else:
        prods = widening_product(av[:, None], bm)
        start = init[0, :N] if init is not None else np.zeros(N, np.float32)
        res = gemv_reduce(prods, start, partial_sums)
    out = np.array(c, copy=True)
    bits(out)[0, :N] = bits(np.asarray(res, c.dtype))
    return out


def tgemv(c, c_valid, a, a_valid, b, b_valid, *, partial_sums=DEFAULT_PARTIAL_SUMS, profile=Profile.A5):
    """``C[0, j] = +0 + sum_k A[0, k] * B[k, j]`` for j < N (K, N = B valid shape), accumulation order as in
    ``gemv_reduce`` with P = ``partial_sums`` (= ``config.gemv_partial_sums``)."""
    return _gemv("", c, c_valid, None, None, a, a_valid, b, b_valid, partial_sums, profile)


def tgemv_acc(c, c_valid, c_in, c_in_valid, a, a_valid, b, b_valid, *, partial_sums=DEFAULT_PARTIAL_SUMS, profile=Profile.A5):
    """``C_out[0, j] = C_in[0, j] + sum_k A[0, k] * B[k, j]``. ``c`` is the old C_out (it may be C_in)."""
    return _gemv("acc", c, c_valid, c_in, c_in_valid, a, a_valid, b, b_valid, partial_sums, profile)


def tgemv_bias(c, c_valid, bias, bias_valid, a, a_valid, b, b_valid, *, partial_sums=DEFAULT_PARTIAL_SUMS, profile=Profile.A5):
    """``C[0, j] = bias[0, j] + sum_k A[0, k] * B[k, j]`` (bias type = accumulator type)."""
    return _gemv("bias", c, c_valid, bias, bias_valid, a, a_valid, b, b_valid, partial_sums, profile)
