"""Widths of the transfer engine's quantities, each taken from the descriptor field it holds
(:data:`rtl.isa.TileDesc`, :data:`rtl.isa.GmDesc`) or derived from those, so that the widths follow the
encoding instead of restating it."""

from rtl.isa import DTYPE_BYTES, DType, GmDesc
from rtl.lib.axi import AXLEN_BITS
from rtl.lib.tile import DIM_BITS, ESZ_BITS, SIZE_BITS, UB_ADDR_BITS

__all__ = ["UB_ADDR_BITS", "TILE_DIM_BITS", "ESZ_BITS", "SIZE_BITS", "SIZE_MASK_BITS", "GM_STRIDE_BITS", "TABLE_SIZE_BITS",
           "INDEX_BITS", "INDEX_BYTES_LOG2", "PIECE_BITS",
           "AXLEN_BITS"]

#: A count of lines, or of elements in a line: a row or column count of a tile (``rtl.lib.tile.DIM_BITS``).
#: TLOAD / TSTORE's GM shape equals the tile's valid shape (the checker's ``SHAPE_MISMATCH``), so
#: ``gm.rows`` / ``gm.cols`` are cut to this width.
TILE_DIM_BITS = DIM_BITS
#: An element's bytes - 1 (an alignment mask).
SIZE_MASK_BITS = (max(DTYPE_BYTES.values()) - 1).bit_length()
#: A GM stride (``GmDesc.row_stride``).
GM_STRIDE_BITS = GmDesc["row_stride"].width
#: MGATHER's table size in entries (rows, or rows x cols cut to this width): a ``GmDesc`` shape field.
TABLE_SIZE_BITS = GmDesc["rows"].width
#: An MGATHER index, read as uint32 (the index tile holds INT32 / UINT32 elements).
INDEX_BITS = 8 * DTYPE_BYTES[DType.UINT32]
#: log2 of an index's bytes.
INDEX_BYTES_LOG2 = (INDEX_BITS // 8).bit_length() - 1
#: A factor piece of a multiply in DSP blocks (:func:`rtl.fpga.dsp.product` takes at most
#: ``rtl.fpga.dsp.MAX_WIDTH`` bits): a 32-bit factor is two pieces.
PIECE_BITS = 16
