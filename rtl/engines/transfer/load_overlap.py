"""GM -> UB instructions back to back (:class:`rtl.engines.transfer.pipes.GmToUbEngine` built with
``overlap=True``, the concurrent unit: issue #33, item 5): the engine takes its next TLOAD or MGATHER once the
running one's lines have all been formed (a TLOAD: both line walkers have emitted its last line; an MGATHER:
:class:`rtl.engines.transfer.mgather.IndexLines` has put its last line into its output queues,
``IndexLines.emitted``), so the next one's setup, walk or index reads and its AR requests overlap the running
one's R beats, realignment or placement and UB writes (the memory's latency and the setup are paid once per
stream, not per instruction).

Why that is safe: behind the walkers and IndexLines everything an instruction still does travels with its own
data, in order, through queues that both instructions share: a line in the address side's line queue, the
burst walker and the realigner's slots carries its addresses, offsets and length; a run in IndexLines' data
queue its lanes and offsets; a burst its length; a word its UB address, byte enables and ``last`` mark. AXI
answers the reads of one ID in order, so the older instruction's R beats all come before the younger one's.

What is per instruction beyond that: the setup's registers that the stages behind the walkers read, and the
error. Each non-empty instruction gets a parity bit at its ``start`` (at most two are in the engine, so two
parities tell them apart), and each side of the data path follows the instruction it is on by a parity of its
own, flipped where that instruction's ``last`` line or word passes:

- ``apar``, the address side (lines entering its line queue): whether they come from IndexLines' AR queue or
  the address-side walker; every line, and so every burst, carries ``apar`` as its ``tag``.
- ``lpar``, the line side (lines taken by the realigner, runs fired into the element placer): which queue
  feeds the realigner, MGATHER_ROW's row bytes, whether runs go to the placer, the element size.
- ``wpar``, the word side (words entering the write queue): the realigner's or the placer's words, and the
  error flag that gates them.
- ``dpar``, ``done``: the status it answers.

A side is on the older instruction while one is held and the side's parity is the older one's
(:func:`side_setup`); the older one's setup is kept in registers of its own at the ``start`` that makes it
the older one. The line side moves to an instruction whose words come from the other pipeline (the realigner
against the placer) only once the word side has (``line_wait``), so that the two never offer a word in the
same cycle.

The error: an R error suppresses the UB writes of its beat and every later beat of *its* instruction, and
answers that instruction ``AXI_READ_ERROR``. Each AR handshake pushes its burst's ``tag`` into a ring of
``max_outstanding_reads`` bits, each last R beat pops it, so a beat takes its burst's parity as it arrives,
whatever lines issued nothing (MGATHER's zero and reuse runs, even an instruction's last lines or all of
them); it sets that parity's error flag when popped; a word entering the write queue is gated by the flag of
``wpar``, and a ``done`` answers with the flag of ``dpar``, which it then clears."""

from types import SimpleNamespace

from amaranth import *

from rtl.isa import Status

__all__ = ["load_tracking", "side_setup", "track_side", "overlap_completion"]


def load_tracking(m, s):
    """The registers that tell two instructions in the engine apart (all from reset): the older one's
    ``old_valid`` and ``old_par``, and its setup (``old``: ``gath``, ``elem``, ``esz``, ``row_bytes``, copies
    of :func:`rtl.engines.transfer.setup.setup`'s); the running instruction's parity ``par``; the sides'
    parities ``apar``, ``lpar``, ``wpar``, ``dpar`` (module docstring); the error flags ``err[p]``; and
    ``beat_par``, the parity of a beat arriving now (driven by :func:`overlap_completion`)."""
    t = SimpleNamespace(
        old_valid=Signal(name="old_valid"),
        # (the first instruction's parity is 1: ``par`` flips at its start; the sides wait for it)
        par=Signal(name="par"), old_par=Signal(name="old_par"),
        apar=Signal(name="apar", init=1), lpar=Signal(name="lpar", init=1),
        wpar=Signal(name="wpar", init=1), dpar=Signal(name="dpar", init=1),
        err=[Signal(name="err_par0"), Signal(name="err_par1")],
        old=SimpleNamespace(gath=Signal(name="old_gath"), elem=Signal(name="old_elem"),
                            esz=Signal.like(s.esz, name="old_esz"), row_bytes=Signal.like(s.row_bytes, name="old_row_bytes")),
        beat_par=Signal(name="beat_par"))
    return t


