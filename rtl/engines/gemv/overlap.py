"""The GEMV engine's overlap (:class:`rtl.engines.gemv.engine.GemvEngine` built with ``overlap=True``, the
concurrent unit; issue #33, item 5): it takes its next instruction once the running one's last product has
fired, while that one's last blocks are still in the MAC array, the reducer and the C writer.

What reads the setup (``prm``, the kinds) and the command, and why the next ``start`` may change them then:

* the walker, port 1's line dispatch, the A serializer and the fire logic (``prm``'s geometry and counts)
  are finished with an instruction when its last product fires: every B line, A line and A word was taken
  before it. Port 1's init line of the last block may still be on its way (the pair FIFO, the reader): the
  dispatch flags ``in_i`` / ``out_i`` return to 0 after an init line whatever ``has_init`` says, and they
  are no longer cleared at ``start`` (they are 0 between instructions by themselves);
* the MAC array samples the kinds and ``acc_int`` with each step (its operand registers); the kinds are
  loaded at ``start``, after the last product, so every step sees its own; ``acc_int`` travels with the
  step to the ring (``MacArray(overlap=True)``), whose identity and sum select use the step's own;
* the reducer's ``present``, ``acc_int`` and ``has_init`` are per block: :func:`block_contexts` queues them
  at a block's first product and the reducer takes the head when the block's reduction starts
  (``Reducer(overlap=True)``: it keeps its own copy for the rest of the schedule). The init vectors are
  already per block, in block order (port 1 reads A, then the init, block after block);
* a block's C line is queued with its first B line (its own address and length); the C words' lane
  offset, which the serial engine loads at ``start`` and advances by ``lanes`` per block, comes per block
  from :func:`c_offsets`, queued with the C line and taken at the line's last word;
* ``done``: each instruction's block count is queued at its ``start`` (:func:`dones`); the oldest's blocks
  are counted down at each C line's last word, and ``done`` comes a cycle after its last one
  (``GemvEngine.DONE_CYCLES``), in start order.

So nothing behind the fire logic reads ``prm`` or ``cmd``: ``release`` (:func:`release`) rises
``RELEASE_CYCLES`` after the running instruction's last product, unless ``IN_FLIGHT`` instructions are
in the engine.
"""

from amaranth import *
from amaranth.lib import data, fifo

from rtl.engines.gemv.params import COUNT_BITS
from rtl.engines.gemv.reduce import Reducer
from rtl.isa import Status
from rtl.ub.writer import UbWriter

__all__ = ["control", "release", "block_contexts", "c_offsets", "dones", "IN_FLIGHT", "RELEASE_CYCLES"]

#: Instructions the engine holds at most (started, not done): the running one and two released ones, as
#: the front end holds (``rtl.frontend.pipe_front.PipeFrontEnd.RELEASED`` = 2 per pipe).
IN_FLIGHT = 3
#: The running instruction's last product fires -> ``release`` (``running``, a register cleared then).
RELEASE_CYCLES = 1


def control(m, eng, parts, setup, walk, ser, fire, wc, nblk):
    """The engine's control with ``overlap``: ``start`` (only while ``release`` is high: the previous
    instruction has fired its last product) loads the walker and the fire counters, nothing else (port 1's
    dispatch flags and the C word index return to 0 by themselves between instructions, and may still be
    busy with the previous one's last block); the reducer's contexts, the C offsets and the ``done`` counts
    are per block or per instruction (below). ``nblk``: the command's blocks, for the ``start`` cycle."""
    with m.If(eng.start):
        eng._start_loads(m, parts, setup, walk, ser, fire, nblk)
    block_contexts(m, eng, parts, setup, fire)
    c_offsets(m, eng, parts, walk, wc)
    inflight = dones(m, eng, parts, nblk)
    release(m, eng, parts, fire, ser, nblk, inflight)


def release(m, eng, parts, fire, ser, nblk, inflight):
    """``release``: no instruction is firing (``running``: from ``start`` to its last product, counted in
    blocks by ``fleft`` / ``flast``), fewer than ``IN_FLIGHT`` in the engine, and no ``start`` now."""
    running = Signal()
    fleft = Signal(COUNT_BITS, reset_less=True)     # blocks of the running instruction not yet fired to the end
    flast = Signal(reset_less=True)                 # fleft == 1
    with m.If(eng.start):
        m.d.sync += [running.eq(1), fleft.eq(nblk), flast.eq(nblk == 1)]
    with m.Elif(fire.fire & ser.last_k[0]):
        m.d.sync += [fleft.eq(fleft - 1), flast.eq(fleft == 2)]
        with m.If(flast):
            m.d.sync += running.eq(0)
    m.d.comb += eng.release.eq(~running & (inflight < IN_FLIGHT) & ~eng.start)
    return running


