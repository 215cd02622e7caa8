"""The GEMV engine's overlap (:class:`rtl.engines.gemv.engine.GemvEngine` built with ``overlap=True``, the
concurrent unit; issue #33, item 5): it takes its next instruction once the walker has pushed the running
one's last line, so the next one's setup, walk and UB reads run under the running one's last products, and
its first product fires ``FIRE_GAP`` cycles after the running one's last (thirteenth session; before it the
release waited for the last product and each later instruction paid ``FIRST_STEP``, the way from ``start``
to its first product).

The engine has two sides, each with its own copy of the setup:

* the walker (``prm``, loaded at ``start``, and the command) pushes B lines, (A line, init line) pairs and C
  lines; it is done with an instruction when it pushes its last line (``walking`` low);
* the fire side (``fire_setup``: ``prm``'s copy, the MAC array's operand kinds and ``acc_int``) runs the A
  serializer, the fire counters and the steps into the MAC array. It takes the pending instruction
  (:func:`fire_side`) in the cycle after the running one's last product, or a cycle after ``start`` when it
  has none, and copies the walker's setup then; ``hold`` keeps anything from firing until it has. The A
  serializer's registered copies of the element size load what the fire side's copy is about to be
  (``esz_next``), as its first product may come a cycle after the take.

What travels with the data instead of coming from either copy:

* port 1's lines: each pair carries its instruction's ``has_init`` (whether an init line follows its A
  line), and the reader's words are dispatched to the A serializer or the init assembler by a FIFO of what
  follows each line issued (``rtl.engines.gemv.feed.PORT1_LINES``): port 1 may be on the next instruction's
  lines while the fire side is on the previous one's last A words;
* the MAC array samples the kinds with each step (its operand registers), and ``acc_int`` travels with the
  step to the ring (``MacArray(overlap=True)``), whose identity and sum select use the step's own: with one
  empty step between two instructions the ring's identity for a block's first product is chosen by the step
  entering next, not the one entering now (``test_overlap_kinds_alternate_at_the_fire_gap``);
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

``release`` (:func:`fire_side`): the walker is done with the running instruction, the fire side has taken
it (so the walker's copy may change), fewer than ``IN_FLIGHT`` instructions are in the engine, and no
``start`` now. So at most one instruction waits for the fire side while another fires and a third drains.
"""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import data, fifo

from rtl.engines.gemv.params import COUNT_BITS
from rtl.engines.gemv.reduce import Reducer
from rtl.isa import Status
from rtl.ub.writer import UbWriter

__all__ = ["fire_setup", "control", "fire_side", "block_contexts", "c_offsets", "dones", "IN_FLIGHT",
           "FIRE_GAP"]

#: Instructions the engine holds at most (started, not done): the running one and two released ones, as
#: the front end holds (``rtl.frontend.pipe_front.PipeFrontEnd.RELEASED`` = 2 per pipe).
IN_FLIGHT = 3
#: Cycles from an instruction's last product to the next one's first, when the next one's first A element
#: and B word are there by then: the fire side takes it (``fire_side``: its setup copied, the counters
#: loaded) in the cycle after the last product, and its first product may fire in the cycle after that.
FIRE_GAP = 2


def fire_setup(m, eng, parts, setup):
    """The fire side's own setup: ``prm`` (the walker's ``setup.prm`` copied when the fire side takes an
    instruction, :func:`fire_side`), the MAC array's operand kinds and ``acc_int`` (copied then too), ``K``
    for the counters' first values (the walker's ``prm.K``: the instruction being taken), and ``hold``
    (driven by :func:`fire_side`: no instruction on the fire side in the next cycle, so nothing fires),
    ``take`` (:func:`fire_side`) and ``esz_next``."""
    prm, mac = setup.prm, parts.mac
    f = SimpleNamespace(prm=Signal(prm.shape(), name="fprm", reset_less=True), K=prm.K,
                        a_kind=Signal.like(setup.a_kind, name="f_a_kind", reset_less=True),
                        b_kind=Signal.like(setup.b_kind, name="f_b_kind", reset_less=True),
                        acc_int=Signal(name="f_acc_int_mac", reset_less=True), hold=Signal(name="fire_hold"),
                        take=Signal(name="fire_take"))
    # (the A serializer's registered copies of the element size load what ``prm.esz`` is about to be)
    f.esz_next = Mux(f.take, prm.esz, f.prm.esz)
    m.d.comb += [mac.a_kind.eq(f.a_kind), mac.b_kind.eq(f.b_kind), mac.acc_int.eq(f.acc_int)]
    return f


def control(m, eng, parts, setup, fset, walk, ser, fire, wc, nblk):
    """The engine's control with ``overlap``: ``start`` (only while ``release`` is high: the walker is done
    with the previous instruction, and the fire side has taken it) loads the walker, nothing else; the fire
    side takes the instruction when it has fired the previous one's last product (:func:`fire_side`); the
    reducer's contexts, the C offsets and the ``done`` counts are per block or per instruction (below).
    ``nblk``: the command's blocks, for the ``start`` cycle."""
    with m.If(eng.start):
        eng._walker_loads(m, setup, walk, nblk)
    inflight = dones(m, eng, parts, nblk)
    fire_side(m, eng, parts, setup, fset, walk, ser, fire, nblk, inflight)
    block_contexts(m, eng, parts, fset, fire)
    c_offsets(m, eng, parts, walk, wc)


def fire_side(m, eng, parts, setup, fset, walk, ser, fire, nblk, inflight):
    """Which instruction fires, and ``release``.

    ``pend``: an instruction started (its walker loaded) whose products have not begun; ``running``: the
    fire side has one, from the cycle after it takes it to its last product (counted in blocks by ``fleft``
    / ``flast``). The fire side takes the pending one (``take``) when it has none: copies the walker's setup
    into ``fset``, loads the counters (``GemvEngine.fire_loads``); nothing fires in that cycle (``hold``).
    ``release``: the walker has pushed the running instruction's last line, the fire side has taken it
    (no ``pend``), fewer than ``IN_FLIGHT`` instructions are in the engine, and no ``start`` now."""
    pend, running = Signal(name="fire_pend"), Signal(name="fire_running")
    wnblk = Signal(COUNT_BITS, reset_less=True, name="fire_wnblk")      # the pending one's blocks
    fleft = Signal(COUNT_BITS, reset_less=True)     # blocks of the firing instruction not yet fired to the end
    flast = Signal(reset_less=True)                 # fleft == 1
    take, ending = fset.take, Signal(name="fire_ending")
    m.d.comb += [take.eq(pend & ~running), ending.eq(fire.fire & ser.last_k[0] & flast),
                 fset.hold.eq(~running | ending)]
    with m.If(take):
        m.d.sync += [pend.eq(0), running.eq(1), fleft.eq(wnblk), flast.eq(wnblk == 1),
                     fset.prm.eq(setup.prm), fset.a_kind.eq(setup.a_kind), fset.b_kind.eq(setup.b_kind),
                     fset.acc_int.eq(setup.prm.acc_int)]
        eng.fire_loads(m, parts, fset.K, ser, fire)
    with m.Elif(fire.fire & ser.last_k[0]):
        m.d.sync += [fleft.eq(fleft - 1), flast.eq(fleft == 2)]
        with m.If(flast):
            m.d.sync += running.eq(0)
    with m.If(eng.start):                           # (never with ``pend``: release is low)
        m.d.sync += [pend.eq(1), wnblk.eq(nblk)]
    m.d.comb += eng.release.eq(~walk.walking & ~pend & (inflight < IN_FLIGHT) & ~eng.start)


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
