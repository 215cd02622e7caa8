"""TSTOREs back to back in the UB -> GM half (:class:`rtl.engines.transfer.pipes.UbToGmEngine` built with
``overlap=True``, the concurrent unit: issue #33, item 5): the engine takes its next TSTORE once both line
walkers have emitted the last line of the running one, so the next one's setup, walk, UB reads and AW
requests overlap the running one's last W beats and its wait for B responses.

Why that is safe: behind the walkers everything a TSTORE still does travels with its own data, in order,
through queues that both instructions share: a line in the reader's and the burst walker's line queues
carries its addresses and length, a burst its length (the ``wlen`` FIFO), a word its byte enables. The
walkers read the held command (``gm.row_stride``) and the setup's registers until their last line, and
nothing behind them reads either. AXI answers the writes of one ID in order, so the older TSTORE's B
responses all come before the younger one's.

What is kept per instruction, for the *older* TSTORE (:func:`older_store`): whether all its AW requests are
out, how many of its bursts still owe a B response, and whether one of them answered an error. The running
one keeps the engine's own ``aw_all`` and ``err``, which count only what is not the older one's."""

from types import SimpleNamespace

from amaranth import *

from rtl.isa import Status
from rtl.lib.axi import Resp

__all__ = ["older_store", "overlap_completion"]


def older_store(m, cfg):
    """The older TSTORE's registers (all low from reset): ``valid`` (one is held), ``aw_all`` (its last AW is
    out), ``owed`` (its bursts sent on AW and not yet answered on B), ``err`` (one answered an error). Also
    ``aw_old`` (an AW handshake now is the older one's: it has AWs left) and ``b_old`` (a B response now is
    the older one's: it is owed one), which :func:`rtl.engines.transfer.store_path.w_channel` keeps out of
    the running instruction's ``aw_all`` and ``err``."""
    o = SimpleNamespace(valid=Signal(name="old_valid"), aw_all=Signal(name="old_aw_all"),
                        owed=Signal(range(cfg.max_outstanding_writes + 1), name="old_owed"),
                        err=Signal(name="old_err"))
    o.aw_old = o.valid & ~o.aw_all
    o.b_old = o.valid & (o.owed != 0)
    return o


def overlap_completion(m, engine, s, walk_addr, walk_data, a, st, old, err):
    """``done``, ``status`` and ``release`` of the UB -> GM half with overlap (it replaces
    ``TransferEngine._completion``).

    - ``release``: no older TSTORE is held, no empty region waits, not a ``start`` cycle, and the engine is
      idle or the running TSTORE's walkers have emitted their last lines (``busy`` low, and the
      address-side walker, which starts a cycle after ``start``, has started).
    - a ``start`` while a TSTORE runs (and is not done now) makes it the older one: its AW count and error
      move into :func:`older_store`'s registers (the bursts in flight are all its own: a start finds no
      older one).
    - the older one is done once its last AW is out and nothing is owed it (registers); the running one
      once its last AW is out and no burst at all is in flight (``wr_idle``, a register: the older one's
      responses come first, so its ``done`` is at least a cycle earlier); an empty region's ``done``, a
      cycle after its ``start``, waits for the older one's. At most one of the three in a cycle, in start
      order.

    ``st`` is :func:`rtl.engines.transfer.store_path.w_channel`'s namespace, ``a``
    :func:`rtl.engines.transfer.address_side.address_side`'s, ``err`` the running instruction's error."""
    axi = engine.axi
    b_err = a.b_fire & (axi.bresp != Resp.OKAY)
    # the older one's AWs and B responses (in order: its AWs before the running one's, its Bs too)
    with m.If(old.aw_old & a.aw_fire):
        with m.If(st.burst_last):
            m.d.sync += old.aw_all.eq(1)
    m.d.sync += old.owed.eq(old.owed + (old.aw_old & a.aw_fire) - (old.b_old & a.b_fire))
    with m.If(old.b_old & b_err):
        m.d.sync += old.err.eq(1)

    empty_wait = Signal(name="empty_wait")      # an empty region's ``done`` waits for the older one's
    cur_done = Signal(name="store_cur_done")
    old_done = Signal(name="store_old_done")
    empty_go = Signal(name="store_empty_done")
    m.d.comb += [cur_done.eq(s.running & st.aw_all & st.wr_idle),
                 old_done.eq(old.valid & old.aw_all & (old.owed == 0)),
                 empty_go.eq((s.empty_done | empty_wait) & ~old.valid)]
    with m.If(s.empty_done & old.valid):
        m.d.sync += empty_wait.eq(1)
    walked = ~walk_data.busy & ~walk_addr.busy & ~s.walk_addr_start
    m.d.comb += engine.release.eq(~old.valid & ~empty_wait & ~s.empty_done & ~engine.start & (~s.running | walked))

    with m.If(old_done):
        m.d.comb += [engine.done.eq(1), engine.status.eq(Mux(old.err, Status.AXI_WRITE_ERROR, Status.OK))]
        m.d.sync += old.valid.eq(0)
    with m.Elif(empty_go):
        m.d.comb += [engine.done.eq(1), engine.status.eq(Status.OK)]
        m.d.sync += empty_wait.eq(0)
    with m.Elif(cur_done):
        m.d.comb += [engine.done.eq(1), engine.status.eq(Mux(err, Status.AXI_WRITE_ERROR, Status.OK))]
        m.d.sync += [st.aw_all.eq(0), err.eq(0)]
        with m.If(~engine.start):           # (a start now sets ``running`` for the next one)
            m.d.sync += s.running.eq(0)
    with m.If(engine.start):
        m.d.sync += [err.eq(0), st.aw_all.eq(0)]
        # the running TSTORE becomes the older one: every burst in flight is its own
        with m.If(s.running & ~cur_done):
            m.d.sync += [old.valid.eq(1), old.aw_all.eq(st.aw_all | (a.aw_fire & st.burst_last)),
                         old.owed.eq(a.wr_out + a.aw_fire - a.b_fire), old.err.eq(err | b_err)]
