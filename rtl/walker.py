"""Address walkers for 2-D transfers: lines of a tile, and AXI bursts within lines; :class:`RegFifo`, a
queue with a registered head.

Several consumers of one transfer (address issuer, data realigner, UB reader) each run their own walker
over the same parameters instead of sharing one through FIFOs: a walker is a few adders, a FIFO is RAM.
"""

from amaranth import *
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["LINE_BYTES_BITS", "LineInit", "LineStep", "LineDesc", "LineWalker", "BurstLine", "BurstDesc",
           "BurstWalker", "burst_chunk_beats", "RegFifo", "LutFifo", "BeatBuffer", "LineQueue"]

#: A line is at most 65535 elements of 4 bytes.
LINE_BYTES_BITS = 18


def LineInit(config):
    """Where a transfer's first line starts: loaded into a :class:`LineWalker` with ``start``. ``gm_last``
    is the GM address of the first line's last byte (``gm_addr + line_bytes - 1``); ``run`` is zero for an
    empty transfer (the walker then stays idle)."""
    return data.StructLayout({
        "ub_addr": 24,
        "gm_addr": config.gm_addr_bits,
        "gm_last": config.gm_addr_bits,
        "lines":   16,
        "run":     1,
    })


def LineStep(config):
    """What a :class:`LineWalker` adds per line, and the line length (``line_m1`` = ``line_bytes - 1``):
    stable from the cycle after ``start`` until the last line is taken."""
    return data.StructLayout({
        "ub_stride":  24,
        "gm_stride":  32,
        "line_bytes": LINE_BYTES_BITS,
        "line_m1":    LINE_BYTES_BITS,
    })


def span_bits(config):
    """Width of a line's ``span``: the chunks of :func:`burst_chunk_beats` beats it touches, minus one."""
    k = (config.axi_data_bytes * burst_chunk_beats(config)).bit_length() - 1
    return max(1, LINE_BYTES_BITS + 1 - k)


def LineDesc(config):
    return data.StructLayout({
        "ub_addr":   24,
        "gm_addr":   config.gm_addr_bits,
        "gm_last":   config.gm_addr_bits,   # the line's last GM byte
        "one_chunk": 1,        # the line lies in one chunk of :func:`burst_chunk_beats` beats
        "span":      span_bits(config),    # the chunks it touches - 1
        "length":    LINE_BYTES_BITS,
        "last":      1,        # the transfer's last line
    })


