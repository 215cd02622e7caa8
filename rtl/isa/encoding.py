"""The instruction set: opcodes, data types, descriptor layouts.

This module is the single source of truth for every encoding the unit understands. The RTL decodes
these layouts, the driver in ``sim/`` encodes them (``layout.const(...)``), and the golden model and
tests take their enums from here. Nothing else in the tree may restate a field width or a code.

An instruction is one :data:`Command` word carried by one transfer on the command stream. Operand
slots are generic (``dst``, ``src0``, ``src1``, ``src2``, ``gm``); the table in ``docs/architecture.md``
says what each opcode puts in each slot.
"""

import enum as py_enum

from amaranth.lib import data, enum

from rtl.isa import Status

__all__ = [
    "Opcode", "DType", "Layout", "OobMode", "TileDesc", "GmDesc", "Command", "Response",
    "DTYPE_BYTES", "COMMAND_BITS", "RESPONSE_BITS", "UB_ALIGN", "Profile",
    "encode", "decode", "tile", "gm_region",
]

#: Tiles start at addresses aligned to this many bytes in the unified buffer.
UB_ALIGN = 32


class Opcode(enum.Enum, shape=8):
    """Operation codes. Gaps are reserved; any code not listed answers ``Status.UNKNOWN_OPCODE``."""
    TLOAD         = 0x01  #: GM -> UB tile (valid region), 2-D strided
    TSTORE        = 0x02  #: UB tile (valid region) -> GM, 2-D strided
    MGATHER_ROW   = 0x10  #: dst[i, :] = table[idx[i], :]            (seed MGATHER.txt)
    MGATHER_ELEM  = 0x11  #: dst[i, j] = table_flat[idx[i, j]]       (seed MGATHER.txt)
    LOCAL_GATHER  = 0x12  #: NKI local_gather inside the UB          (seed nki_local_gather.txt)
    TROWEXPANDMUL = 0x20  #: row-broadcast multiply                  (seed TROWEXPANDMUL.txt)
    TPARTADD      = 0x21  #: add with partial validity               (seed TPARTADD.txt)
    TROWEXPANDADD = 0x22  #: row-broadcast add                       (TROWEXPANDMUL's sibling, beyond the seeds)
    TROWEXPANDSUB = 0x23  #: row-broadcast subtract, src0 - src1     (TROWEXPANDMUL's sibling, beyond the seeds)
    TROWEXPANDMAX = 0x24  #: row-broadcast maximum                   (TROWEXPANDMUL's sibling, beyond the seeds)
    TROWEXPANDMIN = 0x25  #: row-broadcast minimum                   (TROWEXPANDMUL's sibling, beyond the seeds)
    TPARTMUL      = 0x26  #: multiply with partial validity          (TPARTADD's sibling, beyond the seeds)
    TPARTMAX      = 0x27  #: maximum with partial validity           (TPARTADD's sibling, beyond the seeds)
    TPARTMIN      = 0x28  #: minimum with partial validity           (TPARTADD's sibling, beyond the seeds)
    TGEMV         = 0x30  #: C = A x B                               (seed TGEMV_ACC.txt)
    TGEMV_ACC     = 0x31  #: C_out = C_in + A x B
    TGEMV_BIAS    = 0x32  #: C = bias + A x B
    TSYNC         = 0x40  #: barrier: answers when every instruction before it has finished (PTO's TSYNC)


class DType(enum.Enum, shape=4):
    """Element data types. Codes 11..15 are reserved and answer ``Status.DTYPE_INVALID``."""
    INT8    = 0
    UINT8   = 1
    INT16   = 2
    UINT16  = 3
    INT32   = 4
    UINT32  = 5
    FP16    = 6   #: IEEE-754 binary16 ("half")
    BF16    = 7   #: bfloat16
    FP32    = 8   #: IEEE-754 binary32 ("float")
    FP8E4M3 = 9   #: float8 e4m3fn (ml_dtypes.float8_e4m3fn: no infinity, S.1111.111 is NaN)
    FP8E5M2 = 10  #: float8 e5m2 (ml_dtypes.float8_e5m2: IEEE-like, has infinities)


#: Element size in bytes of every data type.
DTYPE_BYTES = {
    DType.INT8: 1, DType.UINT8: 1, DType.INT16: 2, DType.UINT16: 2, DType.INT32: 4, DType.UINT32: 4,
    DType.FP16: 2, DType.BF16: 2, DType.FP32: 4, DType.FP8E4M3: 1, DType.FP8E5M2: 1,
}


class Layout(enum.Enum, shape=1):
    """Storage order of a tile in the UB (and of its GM image for TLOAD/TSTORE)."""
    ROW_MAJOR = 0  #: element (i, j) at base + (i * cols + j) * size
    COL_MAJOR = 1  #: element (i, j) at base + (j * rows + i) * size


