"""The unified buffer (UB): byte-addressed on-chip memory, word-wide ports, byte-enable writes.

Banked by word parity (even words, odd words), so that every read port returns a 2-word window: the
word at ``addr`` and the word after it, one from each bank, with no extra RAM ports."""

from amaranth import *
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["UnifiedBuffer", "UbReadSignature", "UbWriteSignature"]


class UbReadSignature(wiring.Signature):
    """A UB read port as seen by its user: ``addr``/``en`` out; in one cycle after ``en``, ``data`` (the
    word at ``addr``) and ``next`` (the word at ``addr + 1``, word 0 after the last word)."""

    def __init__(self, config):
        super().__init__({
            "addr": Out(range(config.ub_words)),
            "en": Out(1),
            "data": In(8 * config.ub_word_bytes),
            "next": In(8 * config.ub_word_bytes),
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
        Synchronous read: ``data`` holds the word at ``addr`` and ``next`` the word at ``addr + 1``
        (wrapping: after the last word comes word 0) the cycle after ``en``, and both keep their values
        while ``en`` is low. Not transparent: a read in the same cycle as a write to either word returns
        the old word.
    wr : flipped :class:`UbWriteSignature`
        Byte-granular write, effective at the next clock edge.

    Structure: two memories of ``config.ub_words / 2`` words, *even* (words 0, 2, 4, ...) and *odd*
    (words 1, 3, ...), each with ``config.ub_read_ports`` read ports; same storage as one memory. Read
    port ``i`` reads both banks with its ``i``-th bank ports: word ``addr >> 1`` of the odd bank and word
    ``(addr >> 1) + addr[0]`` of the even bank; a register holding ``addr[0]`` (loaded only when ``en``
    is high) picks which is ``data`` and which is ``next``. A write goes to the bank of its address's
    parity.

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
        half = cfg.ub_words // 2
        banks = []
        for parity, name in enumerate(("even", "odd")):
            mem = memory.Memory(shape=8 * cfg.ub_word_bytes, depth=half, init=[])
            m.submodules[f"mem_{name}"] = mem
            wp = mem.write_port(granularity=8)
            m.d.comb += [wp.addr.eq(self.wr.addr >> 1), wp.data.eq(self.wr.data),
                         wp.en.eq(Mux(self.wr.addr[0] == parity, self.wr.be, 0))]
            banks.append(mem)
        even, odd = banks
        for i, port in enumerate(self.rd):
            pe, po = even.read_port(), odd.read_port()
            row = port.addr >> 1
            odd_word = Signal(name=f"rd{i}_odd")      # the word at the last read's addr is odd
            # the even bank's address wraps at its depth: after the last (odd) word comes word 0
            m.d.comb += [pe.addr.eq(row + port.addr[0]), po.addr.eq(row), pe.en.eq(port.en), po.en.eq(port.en)]
            with m.If(port.en):
                m.d.sync += odd_word.eq(port.addr[0])
            m.d.comb += [port.data.eq(Mux(odd_word, po.data, pe.data)),
                         port.next.eq(Mux(odd_word, pe.data, po.data))]
        return m
