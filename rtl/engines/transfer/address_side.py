"""The transfer engine's address side (a section of :meth:`TransferEngine.elaborate
<rtl.engines.transfer.engine.TransferEngine>`): lines -> bursts -> the AR / AW register, the bursts in
flight, and TSTORE's burst lengths for the W channel."""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import fifo

from rtl.engines.transfer import load_overlap
from rtl.engines.transfer.walker import BurstLine, BurstWalker
from rtl.engines.transfer.widths import AXLEN_BITS
from rtl.lib.axi import Burst
from rtl.lib.contract import require
from rtl.lib.fifo import LineQueue

__all__ = ["address_side"]

#: AxCACHE "normal non-cacheable bufferable": the unit never relies on GM caching.
_AXCACHE = 0b0011


def address_side(m, cfg, engine, s, walk_addr, index, t=None):
    """Lines (MGATHER: ``IndexLines.ar``; TLOAD / TSTORE: ``walk_addr``) through a :class:`LineQueue`
    into the :class:`BurstWalker`, whose output register drives AR or AW (the valid gated by ``go`` and
    by room for one more burst in flight), the counters of bursts in flight, and the ``wlen`` FIFO of
    TSTORE's burst lengths. With ``t`` (the GM -> UB half with overlap,
    :func:`rtl.engines.transfer.load_overlap.load_tracking`) the source follows the instruction whose lines
    enter now (``t.apar``, :func:`rtl.engines.transfer.load_overlap.side_setup`), and every line and burst
    carries that instruction's parity as its ``tag``. Returns the burst payload ``b``, the handshakes and the
    counters."""
    axi = engine.axi
    W = cfg.axi_data_bytes
    sh = W.bit_length() - 1
    store = s.store
    tag_bits = 0 if t is None else 1
    m.submodules.bursts = bursts = BurstWalker(cfg, tag_bits=tag_bits)
    # (through a LineQueue: the walker or IndexLines' AR queue moves on "not full", a register, not on
    # the burst walker's decision)
    m.submodules.ar_lines = ar_lines = LineQueue(BurstLine(cfg, tag_bits))
    m.d.comb += [bursts.lines.valid.eq(ar_lines.o.valid), bursts.lines.payload.eq(ar_lines.o.payload),
                 ar_lines.o.ready.eq(bursts.lines.ready)]
    wl = walk_addr.lines.payload
    al = ar_lines.i.payload
    walker_lines = [ar_lines.i.valid.eq(walk_addr.lines.valid),
                    al.gm_addr.eq(wl.gm_addr), al.gm_last.eq(wl.gm_last),
                    al.one_chunk.eq(wl.one_chunk), al.span.eq(wl.span), al.last.eq(wl.last),
                    walk_addr.lines.ready.eq(ar_lines.i.ready)]
    gath = s.gath if t is None else load_overlap.side_setup(t, t.apar, s).gath
    if index is None:                           # an engine without MGATHER (TSTORE alone)
        m.d.comb += walker_lines
    else:
        with m.If(gath):                        # MGATHER: IndexLines' AR queue
            m.d.comb += [ar_lines.i.valid.eq(index.ar.valid), al.eq(index.ar.payload),
                         index.ar.ready.eq(ar_lines.i.ready)]
        with m.Else():                          # TLOAD / TSTORE: the address-side walker
            m.d.comb += walker_lines
    if t is not None:
        m.d.comb += al.tag.eq(t.apar)
        load_overlap.track_side(m, t.apar, ar_lines.i.valid & ar_lines.i.ready & al.last)
    b = bursts.bursts.payload
    for ch in ("ar", "aw") if engine._loads and engine._stores else ("ar",) if engine._loads else ("aw",):
        m.d.comb += [
            getattr(axi, f"{ch}id").eq(0), getattr(axi, f"{ch}size").eq(sh),
            getattr(axi, f"{ch}burst").eq(Burst.INCR), getattr(axi, f"{ch}cache").eq(_AXCACHE),
            getattr(axi, f"{ch}addr").eq(b.addr), getattr(axi, f"{ch}len").eq(b.len),
        ]
    # Bursts in flight (reads from their AR until their last beat, writes from their AW until their
    # B response): at most the configured number. The AR / AW valid waits for room, a register
    # computed from the counter and this cycle's handshakes (the room only shrinks by our own
    # handshake, so a valid never drops before its handshake); the burst walker does not wait for it.
    rd_out = Signal(range(cfg.max_outstanding_reads + 1))
    wr_out = Signal(range(cfg.max_outstanding_writes + 1))
    r_last = axi.rvalid & axi.rready & axi.rlast
    b_fire = axi.bvalid & axi.bready

    def room_next(count, limit, inc, dec):      # count + inc - dec < limit
        return (((count < limit - 1) | ((count == limit - 1) & ~(inc & ~dec)) |
                 ((count == limit) & dec & ~inc)) if limit > 1 else (((count == 0) & ~(inc & ~dec)) |
                                                                    ((count == 1) & dec & ~inc)))
    rd_room, wr_room = Signal(init=1), Signal(init=1)
    m.d.comb += [axi.arvalid.eq(bursts.bursts.valid & ~store & engine.go & rd_room),
                 axi.awvalid.eq(bursts.bursts.valid & store & engine.go & wr_room)]
    ar_fire = axi.arvalid & axi.arready
    aw_fire = axi.awvalid & axi.awready
    m.d.comb += [bursts.bursts.ready.eq(Mux(store, axi.awready & wr_room, axi.arready & rd_room) & engine.go),
                 bursts.credit.eq(1)]
    m.d.sync += [rd_out.eq(rd_out + ar_fire - r_last), wr_out.eq(wr_out + aw_fire - b_fire),
                 rd_room.eq(room_next(rd_out, cfg.max_outstanding_reads, ar_fire, r_last)),
                 wr_room.eq(room_next(wr_out, cfg.max_outstanding_writes, aw_fire, b_fire))]
    wlen = None
    if engine._stores:
        # (the wlen FIFO holds one entry per write burst in flight, at most max_outstanding_writes)
        m.submodules.wlen = wlen = fifo.SyncFIFOBuffered(width=AXLEN_BITS, depth=max(2, cfg.max_outstanding_writes))
        require(wlen.depth >= cfg.max_outstanding_writes,
                f"TransferEngine: the wlen FIFO ({wlen.depth} entries) must hold a length for every write "
                f"burst in flight (max_outstanding_writes = {cfg.max_outstanding_writes})")
    return SimpleNamespace(b=b, aw_fire=aw_fire, b_fire=b_fire, wr_out=wr_out, rd_out=rd_out, wlen=wlen)
