"""The transfer engine's rules beyond the instruction table's common checks (``rtl.checker``), built into
the checker by :meth:`rtl.engines.transfer.engine.TransferEngine.add_checks`: TLOAD / TSTORE
(:func:`transfer_checks`) and MGATHER (:func:`mgather_checks`), as ``golden.check``."""

from amaranth import *

from rtl.checker.stages import align, exceeds, stage, stage_product
from rtl.engines.transfer.widths import SIZE_MASK_BITS, TABLE_SIZE_BITS, TILE_DIM_BITS
from rtl.isa import Layout, Opcode, Status
from rtl.lib.tile import elem_log2, tile_geometry

__all__ = ["transfer_checks", "mgather_checks"]


def _transfer_tile(cmd):
    """The tile a TLOAD / TSTORE moves: ``src0`` for TSTORE, ``dst`` otherwise."""
    return cmd.dst.shape()(Mux(cmd.opcode == Opcode.TSTORE, cmd.src0.as_value(), cmd.dst.as_value()))


def transfer_checks(m, config, cmd, fail):
    """TLOAD / TSTORE constraints beyond the common ones: the tile (``dst`` or ``src0``) against the GM
    descriptor (shape, alignment, the region inside GM)."""
    enable = (cmd.opcode == Opcode.TLOAD) | (cmd.opcode == Opcode.TSTORE)
    gm = cmd.gm
    tile = _transfer_tile(cmd)
    esz = elem_log2(m, tile.dtype)
    fail[Status.SHAPE_MISMATCH].append(
        enable & ((gm.rows != tile.valid_rows) | (gm.cols != tile.valid_cols)))
    mask = Signal(SIZE_MASK_BITS)
    m.d.comb += mask.eq((1 << esz) - 1)
    fail[Status.GM_MISALIGNED].append(enable & (((gm.base | gm.row_stride) & mask) != 0))
    lines, line_elems, _ = tile_geometry(m, tile, esz)
    # one past the last byte touched: base + (lines - 1) * stride + line bytes > 2**gm_addr_bits
    # (lines - 1) * stride as registered partial products, one DSP block each, for both layouts:
    # a line is a GM row of a row-major tile and a GM column of a column-major one. The shape check
    # (earlier in CHECK_ORDER) has made the GM shape the tile's valid shape, so the factors come
    # straight from the command's GM fields (cut to a tile dimension's width) and the layout selects
    # after the register (no decode in front of the DSP blocks).
    col = stage(m, tile.layout == Layout.COL_MAJOR, "transfer_col")
    # (the factors are functions of the command: the checker takes them as the command arrives)
    by_rows = stage_product(m, lambda c: (c.gm.rows[:TILE_DIM_BITS] - 1)[:TILE_DIM_BITS], lambda c: c.gm.row_stride,
                            "transfer_span_r")
    by_cols = stage_product(m, lambda c: (c.gm.cols[:TILE_DIM_BITS] - 1)[:TILE_DIM_BITS], lambda c: c.gm.row_stride,
                            "transfer_span_c")
    span = [Mux(col, c, r) for r, c in zip(by_rows, by_cols)]
    touches = (lines != 0) & (line_elems != 0)
    beyond = exceeds(m, [gm.base, *span, line_elems << esz], 1 << config.gm_addr_bits, "transfer_end")
    used, beyond = align(m, stage(m, enable & touches, "transfer_range_en"), beyond)
    fail[Status.GM_OUT_OF_RANGE].append(used & beyond)


def mgather_checks(m, config, cmd, fail):
    """MGATHER_ROW / MGATHER_ELEM constraints beyond the common ones, as ``golden.check._rules_mgather``
    (docs/semantics.md, MGATHER): the index tile's shape against ``dst``, a non-empty table, alignment,
    the table inside GM."""
    op = cmd.opcode
    row = op == Opcode.MGATHER_ROW
    enable = row | (op == Opcode.MGATHER_ELEM)
    dst, idx, gm = cmd.dst, cmd.src0, cmd.gm
    esz = elem_log2(m, dst.dtype)
    row_shape = ((idx.rows != dst.rows) | (idx.cols != 1) | (idx.valid_rows != dst.valid_rows) |
                 (idx.valid_cols != 1) | (gm.cols != dst.valid_cols))
    elem_shape = ((idx.rows != dst.rows) | (idx.cols != dst.cols) | (idx.valid_rows != dst.valid_rows) |
                  (idx.valid_cols != dst.valid_cols))
    fail[Status.SHAPE_MISMATCH].append(enable & Mux(row, row_shape, elem_shape))
    # table entries: rows (row mode) or rows * cols (element mode), zero when a factor is zero
    no_entries = (gm.rows == 0) | (~row & (gm.cols == 0))
    nonempty = (dst.valid_rows != 0) & (dst.valid_cols != 0)
    fail[Status.DIM_OUT_OF_RANGE].append(enable & nonempty & no_entries)
    mask = Signal(SIZE_MASK_BITS)
    m.d.comb += mask.eq((1 << esz) - 1)
    fail[Status.GM_MISALIGNED].append(enable & (((gm.base & mask) != 0) | (row & ((gm.row_stride & mask) != 0))))
    # one past the last table byte > 2**gm_addr_bits; row: base + (rows - 1) * stride + cols * size,
    # element: base + entries * size (saturating adds: short carry chains)
    # The 32 x 32 multiplies are registered partial products of one DSP block each (stage_product);
    # the element size is a shift of the command's field, so it goes on the second factor.
    limit = 1 << config.gm_addr_bits
    # (the factors are functions of the command: the checker takes them as the command arrives)
    span = stage_product(m, lambda c: (c.gm.rows - 1)[:TABLE_SIZE_BITS], lambda c: c.gm.row_stride, "mgather_span")
    entry_bytes = stage_product(m, lambda c: c.gm.rows, lambda c: c.gm.cols << elem_log2(m, c.dst.dtype),
                                "mgather_entries")
    row_end = exceeds(m, [gm.base, *span, gm.cols << esz], limit, "mgather_row_end")
    elem_end = exceeds(m, [gm.base, *entry_bytes], limit, "mgather_elem_end")
    # (enable and mode registered: the range sums' carry chains are the only logic of the last stage)
    used, row_r, row_end, elem_end = align(m, stage(m, enable & ~no_entries, "mgather_range_en"),
                                           stage(m, row, "mgather_row_r"), row_end, elem_end)
    fail[Status.GM_OUT_OF_RANGE].append(used & Mux(row_r, row_end, elem_end))
