"""The transfer engine's GM -> UB side (sections of :meth:`TransferEngine.elaborate
<rtl.engines.transfer.engine.TransferEngine>`): R beats into the beat buffer, through the realigner
(TLOAD, MGATHER_ROW) or the element placer (MGATHER_ELEM), into the write queue
(:class:`rtl.lib.output_queue.OutputQueue`), to the UB write port. The realigner and the placer cannot
stop between their register steps: they start work (a take, a zero or flush word, a fire) only with the
queue's ``room``, and everything behind them waits: the beat buffer (its ``rready`` drops when it is
full), MGATHER's index queue, the lines."""

from amaranth import *
from amaranth.lib import data

from rtl.engines.transfer import load_overlap
from rtl.engines.transfer.placer import ElementPlacer
from rtl.engines.transfer.realign import Realigner
from rtl.engines.transfer.widths import UB_ADDR_BITS
from rtl.lib.axi import Resp
from rtl.lib.fanout import held_copies
from rtl.lib.fifo import BeatBuffer, LineQueue
from rtl.lib.output_queue import OutputQueue

__all__ = ["beat_buffer", "realigner", "ub_write"]


def beat_buffer(m, cfg, engine, err, t=None):
    """The R beat buffer (:class:`BeatBuffer`, LUT RAM, no bypass; ``rready`` = room), with each beat's
    error flag. The data side pops a beat in the cycle it decides to take it and reads it (and the one
    before it) from the buffer in the next cycle: no decision reaches a wide register. A popped beat
    whose response was an error sets ``err``; with TLOADs back to back (``t``:
    :func:`rtl.engines.transfer.load_overlap.load_tracking`) each beat also carries its instruction's
    parity, and sets that parity's flag instead. Returns the buffer and its ``pop``."""
    W = cfg.axi_data_bytes
    axi = engine.axi
    rbuf_depth = min(cfg.read_buffer_beats, engine.RBUF_DEPTH)
    # a beat + its error flag (+ its instruction's parity)
    extra = [axi.rresp != Resp.OKAY] + ([t.beat_par] if t is not None else [])
    m.submodules.rbuf = rbuf = BeatBuffer(8 * W + len(extra), rbuf_depth, groups=W // 4)
    pop = Signal()
    took = Signal()                 # a beat was popped in the previous cycle: ``rbuf.last`` is it
    m.d.comb += [
        axi.rready.eq(rbuf.w_rdy),
        rbuf.w_data.eq(Cat(axi.rdata, *extra)), rbuf.w_en.eq(axi.rvalid),
        rbuf.pop.eq(pop),
    ]
    m.d.sync += took.eq(pop)
    with m.If(took & rbuf.last[8 * W]):
        if t is None:
            m.d.sync += err.eq(1)
        else:
            with m.If(rbuf.last[8 * W + 1]):
                m.d.sync += t.err[1].eq(1)
            with m.Else():
                m.d.sync += t.err[0].eq(1)
    return rbuf, pop


def realigner(m, cfg, engine, s, walk_data, index, rbuf, t=None):
    """TLOAD / MGATHER_ROW: the :class:`Realigner` and its lines, MGATHER_ROW's from
    ``IndexLines.data`` or TLOAD's from ``walk_data``; its words come from the beat buffer. MGATHER's
    lines reach the data side only with ``go``: a zero line writes the UB without any AXI read, and
    nothing may be written before the checker has passed the command. With ``t`` (instructions back to
    back, :func:`rtl.engines.transfer.load_overlap.load_tracking`): TLOAD's lines pass a :class:`LineQueue`
    first (two more lines, none of a cycle while it is empty), so the walker is done with a short TLOAD
    sooner and the engine releases it earlier; the source and the row bytes are those of the instruction
    the line side is on (``t.lpar``), and the line side waits while the word side is on an instruction of
    the other pipeline (``t.line_wait``, set by :func:`ub_write`). Returns the realigner and ``walk_data``'s
    ``ready`` for a TLOAD."""
    W = cfg.axi_data_bytes
    sh = W.bit_length() - 1
    m.submodules.realign = realign = Realigner(W, addr_bits=UB_ADDR_BITS - sh, buffered=True)
    rl = realign.line.payload
    d = index.data.payload
    wd = walk_data.lines.payload
    lines = walk_data.lines
    gath, elem, row_bytes, go = s.gath, s.elem, s.row_bytes, engine.go
    if t is not None:
        m.submodules.tload_lines = tq = LineQueue(walk_data.lines.payload.shape())
        m.d.comb += [tq.i.valid.eq(walk_data.lines.valid), tq.i.payload.eq(walk_data.lines.payload)]
        lines = tq.o
        wd = tq.o.payload
        side = load_overlap.side_setup(t, t.lpar, s)
        t.line = side
        t.line_wait = Signal(name="line_wait")
        # ``go`` through a register of the engine's own (``LOAD_GO_COPY_CYCLES``) for MGATHER's lines
        # and runs: the front end's register drove the placer's fire, the beat buffer's pop and its LUT-RAM
        # address from across the die (10.8 ns, 9.9 of it routing, ``ecp5_concurrent`` at a placement
        # seed). No cycle is lost: the first line leaves IndexLines after the copy has risen (a
        # ``require`` in the engine); MGATHER's AR requests keep the front end's ``go``.
        t.go = Signal(name="go_load")
        m.d.sync += t.go.eq(engine.go)
        gath, elem, row_bytes, go = side.gath, side.elem, side.row_bytes, t.go & ~t.line_wait
    with m.If(gath):                            # MGATHER_ROW: IndexLines' data queue
        m.d.comb += [
            realign.line.valid.eq(index.data.valid & ~elem & go),
            rl.src_off.eq(d.src_off), rl.dst_off.eq(d.ub_addr[:sh]), rl.length.eq(row_bytes),
            rl.zero.eq(d.zero), rl.addr.eq(d.ub_addr[sh:]), rl.last.eq(d.last),
        ]
    with m.Else():                              # TLOAD: the data-side walker
        m.d.comb += [
            realign.line.valid.eq(lines.valid & ~s.store if t is None else lines.valid & ~s.store & ~t.line_wait),
            rl.src_off.eq(wd.gm_addr[:sh]), rl.dst_off.eq(wd.ub_addr[:sh]), rl.length.eq(wd.length),
            rl.addr.eq(wd.ub_addr[sh:]), rl.last.eq(wd.last),
        ]
    m.d.comb += [realign.i_avail.eq(rbuf.avail), realign.i_last.eq(rbuf.last[:8 * W]),
                 realign.i_before.eq(rbuf.before[:8 * W])]
    if t is None:
        return realign, realign.line.ready
    m.d.comb += tq.o.ready.eq(realign.line.ready & ~gath & ~t.line_wait)
    return realign, tq.i.ready


def ub_write(m, cfg, engine, s, index, rbuf, pop, realign, err, t=None):
    """MGATHER_ELEM's :class:`ElementPlacer` (a run and its beat: new, the previous one again for a
    reuse run, none for a zero run; the beat is the last one popped either way), the beat buffer's
    pop (the realigner's or the placer's), the index queue's pop, and the write queue in front of the UB
    write port: the realigner's or the placer's word (their byte enables are exact; zero after an error:
    such a word is still queued, so that the last one's mark reaches ``done``).

    The write queue (``WRITE_QUEUE_DEPTH`` entries, ``latency`` = ``WRITE_QUEUE_LATENCY``) holds the words
    the port refuses (``ub_wr.ready`` low) and offers them again, unchanged; while it holds none the word
    passes through in the cycle it is formed (a 2:1 multiplexer), so a port that is always ready sees the
    words exactly as without the queue. Its ``room`` (a register) gates every start of a word: the
    placer's fire (and so the index queue's pop and the beat buffer's pop) and the realigner's
    ``enable`` (its takes, zero and flush words). With instructions back to back (``t``) the placer and the
    index queue's pop follow the line side's instruction, the word's select the word side's
    (:func:`_overlap_fire`), and a word is gated by its own instruction's error flag
    (:func:`rtl.engines.transfer.load_overlap.word_error`). Returns ``load_done``: the port takes the last
    word of a TLOAD / MGATHER now."""
    m.submodules.placer = placer = ElementPlacer(cfg)
    Word = data.StructLayout({"addr": len(engine.ub_wr.addr), "data": len(engine.ub_wr.data),
                              "be": len(engine.ub_wr.be), "last": 1})
    m.submodules.wq = wq = OutputQueue(Word, engine.WRITE_QUEUE_DEPTH, engine.WRITE_QUEUE_LATENCY,
                                       passthrough=not cfg.ub_write_queues)
    room = wq.room
    run = index.data.payload
    o = realign.o.payload
    w = wq.i_payload
    n = len(engine.ub_wr.data)
    if t is None:
        word_elem = _serial_fire(m, engine, s, index, rbuf, pop, realign, placer, room, run, w, o, n)
    else:
        err = load_overlap.word_error(t)
        word_elem = _overlap_fire(m, engine, s, index, rbuf, pop, realign, placer, room, run, w, o, t)
        load_overlap.track_side(m, t.wpar, wq.i_valid & w.last)
    with m.If(word_elem):
        m.d.comb += [wq.i_valid.eq(placer.valid), w.addr.eq(placer.addr), w.last.eq(placer.last)]
        with m.If(~err):
            m.d.comb += w.be.eq(placer.be)
    with m.Else():
        m.d.comb += [wq.i_valid.eq(realign.o.valid), w.addr.eq(o.addr), w.last.eq(o.last)]
        with m.If(~err):
            m.d.comb += w.be.eq(o.be)
    # the UB write port: the queue's head (or, while it holds nothing, the word formed now)
    q = wq.o.payload
    m.d.comb += [
        engine.ub_wr.valid.eq(wq.o.valid), wq.o.ready.eq(engine.ub_wr.ready),
        engine.ub_wr.addr.eq(q.addr), engine.ub_wr.data.eq(q.data), engine.ub_wr.be.eq(q.be),
    ]
    load_done = Signal()            # the port takes the last UB write of a TLOAD / MGATHER now
    m.d.comb += load_done.eq(wq.o.valid & engine.ub_wr.ready & q.last)
    return load_done


def _serial_fire(m, engine, s, index, rbuf, pop, realign, placer, room, run, w, o, n):
    """The placer's fire, the pops and the word's data select of an instruction at a time (the setup's
    registers). Returns the select of the placer's words."""
    W = engine._config.axi_data_bytes
    fire, fire_q = Signal(), Signal()           # (the same; fire_q for the index queue's pop)
    m.d.comb += [
        fire.eq(s.elem & index.data.valid & engine.go & (run.zero | run.reuse | rbuf.avail) & room),
        fire_q.eq(s.elem_q & index.data.valid & engine.go & (run.zero | run.reuse | rbuf.avail) & room),
        placer.fire.eq(fire), placer.line.eq(run), placer.esz.eq(s.esz),
        placer.beat.eq(rbuf.last[:8 * W]),
        realign.enable.eq(room),
        pop.eq((fire & ~run.zero & ~run.reuse) | realign.i_take),
        index.data.ready.eq(Mux(s.elem_q, fire_q, realign.line.ready & engine.go)),
    ]
    # the queued word: the data's select in DATA_SEL_COPIES copies of ``elem``, each for a slice of the
    # word (one register selecting all 8W bits: 11.2 ns, 10.1 of it wire, in `default` seed 3 at b9e4ebc)
    sels = held_copies(m, s.elem_c, engine.start, engine.DATA_SEL_COPIES, "elem_data")
    for k, c in enumerate(sels):
        sl = slice(n * k // len(sels), n * (k + 1) // len(sels))
        m.d.comb += w.data[sl].eq(Mux(c, placer.data[sl], o.data[sl]))
    return s.elem


def _overlap_fire(m, engine, s, index, rbuf, pop, realign, placer, room, run, w, o, t):
    """The same with instructions back to back (:mod:`rtl.engines.transfer.load_overlap`): the placer fires
    the runs of the instruction the line side is on (``t.line``, from :func:`realigner`), with its element
    size, and the line side's parity flips at that instruction's last line or run; the word's select is
    the word side's instruction's (``wpar``). ``t.line_wait``: the line side is ahead of the word side, on an
    instruction of the other pipeline (placer against realigner), so it takes nothing until the word side has
    passed the last word in between (the two pipelines' words would otherwise meet at the queue's input).
    Returns the select of the placer's words."""
    W = engine._config.axi_data_bytes
    line = t.line
    word = load_overlap.side_setup(t, t.wpar, s)
    m.d.comb += t.line_wait.eq((t.lpar != t.wpar) & (line.elem != word.elem))
    fire = Signal(name="elem_fire")
    m.d.comb += [
        fire.eq(line.elem & index.data.valid & t.go & ~t.line_wait &
                (run.zero | run.reuse | rbuf.avail) & room),
        placer.fire.eq(fire), placer.line.eq(run), placer.esz.eq(line.esz),
        placer.beat.eq(rbuf.last[:8 * W]),
        realign.enable.eq(room),
        pop.eq((fire & ~run.zero & ~run.reuse) | realign.i_take),
        index.data.ready.eq(Mux(line.elem, fire, line.gath & realign.line.ready & t.go & ~t.line_wait)),
        w.data.eq(Mux(word.elem, placer.data, o.data)),
    ]
    rl = realign.line
    load_overlap.track_side(m, t.lpar, (rl.valid & rl.ready & rl.payload.last) | (fire & run.last))
    return word.elem
