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
    instruction of that pipe the checker passed (in the counter :attr:`PipeCounters.LATENCY` cycles after the
    response is taken) (``OK`` or an execution status such as ``AXI_READ_ERROR``).
    A rejected command, TSYNC and an unknown opcode count in no pipe. Top-level names: ``perf__busy__0`` ...
    ``perf__busy__3``.

    With ``stalled`` (a unit whose pipes run at once, ``Config.concurrent``) also ``stalled[k]``
    (``perf__stalled__<k>``): the cycles pipe ``PIPES[k]`` ran nothing while its next instruction waited on an
    older one of another pipe (a hazard; ``rtl.frontend.dispatch.Dispatcher.stalled``), and ``busy[k]`` counts
    the cycles the pipe ran an instruction (the responses' ``cycles`` would count the overlap twice); and
    ``early[k]`` (``perf__early__<k>``): the instructions of pipe ``PIPES[k]`` that started while the pipe's
    previous one was still in its engine (``Config.pipe_overlap``: the engine had released it,
    ``rtl.frontend.pipe_front.PipeFrontEnd``'s ``early``)."""

    def __init__(self, stalled=False):
        members = {"busy": Out(COUNTER_BITS).array(len(PIPES))}
        if stalled:
            members["stalled"] = Out(COUNTER_BITS).array(len(PIPES))
            members["early"] = Out(COUNTER_BITS).array(len(PIPES))
        super().__init__(members)


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

    Latency: :attr:`LATENCY` = 2: a counter holds its new value two cycles after ``add``. ``add`` comes
    from the response handshake (``m_axis_rsp.tready``, an input port, through the front end's state), so
    the enables and the amount are registered first and each counter's 32-bit adder runs from registers to
    its own register (without that register the handshake and the carry chain made a 9.9 ns path on
    ``small``).
    """

    #: Cycles from ``add`` to the counter's new value: the input register, then the counter.
    LATENCY = 2

    def __init__(self):
        super().__init__({"add": In(1), "pipe": In(len(PIPES)), "amount": In(COUNTER_BITS),
                          "perf": Out(PerfSignature())})

    def elaborate(self, platform):
        m = Module()
        enable = Signal(len(PIPES), name="add_q")
        amount = Signal(COUNTER_BITS, name="amount_q", reset_less=True)
        m.d.sync += [enable.eq(self.pipe & self.add.replicate(len(PIPES))), amount.eq(self.amount)]
        for k, counter in enumerate(self.perf.busy):
            with m.If(enable[k]):
                m.d.sync += counter.eq(counter + amount)
        return m
