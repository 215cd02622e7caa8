"""Per-pipe busy counters: how many cycles each pipe has spent on instructions since reset."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.isa import INSTRUCTIONS, Pipe

__all__ = ["PIPES", "COUNTER_BITS", "PerfSignature", "PipeCounters", "pipe_select"]

#: The pipes in counter order (``perf__busy__<k>`` is pipe ``PIPES[k]``).
PIPES = tuple(Pipe)
#: Width of every counter; it wraps (2^32 cycles is 43 s at 100 MHz: a host reads differences).
COUNTER_BITS = 32


class PerfSignature(wiring.Signature):
    """The counters as the unit drives them (``Out``): ``busy[k]``, :data:`COUNTER_BITS` bits, the cycles pipe
    ``PIPES[k]`` has spent on instructions since reset: the sum of the ``cycles`` of every response of an
    instruction of that pipe the checker passed (``OK`` or an execution status such as ``AXI_READ_ERROR``).
    A rejected command, TSYNC and an unknown opcode count in no pipe. Top-level names: ``perf__busy__0`` ...
    ``perf__busy__3``."""

    def __init__(self):
        super().__init__({"busy": Out(COUNTER_BITS).array(len(PIPES))})


def pipe_select(m, opcode, name="pipe"):
    """A one-hot ``Signal(len(PIPES))`` of ``opcode``'s pipe (all zero: no pipe), decoded from the instruction
    table (``rtl.isa.INSTRUCTIONS``)."""
    sel = Signal(len(PIPES), name=name)
    for k, pipe in enumerate(PIPES):
        ops = [op for op, ins in INSTRUCTIONS.items() if ins.pipe == pipe]
        m.d.comb += sel[k].eq(Cat(opcode == op for op in ops).any())
    return sel


class PipeCounters(wiring.Component):
    """Per-pipe busy counters.

    Ports
    -----
    add : In(1)
        Add ``amount`` to the counter of the pipe in ``pipe`` at this clock edge.
    pipe : In(len(PIPES))
        One-hot pipe (:func:`pipe_select`); all zero adds nothing.
    amount : In(COUNTER_BITS)
        The cycles to add (a response's ``cycles``).
    perf : Out(:class:`PerfSignature`)
        The counters, registers (reset to 0, wrapping).

    Latency: a counter holds its new value one cycle after ``add``. Each counter is one 32-bit adder into
    its own register, enabled by its pipe's bit; nothing else is between.
    """

    def __init__(self):
        super().__init__({"add": In(1), "pipe": In(len(PIPES)), "amount": In(COUNTER_BITS),
                          "perf": Out(PerfSignature())})

    def elaborate(self, platform):
        m = Module()
        for k, counter in enumerate(self.perf.busy):
            with m.If(self.add & self.pipe[k]):
                m.d.sync += counter.eq(counter + self.amount)
        return m
