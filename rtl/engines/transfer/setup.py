"""The transfer engine's setup (a section of :meth:`TransferEngine.elaborate
<rtl.engines.transfer.engine.TransferEngine>`): the command's decode and geometry, registered at ``start``."""

from types import SimpleNamespace

from amaranth import *

from rtl.engines.transfer.mgather import GATHER_OPCODES
from rtl.engines.transfer.widths import ESZ_BITS, SIZE_BITS, TILE_DIM_BITS, UB_ADDR_BITS
from rtl.isa import Layout, Opcode
from rtl.lib.decode import opcode_bit
from rtl.lib.tile import LINE_BYTES_BITS, elem_log2

__all__ = ["setup"]


def setup(m, engine):
    """The command's decode and geometry: single opcode bits (combinational, for the ``start`` cycle:
    ``store_c``, ``gath_c``, ``elem_c``) and the registers loaded at ``start`` (``store``, ``gath``,
    ``elem``, ``esz``, the line count, length and strides, ``gm.base - 1``, MGATHER_ROW's row bytes,
    ``running``; ``empty_done`` and ``walk_addr_start``, one-cycle pulses after ``start``)."""
    cfg = engine._config
    cmd = engine.cmd
    op = cmd.opcode.as_value()
    gm = cmd.gm
    # This engine starts only for its own opcodes, so single opcode bits tell them apart (their
    # positions from the encoding table, rtl.lib.decode.opcode_bit). TLOAD / TSTORE lines follow
    # the GM descriptor, whose shape and type the checker has compared with the tile's (the engine's
    # side effects wait for ``go``): a line is ``gm.cols`` elements of a row-major tile, ``gm.rows``
    # of a column-major one (cut to a tile dimension's width, ``TILE_DIM_BITS``).
    # (an engine of one direction, :mod:`rtl.engines.transfer.pipes`: the other's decodes are constants)
    if not engine._stores:
        store_c = C(0)
    elif not engine._loads:
        store_c = C(1)
    else:
        store_c = op[opcode_bit(engine.opcodes, [Opcode.TSTORE])]
    if engine._gathers:
        gath_bit = opcode_bit(engine.opcodes, GATHER_OPCODES)
        gath_c, elem_c = op[gath_bit], op[gath_bit] & op[opcode_bit(GATHER_OPCODES, [Opcode.MGATHER_ELEM])]
    else:
        gath_c, elem_c = C(0), C(0)
    esz_c = elem_log2(m, gm.dtype)
    src0, dst = cmd.src0, cmd.dst
    col_c = Mux(store_c, src0.layout.as_value(), dst.layout.as_value()) == Layout.COL_MAJOR.value
    rows_c, cols_c = gm.rows[:TILE_DIM_BITS], gm.cols[:TILE_DIM_BITS]
    lines_c = Mux(col_c, cols_c, rows_c)
    elems_c = Mux(col_c, rows_c, cols_c)
    ub_base_c = Mux(store_c, src0.base, dst.base)
    stride_elems_c = Mux(col_c, Mux(store_c, src0.rows, dst.rows), Mux(store_c, src0.cols, dst.cols))
    empty_c = Mux(gath_c, (dst.valid_rows == 0) | (dst.valid_cols == 0),
                  (rows_c == 0) | (cols_c == 0))

    store, gath, elem = Signal(), Signal(), Signal()
    # a copy of ``elem`` for the index queue's pop (its own init: not merged with ``elem``, which
    # reaches the UB write mux; the pop enables the queue's head register)
    elem_q = Signal(init=1)
    esz = Signal(ESZ_BITS)
    lines, stride_elems = Signal(TILE_DIM_BITS), Signal(TILE_DIM_BITS)
    gm_base_m1 = Signal(cfg.gm_addr_bits)
    row_bytes = Signal(LINE_BYTES_BITS)       # MGATHER_ROW: bytes per destination row
    running = Signal()
    empty_done = Signal()
    walk_addr_start = Signal()
    line_bytes = Signal(LINE_BYTES_BITS)
    line_m1 = Signal(LINE_BYTES_BITS)        # line_bytes - 1 = ((elems - 1) << esz) | (size - 1)
    elems_m1_c = Mux(col_c, rows_c - 1, cols_c - 1)[:TILE_DIM_BITS]
    m.d.sync += [empty_done.eq(0), walk_addr_start.eq(0)]
    with m.If(engine.start):
        m.d.sync += [
            store.eq(store_c), gath.eq(gath_c), elem.eq(elem_c), elem_q.eq(elem_c), esz.eq(esz_c),
            lines.eq(lines_c), line_bytes.eq(elems_c << esz_c), stride_elems.eq(stride_elems_c),
            line_m1.eq((elems_m1_c << esz_c) | ((C(1, SIZE_BITS) << esz_c) - 1)),
            gm_base_m1.eq(gm.base - 1), row_bytes.eq(dst.valid_cols << esz_c),
            running.eq(~empty_c), empty_done.eq(empty_c), walk_addr_start.eq(~gath_c),
        ]
    # (one direction: what the setup tells apart is known; the registers above then drive nothing)
    if not (engine._loads and engine._stores):
        store = C(int(engine._stores))
    if not engine._gathers:
        gath = elem = elem_q = C(0)
    ub_stride = Signal(UB_ADDR_BITS)
    m.d.comb += ub_stride.eq(stride_elems << esz)
    return SimpleNamespace(
        store_c=store_c, gath_c=gath_c, elem_c=elem_c, empty_c=empty_c, ub_base_c=ub_base_c,
        lines_c=lines_c, store=store, gath=gath, elem=elem, elem_q=elem_q, esz=esz, lines=lines,
        gm_base_m1=gm_base_m1, row_bytes=row_bytes, running=running, empty_done=empty_done,
        walk_addr_start=walk_addr_start, line_bytes=line_bytes, line_m1=line_m1, ub_stride=ub_stride)
