"""The unified buffer (UB): byte-addressed on-chip memory, word-wide ports, byte-enable writes."""

from amaranth import *
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["UnifiedBuffer", "UbReadSignature", "UbWriteSignature"]


class UbReadSignature(wiring.Signature):
    """A UB read port as seen by its user: ``addr``/``en`` out, ``data`` in one cycle after ``en``."""

    def __init__(self, config):
        super().__init__({
            "addr": Out(range(config.ub_words)),
            "en": Out(1),
            "data": In(8 * config.ub_word_bytes),
        })


class UbWriteSignature(wiring.Signature):
    """A UB write port as seen by its user: one word, a byte-enable bit per byte (``be`` = 0 writes nothing)."""

    def __init__(self, config):
        super().__init__({
            "addr": Out(range(config.ub_words)),
            "data": Out(8 * config.ub_word_bytes),
            "be": Out(config.ub_word_bytes),
        })


class UnifiedBuffer(wiring.Component):
    """Unified buffer: ``config.ub_bytes`` of storage as ``config.ub_words`` words of ``config.ub_word_bytes``.

    Ports
    -----
    rd : list of ``config.ub_read_ports`` flipped :class:`UbReadSignature`
        Synchronous read: ``data`` holds the word at ``addr`` the cycle after ``en``, and keeps it while
        ``en`` is low. Not transparent: a read in the same cycle as a write to that word returns the old word.
    wr : flipped :class:`UbWriteSignature`
        Byte-granular write, effective at the next clock edge.

    Latency: 1 cycle read, writes visible to reads issued the cycle after the write.
    Contents are not cleared by reset (as in an SRAM).
    """

    def __init__(self, config):
        self._config = config
        super().__init__({
            "rd": In(UbReadSignature(config)).array(config.ub_read_ports),
            "wr": In(UbWriteSignature(config)),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        m.submodules.mem = mem = memory.Memory(shape=8 * cfg.ub_word_bytes, depth=cfg.ub_words, init=[])
        wp = mem.write_port(granularity=8)
        m.d.comb += [wp.addr.eq(self.wr.addr), wp.data.eq(self.wr.data), wp.en.eq(self.wr.be)]
        for port in self.rd:
            rp = mem.read_port()
            m.d.comb += [rp.addr.eq(port.addr), rp.en.eq(port.en), port.data.eq(rp.data)]
        return m
