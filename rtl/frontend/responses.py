"""The concurrent front end's response merge: one response stream out of the per-pipe response queues
(:class:`rtl.frontend.pipe_front.PipeFrontEnd`), fair among the pipes."""

from amaranth import *

from rtl.isa import Response
from rtl.lib.mux import and_or

__all__ = ["merge_responses"]


def merge_responses(m, queues, rsp):
    """The response queues (:class:`rtl.lib.fifo.LutFifo` of :data:`rtl.isa.Response`) into the stream
    ``rsp``, round robin: after a queue has sent, the next queue in order has the first turn. (One-hot: ``turn``
    a one-hot register, the pick one-hot from it and the queues' ``r_rdy`` registers, the payload an AND-OR of
    the picked queue's; a binary pick's priority chain and multiplexer were the front end's worst routed path,
    docs/synthesis.md "Concurrency control".)"""
    n = len(queues)
    turn = Signal(n, init=1)
    rdy = Cat(q.r_rdy for q in queues)
    pick = Signal(n)
    for j in range(n):
        # queue ``j`` is the first ready one at or after the turn ``t``: none of ``t .. j - 1`` is ready
        first = [turn[t] & ~Cat(rdy[(t + i) % n] for i in range((j - t) % n)).any() for t in range(n)]
        m.d.comb += pick[j].eq(rdy[j] & Cat(first).any())
    found = rdy.any()
    m.d.comb += [rsp.valid.eq(found),
                 rsp.payload.eq(and_or([(pick[j], q.r_data) for j, q in enumerate(queues)], Response.size))]
    for j, q in enumerate(queues):
        m.d.comb += q.r_en.eq(pick[j] & rsp.ready)
    with m.If(found & rsp.ready):
        m.d.sync += turn.eq(pick.rotate_left(1))
