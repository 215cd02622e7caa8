"""Address walkers for 2-D transfers: lines of a tile, and AXI bursts within lines; :class:`RegFifo`, a
queue with a registered head.

Several consumers of one transfer (address issuer, data realigner, UB reader) each run their own walker
over the same parameters instead of sharing one through FIFOs: a walker is a few adders, a FIFO is RAM.
"""

from amaranth import *
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["LINE_BYTES_BITS", "LineInit", "LineStep", "LineDesc", "LineWalker", "BurstLine", "BurstDesc",
           "BurstWalker", "burst_chunk_beats", "RegFifo", "LutFifo"]

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
    payload are registers, the head of a 2-entry queue: producing a burst never waits for ``ready`` in
    the same cycle), ``loaded`` (out: a burst enters the queue in this cycle; for outstanding-transaction
    counters). Lines marked ``skip`` are taken without a burst.

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
        # the output: a 2-entry queue of registers (head = the bus's payload), so that producing a burst
        # depends on "not full" (a register) and never on the bus's ready
        out = [Signal(BurstDesc(cfg), name=f"out{k}") for k in range(2)]
        ov = [Signal(name=f"out{k}_valid") for k in range(2)]
        issue = Signal()
        m.d.comb += [
            issue.eq(self.lines.valid & ~line.skip & ~ov[1] & self.credit),
            self.loaded.eq(issue),
            self.lines.ready.eq(self.lines.valid & (line.skip | (issue & ends))),
            self.bursts.valid.eq(ov[0]),
            self.bursts.payload.eq(out[0]),
        ]
        new = Signal(BurstDesc(cfg))
        m.d.comb += [new.addr.eq(beat << sh), new.len.eq(length), new.last.eq(ends & line.last)]
        pop = ov[0] & self.bursts.ready
        with m.If(pop):
            m.d.sync += [out[0].eq(Mux(ov[1], out[1], new)), ov[0].eq(ov[1] | issue), ov[1].eq(0)]
            with m.If(ov[1]):
                m.d.sync += [out[1].eq(new), ov[1].eq(issue)]
        with m.Elif(issue):
            with m.If(~ov[0]):
                m.d.sync += [out[0].eq(new), ov[0].eq(1)]
            with m.Else():
                m.d.sync += [out[1].eq(new), ov[1].eq(1)]
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

    def __init__(self, width, depth, direct_on_pop=True):
        assert depth >= 2
        self.width, self.depth = width, depth
        self._direct_on_pop = direct_on_pop
        super().__init__({
            "w_data": In(width), "w_en": In(1), "w_rdy": Out(1),
            "r_data": Out(width), "r_rdy": Out(1), "r_en": In(1),
            "level": Out(range(depth + 1)), "mem_level": Out(range(depth)), "empty": Out(1),
            "w_taken": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        inner = self.depth - 1
        mem = m.submodules.mem = memory.Memory(shape=self.width, depth=inner, init=[])
        wp = mem.write_port()
        rp = mem.read_port(domain="comb")
        produce = Signal(range(inner))
        consume = Signal(range(inner))
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
            wp.addr.eq(produce), wp.data.eq(self.w_data), wp.en.eq(to_mem),
            rp.addr.eq(consume),
        ]
        with m.If(to_mem):
            m.d.sync += produce.eq(incr(produce))
        with m.If(from_mem):
            m.d.sync += [head.eq(rp.data), consume.eq(incr(consume))]
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
            wp.addr.eq(produce), wp.data.eq(self.w_data), wp.en.eq(write), rp.addr.eq(consume),
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
