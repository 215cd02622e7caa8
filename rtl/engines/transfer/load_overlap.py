"""TLOADs back to back in the GM -> UB half (:class:`rtl.engines.transfer.pipes.GmToUbEngine` built with
``overlap=True``, the concurrent unit: issue #33, item 5): the engine takes its next TLOAD once both line
walkers have emitted the last line of the running one, so the next one's setup, walk and AR requests overlap
the running one's R beats, realignment and UB writes (the memory's latency and the setup are paid once per
stream, not per TLOAD).

Why that is safe: behind the walkers everything a TLOAD still does travels with its own data, in order,
through queues that both instructions share: a line in the burst walker's line queue and in the realigner's
slots carries its addresses, offsets and length; a burst its length; a word its UB address, byte enables and
``last`` mark. The walkers read the held command and the setup's registers until their last line; behind them
only MGATHER's selects read the setup (``gath``, ``elem``, ``row_bytes``), so MGATHER never overlaps: the
engine releases only a running TLOAD (or nothing), and the front end starts only a TLOAD
(:attr:`GmToUbEngine.OVERLAP_OPCODES <rtl.engines.transfer.pipes.GmToUbEngine>`) while one is released. AXI
answers the reads of one ID in order, so the older TLOAD's R beats all come before the younger one's.

What is per instruction is the error: an R error suppresses the UB writes of its beat and every later beat of
*its* instruction, and answers that instruction ``AXI_READ_ERROR``. Each non-empty instruction gets a parity
bit at its ``start`` (at most two are in the engine, so two parities tell them apart). A beat takes its
instruction's parity when it arrives (the older one's while that one is owed bursts: :func:`older_load`), and
sets that parity's error flag when it is popped; a word entering the write queue is gated by the flag of the
parity of the next ``last`` word (they enter in order), and a ``done`` answers with the flag of the next
``done``'s parity, which it then clears."""

from types import SimpleNamespace

from amaranth import *

from rtl.isa import Status

__all__ = ["load_tracking", "overlap_completion"]


def load_tracking(m, cfg):
    """The registers that tell two TLOADs in the engine apart (all from reset): the older one's ``valid``,
    ``ar_all`` (its last AR is out), ``owed`` (its read bursts out on AR whose last beat has not come); the
    running one's ``ar_all``; the parities: ``par`` (the running instruction's), ``old_par`` (the older
    one's), ``wpar`` (the instruction
    of the next word into the write queue), ``dpar`` (of the next ``done``), and the error flags ``err[p]``.
    Also ``ar_old`` (an AR handshake now is the older one's) and ``b_old`` (an R beat now is the older
    one's), and ``beat_par`` (the parity a beat arriving now belongs to)."""
    t = SimpleNamespace(
        old_valid=Signal(name="old_valid"), old_ar_all=Signal(name="old_ar_all"),
        old_owed=Signal(range(cfg.max_outstanding_reads + 1), name="old_owed"),
        ar_all=Signal(name="cur_ar_all"),
        # (the first instruction's parity is 1: ``par`` flips at its start)
        par=Signal(name="par"), old_par=Signal(name="old_par"), wpar=Signal(name="wpar", init=1),
        dpar=Signal(name="dpar", init=1), err=[Signal(name="err_par0"), Signal(name="err_par1")])
    t.ar_old = t.old_valid & ~t.old_ar_all
    t.b_old = t.old_valid & (t.old_owed != 0)
    # (the older one's parity is its own register: behind an empty region ``par`` does not flip)
    t.beat_par = Mux(t.b_old, t.old_par, t.par)
    return t


def word_error(t):
    """The error flag of the instruction whose words enter the write queue now."""
    return Mux(t.wpar, t.err[1], t.err[0])


def track_words(m, t, entering_last):
    """A ``last`` word enters the write queue: the next word is the next instruction's."""
    with m.If(entering_last):
        m.d.sync += t.wpar.eq(~t.wpar)


