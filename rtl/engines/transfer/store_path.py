"""The transfer engine's UB -> GM side (sections of :meth:`TransferEngine.elaborate
<rtl.engines.transfer.engine.TransferEngine>`): the UB reader on the engine's read port (shared with
MGATHER's index reads), its words to the W channel, the B responses."""

from types import SimpleNamespace

from amaranth import *

from rtl.engines.transfer.widths import AXLEN_BITS, TILE_DIM_BITS
from rtl.lib.axi import Resp
from rtl.lib.fifo import LineQueue
from rtl.ub.reader import UbReader

__all__ = ["ub_reader", "w_channel", "index_reads_only"]


def ub_reader(m, cfg, engine, s, walk_data, index, load_ready):
    """TSTORE's :class:`UbReader` with its lines from ``walk_data`` (through a :class:`LineQueue`), and
    the engine's one UB read port: MGATHER's index reads (``IndexLines.ub_rd``, from the ``start``
    cycle on) or the reader's. Also ``walk_data``'s ready: the reader's line queue (TSTORE) or
    ``load_ready`` (TLOAD: :func:`rtl.engines.transfer.load_path.realigner`'s; ``None`` without loads)."""
    sh = cfg.axi_data_bytes.bit_length() - 1
    m.submodules.ub_reader = reader = UbReader(cfg)
    # (through a LineQueue: the walker moves on "not full", not on the reader's ready)
    m.submodules.rd_lines = rd_lines = LineQueue(reader.LineLayout)
    rd = engine.ub_rd[0]
    wd = walk_data.lines.payload
    m.d.comb += [reader.ub_rd.even.eq(rd.even), reader.ub_rd.odd.eq(rd.odd)]
    reader_reads = [rd.addr.eq(reader.ub_rd.addr), rd.en.eq(reader.ub_rd.en)]
    if index is None:                   # TSTORE alone (rtl.engines.transfer.pipes.UbToGmEngine)
        m.d.comb += reader_reads
    else:
        m.d.comb += [index.ub_rd.even.eq(rd.even), index.ub_rd.odd.eq(rd.odd)]
        # MGATHER reads its index tile through the same port, from the ``start`` cycle on; the reader
        # reads only during a TSTORE.
        with m.If(s.gath | (engine.start & s.gath_c)):
            m.d.comb += [rd.addr.eq(index.ub_rd.addr), rd.en.eq(index.ub_rd.en)]
        with m.Else():
            m.d.comb += reader_reads
    m.d.comb += [
        rd_lines.i.valid.eq(walk_data.lines.valid & s.store),
        rd_lines.i.payload.ub_addr.eq(wd.ub_addr),
        rd_lines.i.payload.length.eq(wd.length),
        rd_lines.i.payload.dst_off.eq(wd.gm_addr[:sh]),
        reader.lines.valid.eq(rd_lines.o.valid), reader.lines.payload.eq(rd_lines.o.payload),
        rd_lines.o.ready.eq(reader.lines.ready),
        walk_data.lines.ready.eq(rd_lines.i.ready if load_ready is None else
                                 Mux(s.store, rd_lines.i.ready, load_ready)),
    ]
    return reader


def w_channel(m, cfg, engine, s, a, reader, err, old=None):
    """TSTORE's W channel: the reader's words, each burst's after its AW (the burst lengths queue in
    ``wlen``), ``wlast`` from a beat counter; B responses (an error sets ``err``); the lines not yet
    sent and "no write burst in flight", registers. ``old``: an older TSTORE's registers
    (:func:`rtl.engines.transfer.store_overlap.older_store`, an engine with overlap), whose AWs and B
    responses do not count for ``aw_all`` and ``err``. Returns ``done`` (every AW out, every line sent,
    every B response in), ``aw_all``, ``wr_idle`` (no write burst in flight, a register) and
    ``burst_last`` (the burst on AW is its transfer's last)."""
    axi = engine.axi
    b, wlen = a.b, a.wlen
    aw_all = Signal()        # every AW of the transfer is out
    m.d.comb += [wlen.w_data.eq(b.len), wlen.w_en.eq(a.aw_fire), axi.bready.eq(1)]
    b_err = a.b_fire & (axi.bresp != Resp.OKAY)
    with m.If(a.aw_fire & b.last if old is None else a.aw_fire & b.last & ~old.aw_old):
        m.d.sync += aw_all.eq(1)
    with m.If(b_err if old is None else b_err & ~old.b_old):
        m.d.sync += err.eq(1)
    beat = Signal(AXLEN_BITS)
    word = reader.words.payload
    m.d.comb += [axi.wdata.eq(word.data), axi.wstrb.eq(word.be), axi.wlast.eq(beat == wlen.r_data)]
    with m.If(s.store):
        m.d.comb += [
            axi.wvalid.eq(reader.words.valid & wlen.r_rdy),
            reader.words.ready.eq(axi.wready & wlen.r_rdy),
        ]
    with m.If(axi.wvalid & axi.wready):
        m.d.sync += beat.eq(Mux(axi.wlast, 0, beat + 1))
        m.d.comb += wlen.r_en.eq(axi.wlast)
    lines_left = Signal(TILE_DIM_BITS)  # TSTORE: lines not yet completely sent on W
    lines_zero = Signal()         # ... none (a register beside the counter)
    with m.If(s.walk_addr_start):
        m.d.sync += [lines_left.eq(s.lines), lines_zero.eq(0)]
    with m.Elif(reader.words.valid & reader.words.ready & word.last):
        m.d.sync += [lines_left.eq(lines_left - 1), lines_zero.eq(lines_left == 1)]
    wr_idle = Signal()            # no write burst loaded or in flight (a register beside wr_out)
    wr_next = a.wr_out + a.aw_fire - a.b_fire
    m.d.sync += wr_idle.eq(wr_next == 0)
    return SimpleNamespace(done=aw_all & wr_idle & lines_zero, aw_all=aw_all, wr_idle=wr_idle, burst_last=b.last)


def index_reads_only(m, engine, index, load_ready, walk_data):
    """An engine without TSTORE (:class:`rtl.engines.transfer.pipes.GmToUbEngine`): its read port is
    MGATHER's index reads alone, and ``walk_data``'s lines go to the realigner (``load_ready``: its ready, or
    its slack line queue's, :func:`rtl.engines.transfer.load_path.realigner`)."""
    rd = engine.ub_rd[0]
    m.d.comb += [index.ub_rd.even.eq(rd.even), index.ub_rd.odd.eq(rd.odd),
                 rd.addr.eq(index.ub_rd.addr), rd.en.eq(index.ub_rd.en),
                 walk_data.lines.ready.eq(load_ready)]
