"""The transfer engine's GM -> UB side (sections of :meth:`TransferEngine.elaborate
<rtl.engines.transfer.engine.TransferEngine>`): R beats into the beat buffer, through the realigner
(TLOAD, MGATHER_ROW) or the element placer (MGATHER_ELEM), to the UB write port."""

from amaranth import *

from rtl.engines.transfer.placer import ElementPlacer
from rtl.engines.transfer.realign import Realigner
from rtl.engines.transfer.widths import UB_ADDR_BITS
from rtl.lib.axi import Resp
from rtl.lib.fanout import held_copies
from rtl.lib.fifo import BeatBuffer

__all__ = ["beat_buffer", "realigner", "ub_write"]


def beat_buffer(m, cfg, engine, err):
    """The R beat buffer (:class:`BeatBuffer`, LUT RAM, no bypass; ``rready`` = room), with each beat's
    error flag. The data side pops a beat in the cycle it decides to take it and reads it (and the one
    before it) from the buffer in the next cycle: no decision reaches a wide register. A popped beat
    whose response was an error sets ``err``. Returns the buffer and its ``pop``."""
    W = cfg.axi_data_bytes
    axi = engine.axi
    rbuf_depth = min(cfg.read_buffer_beats, engine.RBUF_DEPTH)
    m.submodules.rbuf = rbuf = BeatBuffer(8 * W + 1, rbuf_depth, groups=W // 4)   # a beat + its error flag
    pop = Signal()
    took = Signal()                 # a beat was popped in the previous cycle: ``rbuf.last`` is it
    m.d.comb += [
        axi.rready.eq(rbuf.w_rdy),
        rbuf.w_data.eq(Cat(axi.rdata, axi.rresp != Resp.OKAY)), rbuf.w_en.eq(axi.rvalid),
        rbuf.pop.eq(pop),
    ]
    m.d.sync += took.eq(pop)
    with m.If(took & rbuf.last[8 * W]):
        m.d.sync += err.eq(1)
    return rbuf, pop


def realigner(m, cfg, engine, s, walk_data, index, rbuf):
    """TLOAD / MGATHER_ROW: the :class:`Realigner` and its lines, MGATHER_ROW's from
    ``IndexLines.data`` or TLOAD's from ``walk_data``; its words come from the beat buffer. MGATHER's
    lines reach the data side only with ``go``: a zero line writes the UB without any AXI read, and
    nothing may be written before the checker has passed the command."""
    W = cfg.axi_data_bytes
    sh = W.bit_length() - 1
    m.submodules.realign = realign = Realigner(W, addr_bits=UB_ADDR_BITS - sh, buffered=True)
    rl = realign.line.payload
    d = index.data.payload
    wd = walk_data.lines.payload
    with m.If(s.gath):                          # MGATHER_ROW: IndexLines' data queue
        m.d.comb += [
            realign.line.valid.eq(index.data.valid & ~s.elem & engine.go),
            rl.src_off.eq(d.src_off), rl.dst_off.eq(d.ub_addr[:sh]), rl.length.eq(s.row_bytes),
            rl.zero.eq(d.zero), rl.addr.eq(d.ub_addr[sh:]), rl.last.eq(d.last),
        ]
    with m.Else():                              # TLOAD: the data-side walker
        m.d.comb += [
            realign.line.valid.eq(walk_data.lines.valid & ~s.store),
            rl.src_off.eq(wd.gm_addr[:sh]), rl.dst_off.eq(wd.ub_addr[:sh]), rl.length.eq(wd.length),
            rl.addr.eq(wd.ub_addr[sh:]), rl.last.eq(wd.last),
        ]
    m.d.comb += [realign.i_avail.eq(rbuf.avail), realign.i_last.eq(rbuf.last[:8 * W]),
                 realign.i_before.eq(rbuf.before[:8 * W])]
    return realign


def ub_write(m, cfg, engine, s, index, rbuf, pop, realign, err):
    """MGATHER_ELEM's :class:`ElementPlacer` (a run and its beat: new, the previous one again for a
    reuse run, none for a zero run; the beat is the last one popped either way), the beat buffer's
    pop (the realigner's or the placer's), the index queue's pop, and the UB write port: the
    realigner's or the placer's word (their byte enables are exact; none after an error). Returns
    ``load_done``: the last UB write of a TLOAD / MGATHER happens now."""
    W = cfg.axi_data_bytes
    m.submodules.placer = placer = ElementPlacer(cfg)
    run = index.data.payload
    fire, fire_q = Signal(), Signal()           # (the same; fire_q for the index queue's pop)
    m.d.comb += [
        fire.eq(s.elem & index.data.valid & engine.go & (run.zero | run.reuse | rbuf.avail)),
        fire_q.eq(s.elem_q & index.data.valid & engine.go & (run.zero | run.reuse | rbuf.avail)),
        placer.fire.eq(fire), placer.line.eq(run), placer.esz.eq(s.esz),
        placer.beat.eq(rbuf.last[:8 * W]),
        pop.eq((fire & ~run.zero & ~run.reuse) | realign.i_take),
        index.data.ready.eq(Mux(s.elem_q, fire_q, realign.line.ready & engine.go)),
    ]

    # the UB write port: the data's select in DATA_SEL_COPIES copies of ``elem``, each for a slice of
    # the word (one register selecting all 8W bits: 11.2 ns, 10.1 of it wire, in `default` seed 3
    # at b9e4ebc)
    o = realign.o.payload
    n = len(engine.ub_wr.data)
    sels = held_copies(m, s.elem_c, engine.start, engine.DATA_SEL_COPIES, "elem_data")
    for k, c in enumerate(sels):
        sl = slice(n * k // len(sels), n * (k + 1) // len(sels))
        m.d.comb += engine.ub_wr.data[sl].eq(Mux(c, placer.data[sl], o.data[sl]))
    with m.If(s.elem):
        m.d.comb += engine.ub_wr.addr.eq(placer.addr)
        with m.If(placer.valid & ~err):
            m.d.comb += engine.ub_wr.be.eq(placer.be)
    with m.Else():
        m.d.comb += engine.ub_wr.addr.eq(o.addr)
        with m.If(realign.o.valid & ~err):
            m.d.comb += engine.ub_wr.be.eq(o.be)
    load_done = Signal()            # the last UB write of a TLOAD / MGATHER happens now
    m.d.comb += load_done.eq(Mux(s.elem, placer.valid & placer.last, realign.o.valid & realign.o.payload.last))
    return load_done
