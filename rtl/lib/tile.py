"""Hardware helpers over tile descriptors (element size, transfer geometry)."""

from amaranth import *

from rtl.isa import DTYPE_BYTES, DType, Layout, TileDesc

__all__ = ["UB_ADDR_BITS", "DIM_BITS", "ESZ_MAX", "ESZ_BITS", "SIZE_BITS", "LINE_BYTES_BITS", "elem_log2", "dtype_valid", "tile_geometry"]

#: Width of a UB byte address: a tile's ``base`` field.
UB_ADDR_BITS = TileDesc["base"].width
#: Width of a tile dimension (rows, columns, valid rows / columns): a ``TileDesc`` shape field.
DIM_BITS = TileDesc["rows"].width
#: log2 of the largest element's size in bytes (fp32, int32: 2).
ESZ_MAX = max(DTYPE_BYTES.values()).bit_length() - 1
#: Width of log2 of an element's size in bytes (0 .. ``ESZ_MAX``).
ESZ_BITS = ESZ_MAX.bit_length()
#: Width of an element's size in bytes (1 .. 4).
SIZE_BITS = max(DTYPE_BYTES.values()).bit_length()

#: Width of a line's length in bytes: a line (a row or a column of a tile) is at most as many elements as
#: a ``TileDesc`` shape field holds (65535), of the largest element size (4 bytes).
LINE_BYTES_BITS = max(TileDesc["rows"].width, TileDesc["cols"].width) + ESZ_BITS



def elem_log2(m, dtype):
    """log2 of the element size of ``dtype`` (0 for reserved codes: they never get past the checker)."""
    out = Signal(ESZ_BITS)
    with m.Switch(dtype.as_value()):
        for member, size in DTYPE_BYTES.items():
            with m.Case(member):
                m.d.comb += out.eq(size.bit_length() - 1)
    return out


def dtype_valid(dtype):
    """True when ``dtype`` holds a defined ``DType`` code."""
    return Cat(dtype.as_value() == member.value for member in DType).any()


def tile_geometry(m, tile, esz_log2):
    """Lines of a tile's valid region in storage order: ``(lines, line_elems, line_stride_bytes)``.

    A line is a row of a row-major tile and a column of a column-major one.
    """
    col = tile.layout == Layout.COL_MAJOR
    lines = Signal(DIM_BITS)
    line_elems = Signal(DIM_BITS)
    stride = Signal(UB_ADDR_BITS)
    m.d.comb += [
        lines.eq(Mux(col, tile.valid_cols, tile.valid_rows)),
        line_elems.eq(Mux(col, tile.valid_rows, tile.valid_cols)),
        stride.eq(Mux(col, tile.rows, tile.cols) << esz_log2),
    ]
    return lines, line_elems, stride
