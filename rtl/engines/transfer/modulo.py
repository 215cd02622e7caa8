"""MGATHER WRAP: ``u mod s`` in a pipeline of restoring-division steps.
"""

from amaranth import *
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["ModuloPipeline"]


class ModuloPipeline(wiring.Component):
    """``u mod s`` for unsigned ``width``-bit operands, one restoring-division step per stage.

    Ports: ``i_valid``, ``i_u``, ``i_tag`` in, ``i_s`` in (the divisor: it must hold its value from one
    cycle before the first input until the last result); ``o_valid``, ``o_r``, ``o_tag`` out
    :attr:`latency` cycles later. No backpressure: the user bounds what is in flight. ``s`` must be
    non-zero. Throughput one per cycle.

    Structure (area and clock): an input register, then ``width`` stages; stage ``k`` holds only what is
    still needed: the ``width - 1 - k`` bits of ``u`` not yet shifted in and a remainder of at most
    ``k + 1`` bits. The divisor is constant, so it is not pipelined with the data; it travels down a chain
    of copies, one per :attr:`GROUP` stages (copy ``j`` is ``s`` delayed by ``j + 1`` cycles, which its
    stages see no earlier than they need it), so that each of its bits drives a few subtractors next to
    it instead of every stage across the pipeline; "``s`` has a bit above the remainder's width" is a
    register per stage, from its copy. The tag waits in a ring of LUT RAM (written and read at the
    same address, :attr:`latency` cycles apart). Only the valid bits reset.
    """

    #: Stages that share one copy of the divisor.
    GROUP = 4
    #: The input register, in front of the ``width`` division stages.
    INPUT_CYCLES = 1
    #: Cycles ``i_s`` must hold its value before the first input (copy ``j`` of the divisor, which stage
    #: ``k`` of an input taken in cycle ``t`` sees in cycle ``t + 1 + k``, is ``s(t + k - j)``: at least
    #: ``s(t - 1)``).
    DIVISOR_LEAD = 1

    @classmethod
    def latency_of(cls, width):
        """Cycles from an input to its result for ``width``-bit operands: the input register and one
        stage per bit."""
        return cls.INPUT_CYCLES + width

    def __init__(self, width, tag_width):
        self._w = width
        #: cycles from an input to its result (:meth:`latency_of`)
        self.latency = self.latency_of(width)
        super().__init__({
            "i_valid": In(1), "i_u": In(width), "i_s": In(width), "i_tag": In(tag_width),
            "o_valid": Out(1), "o_r": Out(width), "o_tag": Out(tag_width),
        })

    def elaborate(self, platform):
        m = Module()
        w = self._w
        # the divisor's copies: copy j serves stages j * GROUP .. j * GROUP + GROUP - 1 (stage k works on
        # an input taken in cycle t in cycle t + 1 + k and sees s(t + k - j), at least s(t - 1))
        copies = []
        prev = self.i_s
        for j in range(-(-w // self.GROUP)):
            c = Signal(w, name=f"s_copy{j}", reset_less=True)
            m.d.sync += c.eq(prev)
            copies.append(c)
            prev = c

        valid = Signal(name="v_in")
        u = Signal(w, name="u_in", reset_less=True)
        m.d.sync += [valid.eq(self.i_valid), u.eq(self.i_u)]
        r = C(0, 0)
        for k in range(w):
            s = copies[k // self.GROUP]
            shifted = Cat(u[-1], r)                          # r * 2 + the next bit of u
            nb = len(shifted)
            if nb < w:
                big = Signal(name=f"sbig{k}")                # no subtraction in this stage (one cycle
                m.d.sync += big.eq(s[nb:].any())             # behind the copy: s(t + k - j - 1))
                diff = shifted - s[:nb]
                ge = ~big & ~diff[nb]
            else:
                diff = shifted - s
                ge = ~diff[nb]
            nr = Signal(min(nb, w), name=f"r{k}", reset_less=True)
            m.d.sync += nr.eq(Mux(ge, diff[:len(nr)], shifted[:len(nr)]))
            nv = Signal(name=f"v{k}")
            m.d.sync += nv.eq(valid)
            if k < w - 1:
                nu = Signal(w - 1 - k, name=f"u{k}", reset_less=True)
                m.d.sync += nu.eq(u[:-1])
                u = nu
            valid, r = nv, nr
        depth = self.latency
        ring = m.submodules.tags = memory.Memory(shape=len(self.i_tag), depth=depth, init=[])
        wp, rp = ring.write_port(), ring.read_port(domain="comb")
        ptr = Signal(range(depth))
        m.d.sync += ptr.eq(Mux(ptr == depth - 1, 0, ptr + 1))
        m.d.comb += [wp.addr.eq(ptr), wp.data.eq(self.i_tag), wp.en.eq(1), rp.addr.eq(ptr)]
        m.d.comb += [self.o_valid.eq(valid), self.o_r.eq(r), self.o_tag.eq(rp.data)]
        return m
