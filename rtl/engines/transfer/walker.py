"""Address walkers for 2-D transfers: the lines of a tile (:class:`LineWalker`) and the AXI
bursts within lines (:class:`BurstWalker`).

Several consumers of one transfer (address issuer, data realigner, UB reader) each run their own walker
over the same parameters instead of sharing one through FIFOs: a walker is a few adders, a FIFO is RAM.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from rtl.engines.transfer.widths import AXLEN_BITS, GM_STRIDE_BITS, TILE_DIM_BITS, UB_ADDR_BITS
from rtl.lib.tile import LINE_BYTES_BITS

__all__ = ["LineInit", "LineStep", "LineDesc", "LineWalker", "BurstLine", "BurstDesc", "BurstWalker", "burst_chunk_beats"]


def LineInit(config):
    """Where a transfer's first line starts: loaded into a :class:`LineWalker` with ``start``. ``gm_last``
    is the GM address of the first line's last byte (``gm_addr + line_bytes - 1``); ``run`` is zero for an
    empty transfer (the walker then stays idle)."""
    return data.StructLayout({
        "ub_addr": UB_ADDR_BITS,
        "gm_addr": config.gm_addr_bits,
        "gm_last": config.gm_addr_bits,
        "lines":   TILE_DIM_BITS,
        "run":     1,
    })


def LineStep(config):
    """What a :class:`LineWalker` adds per line, and the line length (``line_m1`` = ``line_bytes - 1``):
    stable from the cycle after ``start`` until the last line is taken."""
    return data.StructLayout({
        "ub_stride":  UB_ADDR_BITS,
        "gm_stride":  GM_STRIDE_BITS,
        "line_bytes": LINE_BYTES_BITS,
        "line_m1":    LINE_BYTES_BITS,
    })


def span_bits(config):
    """Width of a line's ``span``: the chunks of :func:`burst_chunk_beats` beats it touches, minus one."""
    k = (config.axi_data_bytes * burst_chunk_beats(config)).bit_length() - 1
    return max(1, LINE_BYTES_BITS + 1 - k)


def LineDesc(config):
    """A line as a :class:`LineWalker` emits it: its UB and GM addresses, its last GM byte, its chunks
    (for :class:`BurstWalker`), its length and whether it is the transfer's last."""
    return data.StructLayout({
        "ub_addr":   UB_ADDR_BITS,
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

    Latency: the first line is valid the cycle after ``start`` (:attr:`LATENCY`). Everything on ``lines`` is a register
    except ``last`` (``lines left == 1``, a compare of a register) and ``length`` (``step.line_bytes``);
    ``span`` and ``one_chunk`` (for :class:`BurstWalker`) are computed with each line's addresses (from
    the low bits only: (chunk offset + line bytes - 1) / chunk) and registered.
    """

    #: Cycles from ``start`` to the first line on ``lines``.
    LATENCY = 1

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
        ub = Signal(UB_ADDR_BITS)
        gm = Signal(cfg.gm_addr_bits)
        gl = Signal(cfg.gm_addr_bits)
        one = Signal()
        span = Signal(span_bits(cfg))
        left = Signal(TILE_DIM_BITS)
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


def BurstLine(config, tag_bits=0):
    """A line as :class:`BurstWalker` takes it: ``gm_addr`` .. ``gm_last`` (bytes, inclusive);
    ``span``: the chunks of :func:`burst_chunk_beats` beats it touches, minus one; ``one_chunk``:
    ``span == 0`` (one burst); ``single``: the line lies in one bus beat (``gm_last``, ``span`` and
    ``one_chunk`` are not looked at); ``skip``: issue nothing for it. With ``tag_bits``, a ``tag`` that
    every burst of the line carries (:func:`BurstDesc`)."""
    return data.StructLayout({
        "gm_addr":   config.gm_addr_bits,
        "gm_last":   config.gm_addr_bits,
        "span":      span_bits(config),
        "one_chunk": 1,
        "single":    1,
        "skip":      1,
        "last":      1,
        **({"tag": tag_bits} if tag_bits else {}),
    })


def BurstDesc(config, tag_bits=0):
    """A burst as :class:`BurstWalker` gives it: AR / AW's address and length, and whether it ends a line
    marked ``last`` (with ``tag_bits``, its line's ``tag``)."""
    return data.StructLayout({
        "addr": config.gm_addr_bits,   # aligned to the bus width
        "len":  AXLEN_BITS,            # AXI encoding: beats - 1
        "last": 1,                     # the burst of a line marked ``last`` that ends it
        **({"tag": tag_bits} if tag_bits else {}),
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

    ``tag_bits`` (default 0): lines and bursts carry a ``tag`` of that many bits, each burst its line's (the
    GM -> UB half with overlap: which instruction a burst is, so that its beats can be told apart even where
    an instruction's last lines issue nothing, :mod:`rtl.engines.transfer.load_overlap`).

    Latency: a burst is on ``bursts`` the cycle after its line is offered (:attr:`LATENCY`). Timing: whether the burst
    ends the line is a register (``one_chunk`` of the line, or for a later burst of a long line, "one
    chunk left", from a down-counter of the line's chunks loaded with its ``span``), so taking a line
    is two LUT levels deep; the length is a subtraction of ``log2(chunk)`` bits.
    """

    #: Cycles from a line offered on ``lines`` to its first burst on ``bursts`` (the output register).
    LATENCY = 1

    def __init__(self, config, tag_bits=0):
        self._config, self._tag_bits = config, tag_bits
        super().__init__({
            "lines": In(stream.Signature(BurstLine(config, tag_bits))),
            "credit": In(1),
            "bursts": Out(stream.Signature(BurstDesc(config, tag_bits))),
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
        length = Signal(AXLEN_BITS)
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
        out = [Signal(BurstDesc(cfg, self._tag_bits), name=f"out{k}", reset_less=True) for k in range(2)]
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
        new = Signal(BurstDesc(cfg, self._tag_bits))
        m.d.comb += [new.addr.eq(beat << sh), new.len.eq(length), new.last.eq(ends & line.last)]
        if self._tag_bits:
            m.d.comb += new.tag.eq(line.tag)
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
