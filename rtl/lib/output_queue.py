"""The output queue of a fixed pipeline (:class:`OutputQueue`): what lets a pipeline whose stages advance
every cycle wait for a port it shares, such as the UB write port."""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from rtl.lib.contract import require
from rtl.lib.fifo import RegFifo

__all__ = ["OutputQueue"]


class OutputQueue(wiring.Component):
    """Holds the words of a fixed pipeline while its consumer is not ready, with no cost while it is.

    A fixed pipeline cannot stop between its stages: a word it started leaves ``latency`` cycles later
    whatever the consumer does. It can only stop *issuing*: it issues work only while ``room`` is high,
    and ``room`` promises space here for every word that work and all earlier work can still produce.
    The queue then never overflows, and a consumer that is always ready sees the pipeline's words in the
    cycle they leave it, as if the queue were not there (the bypass).

    Parameters
    ----------
    shape : the words' shape (a layout or a width)
    depth : entries (:class:`rtl.lib.fifo.RegFifo`: the oldest in a register, the others in LUT RAM); at
        least :attr:`in_flight` + 1
    latency : the most cycles from an issue (a cycle with ``room`` high in which the pipeline starts
        work) to the word it produces at ``i_valid``; each issue produces at most one word, in issue order
    spacing : the fewest cycles between two issues (1: an issue every cycle). :attr:`in_flight`, the
        most words that issues made before a cycle can still bring, is ``ceil(latency / spacing)``.
    passthrough : build no queue: ``o`` is ``i`` and ``room`` is 1. Only for a consumer that is always
        ready (a refused word would be lost): ``Config.ub_write_queues = False``, the unit whose front end
        never refuses a UB write.

    Ports
    -----
    i_valid, i_payload : in, the pipeline's word; there is no ``ready``: a word is never refused while
        the pipeline issues only with ``room``
    o : stream out of ``shape``: the oldest word held, or, while nothing is held, the word at ``i`` in
        the same cycle (``o.valid`` = ``i_valid``). A word not taken (``o.ready`` low) is held and
        offered again, unchanged, in the next cycle.
    room : out, a register: the pipeline may issue in this cycle. With ``count`` the words held at the
        start of a cycle, it is ``count + in_flight <= depth - 1``: the words arriving before this cycle's
        issue can (``latency`` cycles from now) come from issues made before it, ``in_flight`` at most.
    empty : out, a register: nothing is held (the bypass is open).
    level : out, the words held (a register).

    Latency: 0 while nothing is held (``o`` is ``i``, one 2:1 multiplexer whose select is a register);
    a held word is offered from the cycle after it arrived. Throughput: a word per cycle.

    Timing: ``o`` is the FIFO's head register or ``i`` (a 2:1 multiplexer of a register and the pipeline's
    output, select a register), never a LUT RAM read: the consumer's register (the front end's write
    register, across the die) and anything decided from ``o`` (an engine's ``done`` from a word's mark)
    start at registers. (With the head in LUT RAM, its read was on the worst paths of the first
    synthesis: cf6e3e7, `small` seed 3 and `default` seed 2.)
    """

    @staticmethod
    def depth_for(latency, spacing=1):
        """The least power of two (at least 2) above ``ceil(latency / spacing)``: a depth whose ``room``
        stays high while the consumer takes every word."""
        return max(2, 1 << (-(-latency // spacing)).bit_length())

    def __init__(self, shape, depth, latency, spacing=1, *, passthrough=False):
        self.in_flight = -(-latency // spacing)
        require(depth >= self.in_flight + 1,
                f"OutputQueue: depth ({depth}) must be at least ceil(latency / spacing) + 1 = "
                f"{self.in_flight + 1} (latency {latency}, spacing {spacing}), else room is never high: the "
                f"words of the issues in flight need space while one more is issued")
        self._shape, self.depth, self.latency, self.spacing = shape, depth, latency, spacing
        self.passthrough = passthrough
        super().__init__({
            "i_valid": In(1), "i_payload": In(shape),
            "o": Out(stream.Signature(shape)),
            "room": Out(1), "empty": Out(1), "level": Out(range(depth + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        if self.passthrough:        # a consumer that is always ready: the queue is a wire
            m.d.comb += [self.o.valid.eq(self.i_valid), self.o.payload.eq(self.i_payload),
                         self.room.eq(1), self.empty.eq(1), self.level.eq(0)]
            return m
        width = Shape.cast(self._shape).width
        m.submodules.fifo = fifo = RegFifo(width, self.depth)
        held = fifo.r_rdy                       # a register: the FIFO holds a word (its head is a register)
        m.d.comb += [
            self.o.valid.eq(held | self.i_valid),
            self.o.payload.eq(Mux(held, fifo.r_data, self.i_payload)),
            fifo.r_en.eq(held & self.o.ready),
            # the word at ``i`` goes into the FIFO unless it passes at once (nothing held, taken now)
            fifo.w_data.eq(self.i_payload),
            fifo.w_en.eq(self.i_valid & (held | ~self.o.ready)),
            self.empty.eq(~held), self.level.eq(fifo.level),
        ]
        # room in the next cycle, from the count it will start with
        count_next = fifo.level + fifo.w_en - (held & self.o.ready)
        room = Signal(init=1, name="room_r")
        m.d.sync += room.eq(count_next + self.in_flight <= self.depth - 1)
        m.d.comb += self.room.eq(room)
        return m
