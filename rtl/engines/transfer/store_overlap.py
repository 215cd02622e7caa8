"""TSTOREs back to back in the UB -> GM half (:class:`rtl.engines.transfer.pipes.UbToGmEngine` built with
``overlap=True``, the concurrent unit: issue #33, item 5): the engine takes its next TSTORE once both line
walkers have emitted the last line of the running one, so the next one's setup, walk, UB reads and AW
requests overlap the running one's last W beats and its wait for B responses; up to ``OLDER`` = 2 TSTOREs
wait for their B responses behind the running one (thirteenth session; one before).

Why that is safe: behind the walkers everything a TSTORE still does travels with its own data, in order,
through queues that all of them share: a line in the reader's and the burst walker's line queues
carries its addresses and length, a burst its length (the ``wlen`` FIFO), a word its byte enables. The
walkers read the held command (``gm.row_stride``) and the setup's registers until their last line, and
nothing behind them reads either. AXI answers the writes of one ID in order, so an older TSTORE's B
responses all come before a younger one's.

What is kept per instruction, for the *older* TSTOREs (:func:`older_store`, a queue of ``OLDER``, the
oldest first): whether all its AW requests are out, how many of its bursts still owe a B response, and
whether one of them answered an error. The running one keeps the engine's own ``aw_all`` and ``err``, which
count only what is no older one's: an AW belongs to the oldest TSTORE with AWs left, a B response to the
oldest one owed one."""

from types import SimpleNamespace

from amaranth import *

from rtl.isa import Status
from rtl.lib.axi import Resp

__all__ = ["older_store", "overlap_completion", "OLDER"]

#: Older TSTOREs the half holds behind the running one (waiting for AWs or B responses): with it, the three
#: instructions of a pipe the front end holds (``rtl.frontend.pipe_front.PipeFrontEnd.RELEASED`` = 2 released
#: ones and the running one).
OLDER = 2


def older_store(m, cfg):
    """The older TSTOREs' registers (all low from reset), a queue of :data:`OLDER` entries, the oldest first:
    ``valid`` (one is held), ``aw_all`` (its last AW is out), ``owed`` (its bursts sent on AW and not yet
    answered on B), ``err`` (one answered an error). Also ``aw_old`` (an AW handshake now is an older one's:
    one has AWs left) and ``b_old`` (a B response now is an older one's: one is owed one), which
    :func:`rtl.engines.transfer.store_path.w_channel` keeps out of the running instruction's ``aw_all`` and
    ``err``; ``aw_to[k]`` / ``b_to[k]``: entry ``k`` is the one."""
    n = range(cfg.max_outstanding_writes + 1)
    e = [SimpleNamespace(valid=Signal(name=f"old{k}_valid"), aw_all=Signal(name=f"old{k}_aw_all"),
                         owed=Signal(n, name=f"old{k}_owed"), err=Signal(name=f"old{k}_err")) for k in range(OLDER)]
    aw_left = [x.valid & ~x.aw_all for x in e]
    b_owed = [x.valid & (x.owed != 0) for x in e]
    # (in start order: an older one's AWs all go out, and its B responses all come, before a younger one's)
    aw_to = [aw_left[k] & ~Cat(aw_left[:k]).any() for k in range(OLDER)]
    b_to = [b_owed[k] & ~Cat(b_owed[:k]).any() for k in range(OLDER)]
    return SimpleNamespace(e=e, aw_old=Cat(aw_left).any(), b_old=Cat(b_owed).any(), aw_to=aw_to, b_to=b_to,
                           valid=e[0].valid, full=e[-1].valid)


