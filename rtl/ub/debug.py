"""The UB debug port: a testbench's way to load and read the UB word by word while the unit is idle."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.ub.buffer import UnifiedBuffer

__all__ = ["UbDebugSignature", "debug_port"]


class UbDebugSignature(wiring.Signature):
    """The UB debug port, as seen by its user (the testbench): one word per transfer.

    A transfer happens at a clock edge where ``valid`` and ``ready`` are both high. ``we`` = 1: write
    ``wdata`` to word ``addr`` with byte enables ``be`` (bit ``i`` = byte ``i``, byte 0 = bits 7:0),
    effective at that edge. ``we`` = 0: read word ``addr``; ``rdata`` holds it in the next cycle, marked
    by ``rvalid`` (high for that one cycle). ``addr`` is a *word* address (byte address / word bytes).
    """

    def __init__(self, config):
        super().__init__({
            "valid": Out(1),
            "ready": In(1),
            "we": Out(1),
            "addr": Out(range(config.ub_words)),
            "wdata": Out(8 * config.ub_word_bytes),
            "be": Out(config.ub_word_bytes),
            "rdata": In(8 * config.ub_word_bytes),
            "rvalid": In(1),
        })


def debug_port(m, dbg, ub, wr, grant):
    """The UB debug port ``dbg`` (the unit's flipped :class:`UbDebugSignature`) on ``ub`` (a
    :class:`rtl.ub.buffer.UnifiedBuffer`): while ``grant`` (a register: the unit runs nothing) it drives UB read
    port 0 and the write port, which otherwise take ``wr`` (``{"addr", "data", "be"}``: the engines' write;
    with ``UnifiedBuffer(write_banks=True)`` a list of two, one per bank port, and the debug write goes to
    its word's bank); ``rvalid`` follows a read ``UnifiedBuffer.READ_LATENCY`` cycles later."""
    rd = ub.rd[0]
    fire = dbg.valid & grant
    m.d.comb += dbg.ready.eq(grant)
    if len(ub.write_ports) == 2:                # a port per bank: the debug word goes to its bank's
        for b, (port, w) in enumerate(zip(ub.write_ports, wr)):
            m.d.comb += [port.addr.eq(w["addr"]), port.data.eq(w["data"]), port.be.eq(w["be"])]
            with m.If(grant):
                m.d.comb += [port.addr.eq(dbg.addr), port.data.eq(dbg.wdata),
                             port.be.eq(Mux(fire & dbg.we & (dbg.addr[0] == b), dbg.be, 0))]
        with m.If(grant):
            m.d.comb += [rd.addr.eq(dbg.addr), rd.en.eq(fire & ~dbg.we)]
    else:
        wr = wr[0] if isinstance(wr, list) else wr
        m.d.comb += [ub.wr.addr.eq(wr["addr"]), ub.wr.data.eq(wr["data"]), ub.wr.be.eq(wr["be"])]
        with m.If(grant):
            m.d.comb += [rd.addr.eq(dbg.addr), rd.en.eq(fire & ~dbg.we),
                         ub.wr.addr.eq(dbg.addr), ub.wr.data.eq(dbg.wdata),
                         ub.wr.be.eq(Mux(fire & dbg.we, dbg.be, 0))]
    rvalid = fire & ~dbg.we
    for k in range(UnifiedBuffer.READ_LATENCY):
        r = Signal(name=f"dbg_rvalid{k + 1}")
        m.d.sync += r.eq(rvalid)
        rvalid = r
    m.d.comb += [dbg.rvalid.eq(rvalid), dbg.rdata.eq(rd.data)]