def side_setup(t, side_par, s):
    """The setup (``gath``, ``elem``, ``esz``, ``row_bytes``) of the instruction a side whose parity is
    ``side_par`` is on: the older one's while one is held and the parities agree, else the running one's.
    (With two instructions at most, a side that has passed both ends has the parity the next instruction
    will get, which is the older one's only while the older one is held; the side has nothing to do then, and
    the next ``start`` comes only once the older one is done.)"""
    older = t.old_valid & (side_par == t.old_par)
    return SimpleNamespace(**{f: Mux(older, getattr(t.old, f), getattr(s, f))
                              for f in ("gath", "elem", "esz", "row_bytes")})


def track_side(m, side_par, passing_last):
    """A side passes its instruction's ``last`` line or word now: it is on the next instruction."""
    with m.If(passing_last):
        m.d.sync += side_par.eq(~side_par)


def word_error(t):
    """The error flag of the instruction whose words enter the write queue now."""
    return Mux(t.wpar, t.err[1], t.err[0])


def burst_parities(m, engine, a, t):
    """The parities of the read bursts in flight, oldest first: a ring of ``max_outstanding_reads`` bits
    (the address side never has more in flight), pushed with the burst's ``tag`` at its AR handshake,
    popped at its last R beat; ``t.beat_par`` is the oldest one's."""
    axi = engine.axi
    n = engine._config.max_outstanding_reads
    ring = Signal(n, name="burst_par")
    wp, rp = Signal(range(n), name="burst_par_wp"), Signal(range(n), name="burst_par_rp")
    ar_fire = axi.arvalid & axi.arready
    r_last = axi.rvalid & axi.rready & axi.rlast

    def nxt(p):
        return Mux(p == n - 1, 0, p + 1)
    with m.If(ar_fire):
        m.d.sync += [ring.bit_select(wp, 1).eq(a.b.tag), wp.eq(nxt(wp))]
    with m.If(r_last):
        m.d.sync += rp.eq(nxt(rp))
    m.d.comb += t.beat_par.eq(ring.bit_select(rp, 1))


def overlap_completion(m, engine, s, walk_addr, walk_data, a, load_done, t, index):
    """``done``, ``status`` and ``release`` of the GM -> UB half with overlap (it replaces
    ``TransferEngine._completion``).

    - ``release``: no older instruction is held, no empty region waits, not a ``start`` cycle, and the
      engine is idle or its running instruction's lines are all formed: a TLOAD's walkers have emitted their
      last lines (``busy`` low, and the address-side walker, which starts a cycle after ``start``, has
      started), an MGATHER's last line is in IndexLines' output queues (``emitted``).
    - a ``start`` while an instruction runs (and is not done now) makes it the older one: its parity and its
      setup move into :func:`load_tracking`'s older registers. A non-empty start flips ``par`` and clears the
      new parity's error flag.
    - ``load_done`` (the port takes a ``last`` word) is the older one's ``done`` while one is held, else the
      running one's: its status is the flag of ``dpar``, which it clears and flips. An empty region's
      ``done``, a cycle after its ``start``, waits for the older one's.

    ``a`` is :func:`rtl.engines.transfer.address_side.address_side`'s namespace."""
    burst_parities(m, engine, a, t)
    empty_wait = Signal(name="empty_wait")      # an empty region's ``done`` waits for the older one's
    empty_go = Signal(name="load_empty_done")
    old_done, cur_done = Signal(name="load_old_done"), Signal(name="load_cur_done")
    m.d.comb += [old_done.eq(load_done & t.old_valid),
                 cur_done.eq(load_done & ~t.old_valid & s.running),
                 empty_go.eq((s.empty_done | empty_wait) & ~t.old_valid)]
    with m.If(s.empty_done & t.old_valid):
        m.d.sync += empty_wait.eq(1)
    walked = ~walk_data.busy & ~walk_addr.busy & ~s.walk_addr_start
    formed = Mux(s.gath, index.emitted, walked) if index is not None else walked
    m.d.comb += engine.release.eq(~t.old_valid & ~empty_wait & ~s.empty_done & ~engine.start &
                                  (~s.running | formed))

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
        with m.If(~s.empty_c):
            m.d.sync += t.par.eq(~t.par)
            with m.If(t.par):                   # the new parity's flag (its previous instruction is done)
                m.d.sync += t.err[0].eq(0)
            with m.Else():
                m.d.sync += t.err[1].eq(0)
        # the running instruction becomes the older one, with its setup (``start`` reloads the setup's)
        with m.If(s.running & ~cur_done):
            m.d.sync += [t.old_valid.eq(1), t.old_par.eq(t.par), t.old.gath.eq(s.gath), t.old.elem.eq(s.elem),
                         t.old.esz.eq(s.esz), t.old.row_bytes.eq(s.row_bytes)]
