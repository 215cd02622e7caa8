"""The LOCAL_GATHER engine's overlap (:class:`rtl.engines.local_gather.engine.LocalGatherEngine` built with
``overlap=True``, the concurrent unit; issue #33, item 5): it takes its next instruction once the running
one's last slot is issued, while that one's last slots are still in the pipeline behind the issue stage
(``PIPELINE`` = 8 cycles to their UB write) and in the write queue.

What the stages behind the issue read, and why the next ``start`` may change the setup then:

* the slot registers (``st[t]``: valid bits, ``pair``, ``r``, ``lo``, ``waddr``, ``offA`` / ``offB``, the
  instruction's last slot ``fin``) and D's ``k`` and source pointers are the slot's own already;
* D reads ``esz_d`` (a copy of the level-1 element size, a cycle behind it: the value of the slot's issue
  cycle) and ``g_idx_stride`` (index slots only, the first of which is issued with ``start``, its D a
  cycle later, after the load). The level-1 geometry loads only while the issue is idle, so every slot an
  instruction issues outside ``IDLE`` sees its own; a slot issued in the ``start`` cycle is an index read
  (no element size) whose D comes after the load;
* the stage before stage 1 (the lane masks, the second piece's rotation) reads the level-2 ``p_log2``
  (``P = min(B, W, 32)``), which the next instruction's setup rewrites ``GEOMETRY_DELAY`` = 2 cycles after
  its ``start``, while the running one's last slots have ``PIPELINE`` cycles to go: it travels with the
  slot (:func:`slot_geometry`: a register per stage from D on, the copies and ``P`` registered from it
  for the stage that reads them, as the serial engine registers them from its table);
* the index banks: the next instruction's first index read reaches its bank ``STAGE_1 + INDEX_WRITE``
  cycles after its issue, when the running one's last piece slot has read its index (in D, a cycle after
  its issue), as between two blocks of one instruction;
* the packing stage's pending word: every instruction ends with its pending bytes written (its last row's
  spilled word is flushed by its last slot, in ``DRAIN``, before the issue goes idle), so its last word
  leaves the pending byte enables empty and the next instruction's first word merges nothing of it;
* ``done``: the write queue's ``last`` mark on each instruction's last word, so with overlap ``done`` is
  the cycle the port takes a marked word (words leave in issue order: dones come in start order, each
  as alone), or an empty destination's register (:func:`release_and_done`), which waits until no older
  instruction is in flight.

So ``release`` (:func:`release_and_done`) rises ``RELEASE_CYCLES`` = 1 cycle after the running
instruction's last slot is issued (the issue state machine back in ``IDLE``), unless an empty destination
waits for its ``done`` or ``IN_FLIGHT`` instructions are in the engine.
"""

from types import SimpleNamespace

from amaranth import *

from rtl.engines.done_order import empty_done_in_order
from rtl.engines.local_gather.geometry import GEOMETRY_WIDTHS, PLOG2_COPIES
from rtl.isa import Status
from rtl.lib.contract import require
from rtl.lib.fanout import variant_copies

__all__ = ["slot_geometry", "release_and_done"]


def slot_geometry(m, eng, geo):
    """``p_log2`` of each slot, taken from the level-2 geometry in its issue cycle and carried with it, one
    register per stage, from D to the stage before stage 1, where the lane masks read it (as
    ``PLOG2_COPIES`` copies, for their fan-out) and the second piece's rotation reads ``P`` (a register
    loaded with ``1 << p_log2``). Returns a namespace with the two names :func:`place
    <rtl.engines.local_gather.placement.place>` reads of the geometry, ``g_P`` and ``g_plog2_copies``: the
    slot's own instead of the setup's.

    A piece slot is issued ``INDEX_MIN_CYCLES`` or more after its instruction's ``start``, when the level-2
    geometry is its own (``GEOMETRY_DELAY`` after ``start``; ``control_registers`` checks the margin);
    other slots (index reads, flushes) cover no lane, whatever they carry."""
    pre = eng.STAGE_1 - 1           # the stage that computes the lane masks and the rotations (``place``)
    require(pre > eng.D_STAGE,
            f"p_log2 travels from D (D_STAGE = {eng.D_STAGE}) to the stage before stage 1 "
            f"(STAGE_1 - 1 = {pre}) in registers: that stage must come after D")
    prev = geo.g_plog2              # the issue cycle's: the register of stage t holds it t cycles later
    for t in range(eng.D_STAGE, pre):
        r = Signal(len(geo.g_plog2), name=f"s{t}_plog2", reset_less=True)
        m.d.sync += r.eq(prev)
        prev = r
    copies = variant_copies(m, f"s{pre}_plog2_c", prev, PLOG2_COPIES)
    psize = Signal(GEOMETRY_WIDTHS["psize"], name=f"s{pre}_psize", reset_less=True)
    m.d.sync += psize.eq(C(1, len(psize)) << prev)
    return SimpleNamespace(g_P=psize, g_plog2_copies=copies)


def release_and_done(m, eng, geo, issue_idle, last_taken):
    """``done``, ``status`` and ``release`` with overlap.

    - ``done``: the port takes an instruction's last word (``last_taken``: the write queue's mark) or an
      empty destination is done (``empty_done``, a register). An empty one's ``done`` waits until no older
      instruction is in flight (``outstanding``: started with words, last word not yet taken; checked in
      the cycle after its ``start`` at the earliest, so alone it is done ``EMPTY_CYCLES`` after ``start``, as
      the serial engine). The two never fall in one cycle: an empty one waits for every older one's last
      word, and no instruction starts while it waits.
    - ``release``: the issue state machine is idle (``issue_idle``: the running instruction's last slot,
      its last row's flush included, was issued ``RELEASE_CYCLES`` or more cycles ago), no empty
      destination waits, fewer than ``IN_FLIGHT`` instructions with words are in flight, and not in a
      ``start`` cycle.

    Returns the namespace of ``outstanding``, ``waiting`` and ``empty_done``."""
    start = eng.start
    empty_done = Signal(name="empty_done")
    order = empty_done_in_order(m, start, geo.empty, last_taken, empty_done, eng.IN_FLIGHT)
    outstanding, waiting = order.outstanding, order.waiting
    m.d.comb += [eng.done.eq(last_taken | empty_done), eng.status.eq(Status.OK),
                 eng.release.eq(issue_idle & ~start & ~waiting & (outstanding < eng.IN_FLIGHT))]
    return SimpleNamespace(outstanding=outstanding, waiting=waiting, empty_done=empty_done)