class OobMode(enum.Enum, shape=2):
    """MGATHER out-of-bounds handling (the seed's ``GatherOOB``)."""
    UNDEFINED = 0  #: no check (the golden model raises, the hardware stays inside the destination)
    CLAMP     = 1  #: index -> size - 1
    WRAP      = 2  #: index -> index mod size
    ZERO      = 3  #: zeros for that row / element, no memory read


class Profile(py_enum.Enum):
    """Target profile: which data types each instruction accepts (see ``golden``)."""
    A2A3 = "a2a3"
    A5 = "a5"


#: A tile in the unified buffer: where it is, its static and valid shape, its type and order.
TileDesc = data.StructLayout({
    "base":       24,           # byte address in the UB; must be a multiple of UB_ALIGN
    "rows":       16,           # static shape
    "cols":       16,
    "valid_rows": 16,           # valid region: the top-left valid_rows x valid_cols elements
    "valid_cols": 16,
    "dtype":      DType,
    "layout":     Layout,
    "_reserved":  3,
})

#: A 2-D region of global memory.
GmDesc = data.StructLayout({
    "base":       64,           # byte address; must be a multiple of the element size
    "rows":       32,           # rows of the region (MGATHER: table rows)
    "cols":       32,           # elements per row (MGATHER: row width)
    "row_stride": 32,           # bytes from one row to the next; a multiple of the element size
    "dtype":      DType,
    "_reserved":  28,
})

#: One instruction, one transfer on the command stream.
Command = data.StructLayout({
    "opcode":     Opcode,
    "tag":        16,           # echoed in the response
    "oob":        OobMode,      # MGATHER
    "nepi_log2":  3,            # local_gather: num_elem_per_idx = 1 << nepi_log2 (0..5)
    "num_valid":  13,           # local_gather: num_valid_indices per 16-row group; 0 = all
    "_reserved":  22,
    "dst":        TileDesc,
    "src0":       TileDesc,
    "src1":       TileDesc,
    "src2":       TileDesc,
    "gm":         GmDesc,
})

#: One response per command (in command order on the serial unit, in completion order on a concurrent one).
Response = data.StructLayout({
    "tag":        16,
    "status":     Status,
    "_reserved":  8,
    "cycles":     32,           # clock cycles from command acceptance to completion
    "queued":     32,           # of them, the cycles before its engine started (= cycles if none ran it)
})

COMMAND_BITS = Command.size
RESPONSE_BITS = Response.size


def _field_items(layout):
    for name, field in layout:
        yield name, field.offset, field.shape, field.width


def encode(layout, value):
    """Pack a nested dict (field names of ``layout``) into an int. Missing fields are zero.

    Enum fields take a member or a raw int, so that reserved codes can be encoded on purpose (the
    error tests need unknown opcodes and data types). Names starting with ``_`` are reserved.
    """
    if isinstance(value, int):
        return value
    unknown = set(value) - {name for name, *_ in _field_items(layout)}
    if unknown:
        raise KeyError(f"{sorted(unknown)} are not fields of this layout")
    word = 0
    for name, offset, shape, width in _field_items(layout):
        if name not in value:
            continue
        v = value[name]
        if isinstance(shape, data.Layout):
            v = encode(shape, v)
        else:
            v = int(v.value if isinstance(v, py_enum.Enum) else v)
        if not 0 <= v < (1 << width):
            raise ValueError(f"field {name!r}={v} does not fit in {width} bits")
        word |= v << offset
    return word


def decode(layout, word):
    """Unpack an int into a nested dict. Enum fields become members, or stay ints for reserved codes."""
    out = {}
    for name, offset, shape, width in _field_items(layout):
        v = (word >> offset) & ((1 << width) - 1)
        if isinstance(shape, data.Layout):
            v = decode(shape, v)
        elif isinstance(shape, type) and issubclass(shape, py_enum.Enum):
            try:
                v = shape(v)
            except ValueError:
                pass
        out[name] = v
    return out


def tile(base, rows, cols, dtype, valid=None, layout=Layout.ROW_MAJOR):
    """A tile descriptor (a dict for :data:`TileDesc`, to :func:`encode`); ``valid`` defaults to the
    static shape."""
    valid_rows, valid_cols = valid if valid is not None else (rows, cols)
    return {"base": base, "rows": rows, "cols": cols, "valid_rows": valid_rows,
            "valid_cols": valid_cols, "dtype": dtype, "layout": layout}


def gm_region(base, rows, cols, dtype, row_stride=None):
    """A GM descriptor (a dict for :data:`GmDesc`); ``row_stride`` defaults to dense rows."""
    if row_stride is None:
        row_stride = cols * DTYPE_BYTES[DType(dtype)]
    return {"base": base, "rows": rows, "cols": cols, "row_stride": row_stride, "dtype": dtype}
