"""Address walkers for 2-D transfers: lines of a tile, and AXI bursts within lines.

Several consumers of one transfer (address issuer, data realigner, UB reader) each run their own walker
over the same parameters instead of sharing one through FIFOs: a walker is a few adders, a FIFO is RAM.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["LINE_BYTES_BITS", "TransferParams", "LineDesc", "LineWalker", "BurstDesc", "BurstWalker"]

#: A line is at most 65535 elements of 4 bytes.
LINE_BYTES_BITS = 18


def TransferParams(config):
    """What a 2-D transfer needs: ``lines`` lines of ``line_bytes`` bytes, each with its UB and GM start."""
    return data.StructLayout({
        "ub_base":    24,
        "ub_stride":  24,
        "gm_base":    config.gm_addr_bits,
        "gm_stride":  32,
        "lines":      16,
        "line_bytes": LINE_BYTES_BITS,
    })


def LineDesc(config):
    return data.StructLayout({
        "ub_addr": 24,
        "gm_addr": config.gm_addr_bits,
        "length":  LINE_BYTES_BITS,
        "last":    1,          # the transfer's last line
    })


def BurstDesc(config):
    return data.StructLayout({
        "addr": config.gm_addr_bits,   # aligned to the bus width
        "len":  8,                     # AXI encoding: beats - 1
        "last": 1,                     # the transfer's last burst
    })


class LineWalker(wiring.Component):
    """Emits one :func:`LineDesc` per line of a transfer, one per cycle.

    Ports: ``params`` (stable from ``start`` until the last line is taken), ``start`` (pulse; ignored while
    busy), ``lines`` (stream out), ``busy``. ``params.lines`` must be non-zero.
    Latency: the first line is valid the cycle after ``start``.
    """

    def __init__(self, config):
        self._config = config
        super().__init__({
            "params": In(TransferParams(config)),
            "start": In(1),
            "busy": Out(1),
            "lines": Out(stream.Signature(LineDesc(config))),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        ub = Signal(24)
        gm = Signal(self._config.gm_addr_bits)
        left = Signal(16)
        m.d.comb += [
            self.lines.valid.eq(self.busy),
            self.lines.payload.ub_addr.eq(ub),
            self.lines.payload.gm_addr.eq(gm),
            self.lines.payload.length.eq(p.line_bytes),
            self.lines.payload.last.eq(left == 1),
        ]
        with m.If(self.busy):
            with m.If(self.lines.ready):
                m.d.sync += [ub.eq(ub + p.ub_stride), gm.eq(gm + p.gm_stride), left.eq(left - 1)]
                with m.If(left == 1):
                    m.d.sync += self.busy.eq(0)
        with m.Elif(self.start):
            m.d.sync += [ub.eq(p.ub_base), gm.eq(p.gm_base), left.eq(p.lines), self.busy.eq(1)]
        return m


class BurstWalker(wiring.Component):
    """Splits lines into AXI INCR bursts: bus-aligned start, at most ``config.max_burst_beats`` beats,
    never crossing a 4 KiB boundary. One burst per cycle.

    Ports: ``lines`` (stream in, :func:`LineDesc`), ``bursts`` (stream out, :func:`BurstDesc`).
    Latency: a burst is valid the cycle after its line is taken.
    """

    def __init__(self, config):
        self._config = config
        super().__init__({
            "lines": In(stream.Signature(LineDesc(config))),
            "bursts": Out(stream.Signature(BurstDesc(config))),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        W = cfg.axi_data_bytes
        sh = W.bit_length() - 1
        beat_bits = cfg.gm_addr_bits - sh
        active = Signal()
        last_line = Signal()
        cur = Signal(beat_bits)            # current beat address (address >> sh)
        remaining = Signal(LINE_BYTES_BITS + 1)   # beats left in this line
        to_4k = Signal(13 - sh)            # beats left before the next 4 KiB boundary
        m.d.comb += to_4k.eq((1 << (12 - sh)) - cur[:12 - sh])
        n = Signal(range(cfg.max_burst_beats + 1))
        m.d.comb += n.eq(cfg.max_burst_beats)
        with m.If((to_4k < cfg.max_burst_beats) & (to_4k <= remaining)):
            m.d.comb += n.eq(to_4k)
        with m.Elif(remaining < cfg.max_burst_beats):
            m.d.comb += n.eq(remaining)
        final = Signal()
        m.d.comb += [
            final.eq(remaining == n),
            self.bursts.valid.eq(active),
            self.bursts.payload.addr.eq(cur << sh),
            self.bursts.payload.len.eq(n - 1),
            self.bursts.payload.last.eq(final & last_line),
            self.lines.ready.eq(~active | (self.bursts.ready & final)),
        ]
        with m.If(active & self.bursts.ready):
            m.d.sync += [cur.eq(cur + n), remaining.eq(remaining - n)]
            with m.If(final):
                m.d.sync += active.eq(0)
        with m.If(self.lines.valid & self.lines.ready):
            line = self.lines.payload
            first = line.gm_addr >> sh
            end = (line.gm_addr + line.length - 1) >> sh
            m.d.sync += [active.eq(1), cur.eq(first), remaining.eq(end - first + 1),
                         last_line.eq(line.last)]
        return m