def overlap_completion(m, engine, s, walk_addr, walk_data, a, load_done, t):
    """``done``, ``status`` and ``release`` of the GM -> UB half with overlap (it replaces
    ``TransferEngine._completion``).

    - ``release``: no older TLOAD is held, no empty region waits, not a ``start`` cycle, and the engine is
      idle or runs a TLOAD whose walkers have emitted their last lines (``busy`` low, and the address-side
      walker, which starts a cycle after ``start``, has started). An MGATHER is never released.
    - a ``start`` while a TLOAD runs (and is not done now) makes it the older one: whether its last AR is out
      and its bursts in flight move into :func:`load_tracking`'s older registers (every burst in flight is
      its own: a start finds no older one). A non-empty start flips ``par`` and clears the new parity's
      error flag.
    - ``load_done`` (the port takes a ``last`` word) is the older one's ``done`` while one is held, else the
      running one's: its status is the flag of ``dpar``, which it clears and flips. An empty region's
      ``done``, a cycle after its ``start``, waits for the older one's.

    ``a`` is :func:`rtl.engines.transfer.address_side.address_side`'s namespace."""
    axi = engine.axi
    ar_fire = axi.arvalid & axi.arready
    r_last = axi.rvalid & axi.rready & axi.rlast
    b_last = a.b.last
    # whose AR and R: the older one's while it has ARs left / is owed bursts (AXI answers one ID in order)
    with m.If(ar_fire & b_last):
        with m.If(t.ar_old):
            m.d.sync += t.old_ar_all.eq(1)
        with m.Else():
            m.d.sync += t.ar_all.eq(1)
    m.d.sync += t.old_owed.eq(t.old_owed + (t.ar_old & ar_fire) - (t.b_old & r_last))

    empty_wait = Signal(name="empty_wait")      # an empty region's ``done`` waits for the older one's
    empty_go = Signal(name="load_empty_done")
    old_done, cur_done = Signal(name="load_old_done"), Signal(name="load_cur_done")
    m.d.comb += [old_done.eq(load_done & t.old_valid),
                 cur_done.eq(load_done & ~t.old_valid & s.running),
                 empty_go.eq((s.empty_done | empty_wait) & ~t.old_valid)]
    with m.If(s.empty_done & t.old_valid):
        m.d.sync += empty_wait.eq(1)
    walked = ~walk_data.busy & ~walk_addr.busy & ~s.walk_addr_start
    m.d.comb += engine.release.eq(~t.old_valid & ~empty_wait & ~s.empty_done & ~engine.start &
                                  (~s.running | (walked & ~s.gath)))

    err_now = Mux(t.dpar, t.err[1], t.err[0])
    with m.If(old_done | cur_done):
        m.d.comb += [engine.done.eq(1), engine.status.eq(Mux(err_now, Status.AXI_READ_ERROR, Status.OK))]
        m.d.sync += t.dpar.eq(~t.dpar)
        # (only the done one's flag: a beat of the other one may set its own in this cycle)
        with m.If(t.dpar):
            m.d.sync += t.err[1].eq(0)
        with m.Else():
            m.d.sync += t.err[0].eq(0)
        with m.If(old_done):
            m.d.sync += t.old_valid.eq(0)
        with m.Elif(~engine.start):         # (a start now sets ``running`` for the next one)
            m.d.sync += s.running.eq(0)
    with m.Elif(empty_go):
        m.d.comb += [engine.done.eq(1), engine.status.eq(Status.OK)]
        m.d.sync += empty_wait.eq(0)
    with m.If(engine.start):
        m.d.sync += t.ar_all.eq(0)
        with m.If(~s.empty_c):
            m.d.sync += t.par.eq(~t.par)
            with m.If(t.par):                   # the new parity's flag (its previous instruction is done)
                m.d.sync += t.err[0].eq(0)
            with m.Else():
                m.d.sync += t.err[1].eq(0)
        # the running TLOAD becomes the older one: every burst in flight is its own
        with m.If(s.running & ~cur_done):
            m.d.sync += [t.old_valid.eq(1), t.old_par.eq(t.par), t.old_ar_all.eq(t.ar_all | (ar_fire & b_last)),
                         t.old_owed.eq(a.rd_out + ar_fire - r_last)]