def block_contexts(m, eng, parts, setup, fire):
    """The reducer's per-block context (``present``, ``acc_int``, ``has_init``): queued from ``prm`` with a
    block's first product (``prm`` is the firing instruction's), the head on the reducer's inputs, popped
    when its reduction starts (``Reducer.started``). A block's first product takes a reducer bank and its
    bank comes back after its reduction's start, so at most ``Reducer.BANKS`` contexts are queued, and at
    most ``BANKS - 1`` when one is pushed: a queue of ``BANKS`` never refuses one."""
    red, prm = parts.red, setup.prm
    Ctx = data.StructLayout({"present": len(red.present), "acc_int": 1, "has_init": 1})
    q = fifo.SyncFIFO(width=Ctx.size, depth=Reducer.BANKS)
    m.submodules.q_ctx = q
    w, r = Signal(Ctx), Signal(Ctx)
    m.d.comb += [w.present.eq(prm.present), w.acc_int.eq(prm.acc_int), w.has_init.eq(prm.has_init),
                 q.w_data.eq(w), q.w_en.eq(fire.fire & fire.k0), r.eq(q.r_data), q.r_en.eq(red.started),
                 red.present.eq(r.present), red.acc_int.eq(r.acc_int), red.has_init.eq(r.has_init)]
    return q


def c_offsets(m, eng, parts, walk, wc):
    """The C words' lane offset per block: ``wc_reg`` (its copies) holds the oldest unwritten C line's offset
    (``held``), a queue the later ones' (C lines queued with their block's first B line: at most
    ``C_QUEUE_DEPTH`` in the C line FIFO and ``UbWriter.LINES_HELD`` in the writer, one of them in
    ``wc_reg``); at a line's last word the next offset moves into ``wc_reg`` (or the line queued in that
    cycle, or none)."""
    cfg, wr = parts.cfg, parts.wr
    ob = cfg.ub_word_bytes.bit_length() - 1
    q = fifo.SyncFIFO(width=ob, depth=eng.C_QUEUE_DEPTH + UbWriter.LINES_HELD - 1)
    m.submodules.q_coff = q
    held = Signal()
    new = walk.c_line.ub_addr[:ob]
    pushc = walk.push & walk.blk0
    load, src = Signal(), Signal(ob)
    m.d.comb += q.w_data.eq(new)
    with m.If(wr.done):
        with m.If(q.r_rdy):
            m.d.comb += [load.eq(1), src.eq(q.r_data), q.r_en.eq(1), q.w_en.eq(pushc)]
        with m.Elif(pushc):
            m.d.comb += [load.eq(1), src.eq(new)]
        with m.Else():
            m.d.sync += held.eq(0)
    with m.Elif(pushc):
        with m.If(held):
            m.d.comb += q.w_en.eq(1)
        with m.Else():
            m.d.comb += [load.eq(1), src.eq(new)]
            m.d.sync += held.eq(1)
    with m.If(load):
        m.d.sync += [r.eq(src ^ x) for x, r in enumerate(wc.wc_reg)]
    return q


def dones(m, eng, parts, nblk):
    """``done`` in start order: each instruction's block count queued at its ``start``; ``left`` counts the
    oldest's blocks down at each C line's last word (``have``: it is loaded), ``done`` when it reaches 0 (a
    cycle after the last word, ``DONE_CYCLES``), the next one's count loaded then or when it comes.
    Returns ``inflight`` (started, not done)."""
    wr = parts.wr
    q = fifo.SyncFIFO(width=COUNT_BITS, depth=IN_FLIGHT)
    m.submodules.q_nblk = q
    inflight = Signal(range(IN_FLIGHT + 1))
    left = Signal(COUNT_BITS, reset_less=True)
    have = Signal()
    m.d.comb += [q.w_data.eq(nblk), q.w_en.eq(eng.start)]
    fin = Signal()
    m.d.comb += fin.eq(have & (left == 0))
    with m.If(fin):
        m.d.comb += [eng.done.eq(1), eng.status.eq(Status.OK)]
    with m.If((~have | fin) & q.r_rdy):
        m.d.comb += q.r_en.eq(1)
        m.d.sync += [left.eq(q.r_data - wr.done), have.eq(1)]
    with m.Elif(fin):
        m.d.sync += have.eq(0)
    with m.Else():
        m.d.sync += left.eq(left - wr.done)
    m.d.sync += inflight.eq(inflight + eng.start - fin)
    return inflight
