"""FIFOs and queues: :class:`RegFifo` (a registered head), :class:`LutFifo` (LUT RAM),
:class:`BeatBuffer` (the last popped entry in a register), :class:`LineQueue` (two registers between a
producer and a deep ``ready``).
"""

from amaranth import *
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RegFifo", "LutFifo", "BeatBuffer", "LineQueue", "oldest_first", "ring_index", "ring_push",
           "pointer_groups", "bit_slices"]


#: Bits of a wide LUT-RAM queue's entry behind one pair of pointers (:func:`pointer_groups`): 32 RAM cells
#: of 4 bits, so that a pointer bit drives a net of a few dozen loads.
GROUP_BITS = 128


def bit_slices(width, groups):
    """The ``(lo, hi)`` bit ranges of ``width`` bits cut into ``groups`` slices of (nearly) equal size: the
    slices of :class:`RegFifo`, :class:`LutFifo` and :class:`BeatBuffer` with pointers of their own, and the
    parts of a wide register selected by a copy each (the concurrent front end's command registers)."""
    bounds = [width * g // groups for g in range(groups + 1)]
    return list(zip(bounds, bounds[1:]))


def pointer_groups(width):
    """The ``groups`` of a :class:`LutFifo` (or :class:`RegFifo`) of ``width``-bit entries whose pointers
    should each drive at most :data:`GROUP_BITS` bits of its memory."""
    return max(1, -(-width // GROUP_BITS))


def lut_ring(m, width, depth):
    """The storage of a FIFO of ``depth`` entries in LUT RAM, added to ``m``: the memory (submodule
    ``mem``), its write port and asynchronous read port, the write and read pointers ``produce`` and
    ``consume`` (the ports' addresses) and ``count``, the entries held (``range(depth + 1)``). The caller
    drives the ports' data and enables and moves the pointers and the count."""
    mem = m.submodules.mem = memory.Memory(shape=width, depth=depth, init=[])
    wp = mem.write_port()
    rp = mem.read_port(domain="comb")
    produce = Signal(range(depth))
    consume = Signal(range(depth))
    count = Signal(range(depth + 1))
    m.d.comb += [wp.addr.eq(produce), rp.addr.eq(consume)]
    return wp, rp, produce, consume, count


def count_flags(m, count, nonempty, full, add, remove, capacity):
    """Keep ``count`` (entries of ``capacity``) and its two flags as registers: ``nonempty``
    (``count != 0``) and ``full`` (``count == capacity``), updated from the register ``count`` on an
    ``add`` without a ``remove`` and back."""
    with m.If(add & ~remove):
        m.d.sync += [count.eq(count + 1), nonempty.eq(1), full.eq(count == capacity - 1)]
    with m.Elif(remove & ~add):
        m.d.sync += [count.eq(count - 1), nonempty.eq(count != 1), full.eq(0)]


def oldest_first(m, entries, count, push, pop, value):
    """A short list of registers ``entries`` kept oldest first, ``count`` of them in use before this edge
    (the caller's register, which it updates by ``push - pop``): at ``pop`` each entry moves down one (the
    oldest leaves), at ``push`` ``value`` goes in after the last one left. A few entries only: each is a
    select of its neighbour and ``value``. (The concurrent front end's released instructions: their
    scoreboard slots in the dispatcher, their tags and stamps in the front end.)"""
    with m.If(pop):
        for i in range(len(entries) - 1):
            m.d.sync += entries[i].eq(entries[i + 1])
    with m.If(push):
        for i, e in enumerate(entries):
            with m.If(count - pop == i):
                m.d.sync += e.eq(value)


def ring_index(head, i, n):
    """``(head + i) mod n`` for ``head < n`` and ``i <= n``: the slot of the ``i``-th oldest entry of a ring
    of ``n`` registers whose oldest is at ``head`` (:func:`ring_push`)."""
    s = head + i
    return Mux(s >= n, s - n, s)[:max(1, (n - 1).bit_length())]


def ring_push(m, entries, head, count, push, value):
    """A short list of registers ``entries`` used as a ring: ``count`` of them in use from slot ``head`` on
    (the caller's registers: it moves ``head`` on by one at a pop, :func:`ring_index`, and ``count`` by
    ``push - pop``); at ``push`` ``value`` goes into the slot after the newest. Unlike :func:`oldest_first`
    nothing moves at a pop, so an entry's enable is ``push`` and the registers ``head`` and ``count``, and
    its data is ``value``: a pop, often late logic, reaches only ``head`` and ``count`` (the concurrent front
    end's released instructions: a pop to their ~160 shifting registers was a worst routed path at a
    seed, docs/synthesis.md "Concurrency control")."""
    n = len(entries)
    tail = ring_index(head, count, n)
    for i, e in enumerate(entries):
        with m.If(push & (tail == i)):
            m.d.sync += e.eq(value)


class RegFifo(wiring.Component):
    """A synchronous FIFO of ``depth`` entries whose head is a register: ``r_data`` and ``r_rdy`` come from
    flip-flops. The other ``depth - 1`` entries are an asynchronously read memory (LUT RAM on an FPGA).

    An entry written into an empty FIFO is at the head in the next cycle (as a plain register stage);
    one write and one read per cycle. With ``direct_on_pop=False`` an entry written while the only
    entry leaves the head arrives a cycle later (a bubble), so that the memory's write enable never
    depends on the reader (for a reader whose ``r_en`` is deep logic). ``w_rdy`` is a register (it does not depend on ``r_en``), and so
    is "the memory holds entries", which decides where the head comes from.

    Ports: ``w_data``, ``w_en``, ``w_rdy``; ``r_data``, ``r_rdy``, ``r_en``; ``level`` (entries held),
    ``mem_level`` (entries behind the head: a register); ``empty`` (nothing held: two registers);
    ``w_taken`` (only while ``empty``: the entry written now is used at once by the reader, through a
    bypass around the FIFO, and is dropped; it decides only the head's valid bit, so the memory's write
    enable and the head's load never wait for the reader).
    """

    def __init__(self, width, depth, direct_on_pop=True, groups=1):
        assert depth >= 2
        self.width, self.depth = width, depth
        self._direct_on_pop = direct_on_pop
        self._groups = max(1, min(groups, width))
        super().__init__({
            "w_data": In(width), "w_en": In(1), "w_rdy": Out(1),
            "r_data": Out(width), "r_rdy": Out(1), "r_en": In(1),
            "level": Out(range(depth + 1)), "mem_level": Out(range(depth)), "empty": Out(1),
            "w_taken": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        inner = self.depth - 1
        count = Signal(range(inner + 1))          # entries in the memory
        nonempty = Signal()                         # count != 0, as a register
        full = Signal()                             # count == inner, as a register
        head = Signal(self.width, reset_less=True)
        valid = Signal()

        def incr(x):
            return Mux(x == inner - 1, 0, x + 1) if inner & (inner - 1) else (x + 1)[:len(x)]

        write = self.w_en & ~full
        pop = valid & self.r_en
        free = ~valid | pop                         # the head register can be loaded
        from_mem = free & nonempty
        if self._direct_on_pop:                     # straight into the head
            direct = free & ~nonempty & write
        else:                                       # ... only into an empty one (the memory's write
            direct = ~valid & ~nonempty & write     # enable does not wait for the reader)
        to_mem = write & ~direct
        m.d.comb += [
            self.w_rdy.eq(~full), self.empty.eq(~valid & ~nonempty),
            self.r_rdy.eq(valid), self.r_data.eq(head),
            self.level.eq(count + valid), self.mem_level.eq(count),
        ]
        # The memory in ``groups`` slices of bits, each with its own pointers (counters of their own
        # value: synthesis keeps them apart), so that a pointer bit drives one slice's multiplexers.
        # The slot at ``produce`` is free unless full: written in every such cycle, an entry only moves
        # the pointer, so the writer's valid drives no write enable.
        data = Signal(self.width)
        for g, (lo, hi) in enumerate(bit_slices(self.width, self._groups)):
            mem = memory.Memory(shape=hi - lo, depth=1 << (inner - 1).bit_length(), init=[])
            m.submodules[f"mem{g}" if self._groups > 1 else "mem"] = mem
            wp, rp = mem.write_port(), mem.read_port(domain="comb")
            produce = Signal(range(inner), name=f"produce{g}")
            consume = Signal(range(inner), name=f"consume{g}")
            m.d.comb += [wp.addr.eq(produce), wp.data.eq(self.w_data[lo:hi]), wp.en.eq(~full),
                         rp.addr.eq(consume), data[lo:hi].eq(rp.data)]
            with m.If(to_mem):
                m.d.sync += produce.eq(incr(produce))
            with m.If(from_mem):
                m.d.sync += consume.eq(incr(consume))
        with m.If(from_mem):
            m.d.sync += head.eq(data)
        with m.Elif(direct):
            m.d.sync += head.eq(self.w_data)
        m.d.sync += valid.eq(from_mem | (direct & ~(self.w_taken & ~valid)) | (valid & ~pop))
        count_flags(m, count, nonempty, full, to_mem, from_mem, inner)
        return m


class LutFifo(wiring.Component):
    """A synchronous FIFO of ``depth`` entries in an asynchronously read memory (LUT RAM): ``r_data`` is the
    memory read at the head pointer, so a read changes only the pointer and two flags (no wide register
    to reload). ``r_rdy`` ("not empty") and ``w_rdy`` ("not full") are registers. An entry written in
    cycle ``t`` can be read from ``t + 1``.

    For the clock a wide entry can be split into ``groups`` slices of bits, each in its own memory with its
    own write and read pointers (counters of their own value, so synthesis keeps them apart): a pointer bit
    then drives the address of one slice's RAM cells, not of the whole entry's (an entry of ~650 bits is
    ~160 LUT-RAM cells, and one pointer net to all of them was the concurrent front end's worst path,
    docs/synthesis.md "Concurrency control"). ``groups=1`` is one memory and one pair of pointers.

    Ports: ``w_data``, ``w_en``, ``w_rdy``; ``r_data``, ``r_rdy``, ``r_en``; ``level``; ``r_rdy_slices``
    (``Out(groups)``): ``r_rdy`` once per slice, each a register kept from that slice's own count (so
    synthesis keeps them apart), for a reader that selects the head's bits by ``r_rdy``: copy ``g`` drives
    the selects of slice ``g``'s share, not all of them (the concurrent front end's command registers).
    """

    def __init__(self, width, depth, groups=1):
        assert depth >= 2
        self.width, self.depth = width, depth
        self.groups = max(1, min(groups, width))
        super().__init__({
            "w_data": In(width), "w_en": In(1), "w_rdy": Out(1),
            "r_data": Out(width), "r_rdy": Out(1), "r_en": In(1),
            "level": Out(range(depth + 1)), "r_rdy_slices": Out(self.groups),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.depth
        slices = bit_slices(self.width, self.groups)
        rings = []
        for g, (lo, hi) in enumerate(slices):
            sub = m if self.groups == 1 else Module()
            rings.append(lut_ring(sub, hi - lo, n))
            if self.groups > 1:
                m.submodules[f"ring{g}"] = sub
        count = rings[0][4]
        nonempty, full = Signal(), Signal()

        def incr(x):
            return Mux(x == n - 1, 0, x + 1) if n & (n - 1) else (x + 1)[:len(x)]

        write = self.w_en & ~full
        read = self.r_en & nonempty
        m.d.comb += [self.w_rdy.eq(~full), self.r_rdy.eq(nonempty),
                     self.r_data.eq(Cat(rp.data for _, rp, _, _, _ in rings)), self.level.eq(count)]
        for g, ((wp, rp, produce, consume, own), (lo, hi)) in enumerate(zip(rings, slices)):
            m.d.comb += [wp.data.eq(self.w_data[lo:hi]), wp.en.eq(~full)]     # (as RegFifo)
            with m.If(write):
                m.d.sync += produce.eq(incr(produce))
            with m.If(read):
                m.d.sync += consume.eq(incr(consume))
            if g:       # slice g's copy of "not empty", from its own count (its "full" is left unused)
                own_nonempty = Signal(name=f"nonempty{g}")
                count_flags(m, own, own_nonempty, Signal(name=f"full{g}"), write, read, n)
                m.d.comb += self.r_rdy_slices[g].eq(own_nonempty)
        m.d.comb += self.r_rdy_slices[0].eq(nonempty)
        count_flags(m, count, nonempty, full, write, read, n)
        return m


class BeatBuffer(wiring.Component):
    """A FIFO of ``depth`` entries of ``width`` bits in LUT RAM whose reader sees, instead of a head, the
    entry it popped last (``last``: a register, loaded on a pop from the LUT RAM at a registered address)
    and, in the cycle after a pop, the entry popped before it (``before``: ``last`` of the previous cycle,
    a register loaded in every cycle). The reader's data path is the same in every cycle and starts at a
    register beside the LUT RAM, not at the LUT RAM's asynchronous read (the R beat buffer's read into the
    realigner's coarse shift was the worst path of several `default` runs); and the pop, a decision that
    may come from across the die, reaches only the enable of ``last`` and the pointers, not the LUT RAM's
    read address (the pop through the pointer's increment into the address was the worst path, 12.7 ns,
    of `default` seed 1 at 4d15994, the LUT RAM 60 rows from the engine's control).

    Ports: ``w_data``, ``w_en``, ``w_rdy`` (a register: room for one more entry); ``pop`` (take the
    oldest entry; only while ``avail``), ``avail`` (entries not popped yet: a register); ``last`` (the
    entry popped last: from the cycle after the pop), ``before`` (in the cycle after a pop: the entry
    popped before it; garbage before two pops).

    The memory keeps the slot of the entry popped last, so at most ``depth - 1`` are waiting. For the
    clock the entries are split into ``groups`` slices of bits, each in its own memory with its own read
    and write pointers: a pointer bit drives the read multiplexers of one slice, not of the whole word
    (the pointers are counters, each of its own value, so synthesis keeps them apart). The slot at the
    write pointer is free while there is room, so it is written in every such cycle and a write only
    moves the pointer: ``w_en`` drives no write enable.
    """

    #: Cycles from a write (``w_en``) to ``avail`` showing the entry (the count is a register).
    AVAIL_CYCLES = 1
    #: Cycles from a ``pop`` to the popped entry on ``last`` (a register loaded on the pop).
    LAST_CYCLES = 1

    def __init__(self, width, depth, groups=1):
        assert depth >= 4 and depth & (depth - 1) == 0
        self.width, self.depth, self.groups = width, depth, min(groups, width)
        super().__init__({
            "w_data": In(width), "w_en": In(1), "w_rdy": Out(1),
            "pop": In(1), "avail": Out(1),
            "last": Out(width), "before": Out(width),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.depth
        ab = n.bit_length() - 1
        write = Signal()
        m.d.comb += write.eq(self.w_en & self.w_rdy)
        slices = bit_slices(self.width, self.groups)
        # The pointers do not reset (many flip-flops on the reset net): ``clean``, which does, sets them in
        # the cycle after a reset, when nothing is written or popped (``room`` and ``avail`` are low).
        clean = Signal()
        m.d.sync += clean.eq(1)
        last = Signal(self.width, reset_less=True)
        for g, (lo, hi) in enumerate(slices):
            # entry e is at address e + 1, so ``head`` (the oldest entry's address) is one past the slot
            # of the entry popped last
            head = Signal(ab, name=f"head{g}", init=1, reset_less=True)
            wp = Signal(ab, name=f"wp{g}", init=1, reset_less=True)   # where the memory writes (+1)
            with m.If(~clean):
                m.d.sync += [head.eq(1), wp.eq(1)]
            with m.Else():
                with m.If(self.pop):
                    m.d.sync += head.eq(head + 1)
                with m.If(write):
                    m.d.sync += wp.eq(wp + 1)
            mem = memory.Memory(shape=hi - lo, depth=n, init=[])
            m.submodules[f"mem{g}"] = mem
            w, r = mem.write_port(), mem.read_port(domain="comb")
            m.d.comb += [w.addr.eq(wp), w.data.eq(self.w_data[lo:hi]), w.en.eq(self.w_rdy),
                         r.addr.eq(head)]
            # (the head was written at least a cycle before ``avail`` rose, and the slot written is never
            # the head's while it waits: it is free)
            with m.If(self.pop):
                m.d.sync += last[lo:hi].eq(r.data)
        m.d.comb += self.last.eq(last)
        before = Signal(self.width, reset_less=True)
        m.d.sync += before.eq(last ^ (~clean).replicate(self.width))
        m.d.comb += self.before.eq(before)
        count = Signal(range(n + 1))      # entries written and not popped
        room = Signal()                   # count <= depth - 2: one more may come (the last popped kept)
        nonempty = Signal()
        nxt = Signal.like(count)
        m.d.comb += [nxt.eq(count + write - self.pop), self.w_rdy.eq(room), self.avail.eq(nonempty)]
        m.d.sync += [count.eq(nxt), room.eq(nxt <= n - 2), nonempty.eq(nxt != 0)]
        return m


class LineQueue(wiring.Component):
    """Two entries of registers between a producer that should advance on registers only (a walker, a
    queue's head register: many flip-flops change when it moves) and a consumer whose ``ready`` is deep
    logic. ``i.ready`` is "not full", a register, so the producer moves on that alone; the consumer sees
    the older entry, or the producer's item itself while the queue is empty (no cycle is lost), and its
    ``ready`` moves only pointers and counters.

    Ports: ``i`` (stream in), ``o`` (stream out: ``valid`` is ``i.valid`` or a register, the payload an
    entry selected by a register or ``i.payload``).
    """

    def __init__(self, shape):
        super().__init__({
            "i": In(stream.Signature(shape)),
            "o": Out(stream.Signature(shape)),
        })

    def elaborate(self, platform):
        m = Module()
        shape = self.i.payload.shape()
        q = [Signal(shape, name=f"q{k}", reset_less=True) for k in range(2)]
        rp, wp = Signal(), Signal()
        count = Signal(range(3))
        nonempty, full = Signal(), Signal()
        push = Signal()
        m.d.comb += [
            self.i.ready.eq(~full), push.eq(self.i.valid & ~full),
            self.o.valid.eq(nonempty | self.i.valid),
            self.o.payload.eq(Mux(nonempty, Mux(rp, q[1], q[0]), self.i.payload)),
        ]
        pop = self.o.valid & self.o.ready
        stored = push & ~(pop & ~nonempty)          # not taken straight from the producer
        taken = pop & nonempty                      # an entry leaves
        for k in range(2):               # (the entry at ``wp`` is free unless full: loaded in every such cycle)
            with m.If(~full & (wp == k)):
                m.d.sync += q[k].eq(self.i.payload)
        with m.If(stored):
            m.d.sync += wp.eq(~wp)
        with m.If(taken):
            m.d.sync += rp.eq(~rp)
        nxt = Signal.like(count)
        m.d.comb += nxt.eq(count + stored - taken)
        m.d.sync += [count.eq(nxt), nonempty.eq(nxt != 0), full.eq(nxt == 2)]
        return m