class LineWalker(wiring.Component):
    """Emits one :func:`LineDesc` per line of a transfer, one per cycle.

    Ports: ``init`` (:func:`LineInit`, loaded at ``start``), ``step`` (:func:`LineStep`, stable from the
    cycle after ``start``; for ``one_chunk`` and ``span``, ``step.line_m1`` from the ``start`` cycle), ``start``
    (pulse; it restarts the walk), ``lines`` (stream out), ``busy``.

    Latency: the first line is valid the cycle after ``start``. Everything on ``lines`` is a register
    except ``last`` (``lines left == 1``, a compare of a register) and ``length`` (``step.line_bytes``);
    ``span`` and ``one_chunk`` (for :class:`BurstWalker`) are computed with each line's addresses (from
    the low bits only: (chunk offset + line bytes - 1) / chunk) and registered.
    """

    def __init__(self, config):
        self._config = config
        super().__init__({
            "init": In(LineInit(config)),
            "step": In(LineStep(config)),
            "start": In(1),
            "busy": Out(1),
            "lines": Out(stream.Signature(LineDesc(config))),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        k = (cfg.axi_data_bytes * burst_chunk_beats(cfg)).bit_length() - 1     # chunk bytes, log2
        p = self.step
        ub = Signal(24)
        gm = Signal(cfg.gm_addr_bits)
        gl = Signal(cfg.gm_addr_bits)
        one = Signal()
        span = Signal(span_bits(cfg))
        left = Signal(16)
        m.d.comb += [
            self.lines.valid.eq(self.busy),
            self.lines.payload.ub_addr.eq(ub),
            self.lines.payload.gm_addr.eq(gm),
            self.lines.payload.gm_last.eq(gl),
            self.lines.payload.one_chunk.eq(one), self.lines.payload.span.eq(span),
            self.lines.payload.length.eq(p.line_bytes),
            self.lines.payload.last.eq(left == 1),
        ]
        def chunks(low):                # a line at chunk offset ``low``: [span, one_chunk] assignments
            t = (low + p.line_m1) >> k
            return [span.eq(t), one.eq(t == 0)]

        with m.If(self.start):
            m.d.sync += [ub.eq(self.init.ub_addr), gm.eq(self.init.gm_addr), gl.eq(self.init.gm_last),
                         *chunks(self.init.gm_addr[:k]), left.eq(self.init.lines), self.busy.eq(self.init.run)]
        with m.Elif(self.busy & self.lines.ready):
            m.d.sync += [ub.eq(ub + p.ub_stride), gm.eq(gm + p.gm_stride), gl.eq(gl + p.gm_stride),
                         *chunks((gm[:k] + p.gm_stride[:k])[:k]), left.eq(left - 1)]
            with m.If(left == 1):
                m.d.sync += self.busy.eq(0)
        return m


def BurstLine(config):
    """A line as :class:`BurstWalker` takes it: ``gm_addr`` .. ``gm_last`` (bytes, inclusive);
    ``span``: the chunks of :func:`burst_chunk_beats` beats it touches, minus one; ``one_chunk``:
    ``span == 0`` (one burst); ``single``: the line lies in one bus beat (``gm_last``, ``span`` and
    ``one_chunk`` are not looked at); ``skip``: issue nothing for it."""
    return data.StructLayout({
        "gm_addr":   config.gm_addr_bits,
        "gm_last":   config.gm_addr_bits,
        "span":      span_bits(config),
        "one_chunk": 1,
        "single":    1,
        "skip":      1,
        "last":      1,
    })


def BurstDesc(config):
    return data.StructLayout({
        "addr": config.gm_addr_bits,   # aligned to the bus width
        "len":  8,                     # AXI encoding: beats - 1
        "last": 1,                     # the burst of a line marked ``last`` that ends it
    })


def burst_chunk_beats(config):
    """The beats of :class:`BurstWalker`'s chunks: the largest power of two that is at most
    ``max_burst_beats`` and at most a 4 KiB page of beats."""
    limit = min(config.max_burst_beats, 4096 // config.axi_data_bytes)
    return 1 << (limit.bit_length() - 1)


class BurstWalker(wiring.Component):
    """Splits lines into AXI INCR bursts: a burst is the part of a line inside one aligned *chunk* of
    :func:`burst_chunk_beats` beats (a power of two that divides 4 KiB), so it never crosses a 4 KiB
    boundary and has at most ``config.max_burst_beats`` beats. (For ``max_burst_beats`` of 256 and 32-byte
    beats, or of 16 and 16-byte beats, that is the 4 KiB rule or the burst limit taken from the start of
    each chunk; a ``max_burst_beats`` that is not a power of two gives shorter bursts.) One burst per
    cycle.

    Ports: ``lines`` (stream in, :func:`BurstLine`; ``ready`` depends on ``valid``), ``credit`` (in: a
    burst may be produced in this cycle), ``bursts`` (stream out, :func:`BurstDesc`: ``valid`` and the
    payload are the older of two entries of registers, selected by a register: producing a burst never
    waits for ``ready`` in the same cycle, and ``ready`` only moves that pointer), ``loaded`` (out: a
    burst enters the queue in this cycle; for outstanding-transaction counters). Lines marked ``skip``
    are taken without a burst.

    Latency: a burst is on ``bursts`` the cycle after its line is offered. Timing: whether the burst
    ends the line is a register (``one_chunk`` of the line, or for a later burst of a long line, "one
    chunk left", from a down-counter of the line's chunks loaded with its ``span``), so taking a line
    is two LUT levels deep; the length is a subtraction of ``log2(chunk)`` bits.
    """

    def __init__(self, config):
        self._config = config
        super().__init__({
            "lines": In(stream.Signature(BurstLine(config))),
            "credit": In(1),
            "bursts": Out(stream.Signature(BurstDesc(config))),
            "loaded": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        W = cfg.axi_data_bytes
        sh = W.bit_length() - 1
        cb = burst_chunk_beats(cfg).bit_length() - 1
        beat_bits = cfg.gm_addr_bits - sh
        line = self.lines.payload

        mid = Signal()                       # inside the head line: ``cur`` is its next beat
        cur = Signal(beat_bits)
        cur_last = Signal()                  # ``cur``'s chunk is the line's last
        chunks_left = Signal(span_bits(cfg)) # chunks of the line after ``cur``'s
        beat = Signal(beat_bits)
        m.d.comb += beat.eq(Mux(mid, cur, line.gm_addr[sh:]))
        last_beat = line.gm_last[sh:]
        ends = Signal()                      # the line ends in this beat's chunk
        m.d.comb += ends.eq(line.single | Mux(mid, cur_last, line.one_chunk))
        length = Signal(8)
        if cb:
            with m.If(line.single):
                m.d.comb += length.eq(0)
            with m.Elif(ends):
                m.d.comb += length.eq((last_beat[:cb] - beat[:cb])[:cb])
            with m.Else():
                m.d.comb += length.eq(~beat[:cb])
        # the output: two entries of registers used in turn (the bus's payload is the older one), so that
        # producing a burst depends on "the entry to write is free" (a register) and never on the bus's
        # ready, and the bus's ready only moves a pointer and clears a valid bit
        out = [Signal(BurstDesc(cfg), name=f"out{k}", reset_less=True) for k in range(2)]
        ov = [Signal(name=f"out{k}_valid") for k in range(2)]
        orp, owp = Signal(), Signal()
        issue = Signal()
        m.d.comb += [
            issue.eq(self.lines.valid & ~line.skip & ~Mux(owp, ov[1], ov[0]) & self.credit),
            self.loaded.eq(issue),
            self.lines.ready.eq(self.lines.valid & (line.skip | (issue & ends))),
            self.bursts.valid.eq(Mux(orp, ov[1], ov[0])),
            self.bursts.payload.eq(Mux(orp, out[1], out[0])),
        ]
        new = Signal(BurstDesc(cfg))
        m.d.comb += [new.addr.eq(beat << sh), new.len.eq(length), new.last.eq(ends & line.last)]
        pop = self.bursts.valid & self.bursts.ready
        for k in range(2):
            # a free entry takes the burst being formed in every cycle (its valid bit says if it is one),
            # so its load does not wait for the decision
            with m.If(~ov[k] & (owp == k)):
                m.d.sync += out[k].eq(new)
            with m.If(issue & (owp == k)):
                m.d.sync += ov[k].eq(1)
            with m.Elif(pop & (orp == k)):
                m.d.sync += ov[k].eq(0)
        with m.If(issue):
            m.d.sync += owp.eq(~owp)
        with m.If(pop):
            m.d.sync += orp.eq(~orp)
        with m.If(issue):
            with m.If(ends):
                m.d.sync += mid.eq(0)
            with m.Else():
                left = Mux(mid, chunks_left, line.span)
                m.d.sync += [mid.eq(1), cur.eq(Cat(C(0, cb), beat[cb:] + 1)), chunks_left.eq(left - 1),
                             cur_last.eq(left == 1)]
        return m


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
        bounds = [self.width * g // self._groups for g in range(self._groups + 1)]
        for g, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
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
        with m.If(to_mem & ~from_mem):
            m.d.sync += [count.eq(count + 1), nonempty.eq(1), full.eq(count == inner - 1)]
        with m.Elif(from_mem & ~to_mem):
            m.d.sync += [count.eq(count - 1), nonempty.eq(count != 1), full.eq(0)]
        return m


class LutFifo(wiring.Component):
    """A synchronous FIFO of ``depth`` entries in an asynchronously read memory (LUT RAM): ``r_data`` is the
    memory read at the head pointer, so a read changes only the pointer and two flags (no wide register
    to reload). ``r_rdy`` ("not empty") and ``w_rdy`` ("not full") are registers. An entry written in
    cycle ``t`` can be read from ``t + 1``.

    Ports: ``w_data``, ``w_en``, ``w_rdy``; ``r_data``, ``r_rdy``, ``r_en``; ``level``.
    """

    def __init__(self, width, depth):
        assert depth >= 2
        self.width, self.depth = width, depth
        super().__init__({
            "w_data": In(width), "w_en": In(1), "w_rdy": Out(1),
            "r_data": Out(width), "r_rdy": Out(1), "r_en": In(1),
            "level": Out(range(depth + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.depth
        mem = m.submodules.mem = memory.Memory(shape=self.width, depth=n, init=[])
        wp = mem.write_port()
        rp = mem.read_port(domain="comb")
        produce = Signal(range(n))
        consume = Signal(range(n))
        count = Signal(range(n + 1))
        nonempty, full = Signal(), Signal()

        def incr(x):
            return Mux(x == n - 1, 0, x + 1) if n & (n - 1) else (x + 1)[:len(x)]

        write = self.w_en & ~full
        read = self.r_en & nonempty
        m.d.comb += [
            self.w_rdy.eq(~full), self.r_rdy.eq(nonempty), self.r_data.eq(rp.data), self.level.eq(count),
            wp.addr.eq(produce), wp.data.eq(self.w_data), wp.en.eq(~full), rp.addr.eq(consume),   # (as RegFifo)
        ]
        with m.If(write):
            m.d.sync += produce.eq(incr(produce))
        with m.If(read):
            m.d.sync += consume.eq(incr(consume))
        with m.If(write & ~read):
            m.d.sync += [count.eq(count + 1), nonempty.eq(1), full.eq(count == n - 1)]
        with m.Elif(read & ~write):
            m.d.sync += [count.eq(count - 1), nonempty.eq(count != 1), full.eq(0)]
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
        bounds = [self.width * g // self.groups for g in range(self.groups + 1)]
        # The pointers do not reset (many flip-flops on the reset net): ``clean``, which does, sets them in
        # the cycle after a reset, when nothing is written or popped (``room`` and ``avail`` are low).
        clean = Signal()
        m.d.sync += clean.eq(1)
        last = Signal(self.width, reset_less=True)
        for g, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
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