def overlap_completion(m, engine, s, walk_addr, walk_data, a, st, old, err):
    """``done``, ``status`` and ``release`` of the UB -> GM half with overlap (it replaces
    ``TransferEngine._completion``).

    - ``release``: the queue of older TSTOREs has room, no empty region waits, not a ``start`` cycle, and
      the engine is idle or the running TSTORE's walkers have emitted their last lines (``busy`` low, and
      the address-side walker, which starts a cycle after ``start``, has started).
    - a ``start`` while a TSTORE runs (and its ``done`` is not answered now) queues it behind the older
      ones: its AW count, the bursts it is owed (those in flight less the older ones') and its error.
    - the oldest is done once its last AW is out and nothing is owed it (registers); it leaves the queue;
      the running one once its last AW is out and no burst at all is in flight (``wr_idle``, a register: the
      older ones' responses come first, so their ``done`` are earlier); an empty region's ``done``, a cycle
      after its ``start``, waits for every older one's. At most one of the three in a cycle, in start
      order.

    ``st`` is :func:`rtl.engines.transfer.store_path.w_channel`'s namespace, ``a``
    :func:`rtl.engines.transfer.address_side.address_side`'s, ``err`` the running instruction's error."""
    axi, e = engine.axi, old.e
    b_err = a.b_fire & (axi.bresp != Resp.OKAY)
    # each entry after this cycle's AW and B (an AW to the oldest with AWs left, a B to the oldest owed one)
    nxt = []
    for k, x in enumerate(e):
        aw, b = a.aw_fire & old.aw_to[k], a.b_fire & old.b_to[k]
        nxt.append(SimpleNamespace(valid=x.valid, aw_all=x.aw_all | (aw & st.burst_last), owed=x.owed + aw - b,
                                   err=x.err | (b & b_err)))

    empty_wait = Signal(name="empty_wait")      # an empty region's ``done`` waits for the older ones'
    cur_done = Signal(name="store_cur_done")
    old_done = Signal(name="store_old_done")
    empty_go = Signal(name="store_empty_done")
    cur_taken = Signal(name="store_cur_taken")
    m.d.comb += [cur_done.eq(s.running & st.aw_all & st.wr_idle),
                 old_done.eq(e[0].valid & e[0].aw_all & (e[0].owed == 0)),
                 empty_go.eq((s.empty_done | empty_wait) & ~old.valid),
                 cur_taken.eq(cur_done & ~old_done & ~empty_go)]
    with m.If(s.empty_done & old.valid):
        m.d.sync += empty_wait.eq(1)
    walked = ~walk_data.busy & ~walk_addr.busy & ~s.walk_addr_start
    m.d.comb += engine.release.eq(~old.full & ~empty_wait & ~s.empty_done & ~engine.start & (~s.running | walked))

    with m.If(old_done):
        m.d.comb += [engine.done.eq(1), engine.status.eq(Mux(e[0].err, Status.AXI_WRITE_ERROR, Status.OK))]
    with m.Elif(empty_go):
        m.d.comb += [engine.done.eq(1), engine.status.eq(Status.OK)]
        m.d.sync += empty_wait.eq(0)
    with m.Elif(cur_done):
        m.d.comb += [engine.done.eq(1), engine.status.eq(Mux(err, Status.AXI_WRITE_ERROR, Status.OK))]
        m.d.sync += [st.aw_all.eq(0), err.eq(0)]
        with m.If(~engine.start):           # (a start now sets ``running`` for the next one)
            m.d.sync += s.running.eq(0)

    # the queue: the oldest leaves when done; a start queues the running TSTORE behind the rest (the queue has
    # room: ``release``). Its own bursts in flight: all of them less the older ones'.
    left = nxt[1:] + [SimpleNamespace(valid=C(0, 1), aw_all=C(0, 1), owed=C(0, 1), err=C(0, 1))]
    fields = ("valid", "aw_all", "owed", "err")
    kept = [[Mux(old_done, getattr(left[k], f), getattr(nxt[k], f)) for f in fields] for k in range(OLDER)]
    run = SimpleNamespace(
        valid=C(1, 1), aw_all=st.aw_all | (a.aw_fire & st.burst_last & ~old.aw_old),
        owed=a.wr_out - sum(x.owed for x in e) + (a.aw_fire & ~old.aw_old) - (a.b_fire & ~old.b_old),
        err=err | (b_err & ~old.b_old))
    push = engine.start & s.running & ~cur_taken
    for k, x in enumerate(e):
        # the first free entry after the pop takes the running one
        free_here = ~kept[k][0] & (C(1, 1) if k == 0 else kept[k - 1][0])
        with m.If(push & free_here):
            m.d.sync += [getattr(x, f).eq(getattr(run, f)) for f in fields]
        with m.Else():
            m.d.sync += [getattr(x, f).eq(v) for f, v in zip(fields, kept[k])]
    with m.If(engine.start):
        m.d.sync += [err.eq(0), st.aw_all.eq(0)]
