"""The unified buffer (UB): byte-addressed on-chip memory, word-wide ports, byte-enable writes.

Banked by word parity (even words, odd words), so that every read port returns a 2-word window: the
word at ``addr`` and the word after it, one from each bank, with no extra RAM ports."""

from amaranth import *
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["UnifiedBuffer", "UbReadSignature", "UbWriteSignature", "relax_ub_collisions"]


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

    Collisions: the simulated and exported model returns the old word when a word is read in the cycle
    it is written. The ECP5 synthesis flow (``sim/synth.py``) may declare that case undefined with
    :func:`relax_ub_collisions`, so that the block RAMs need no "read old data" emulation (bypass
    registers and multiplexers in front of every bank). That is safe because no engine reads a word in
    the cycle it writes it except in the operand overlaps the golden model already calls undefined; it
    is not applied to the exported Verilog (where Yosys would write X for those reads, which a
    testbench cannot adopt as an undefined result).
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


def relax_ub_collisions(rtlil_text):
    """The RTLIL of a design with the UB's read ports marked "undefined on a same-cycle write to the same
    word" (``COLLISION_X_MASK`` all ones on the ``$memrd_v2`` cells of the ``mem_even`` / ``mem_odd``
    banks). Amaranth 0.5 always emits ``COLLISION_X_MASK`` 0, i.e. read-old-data, which Yosys can only
    honour on ECP5 block RAMs with emulation logic. Simulation is unchanged (a clocked read of a
    register array returns the old word)."""
    import re

    def relax(match):
        cell = match.group(0)
        if re.search(r'parameter \\MEMID "\\\\mem_(even|odd)"', cell):
            cell = re.sub(r"(parameter \\COLLISION_X_MASK )1'0", r"\g<1>1'1", cell)
        return cell

    return re.sub(r"cell \$memrd_v2 .*?\n  end\n", relax, rtlil_text, flags=re.S)
