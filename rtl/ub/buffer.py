"""The unified buffer (UB): byte-addressed on-chip memory, word-wide ports, byte-enable writes.

Banked by word parity (even words, odd words), so that every read port returns a 2-word window: the
word at ``addr`` and the word after it, one from each bank, with no extra RAM ports."""

from amaranth import *
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from rtl.lib.fanout import held_copies

__all__ = ["UnifiedBuffer", "UbReadSignature", "UbWriteSignature", "ordered_window", "read_window",
           "relax_ub_collisions", "WINDOW_CYCLES"]


class UbReadSignature(wiring.Signature):
    """A UB read port as seen by its user: ``addr``/``en`` out; ``UnifiedBuffer.READ_LATENCY`` cycles after
    ``en``, ``data`` (the word at ``addr``) and ``next`` (the word at ``addr + 1``, word 0 after the last
    word), held until the next read's words arrive.

    ``even`` and ``odd`` are the same two words in the same cycle, not in address order: the even bank's
    word and the odd bank's (``data`` is ``odd`` if ``addr`` was odd, else ``even``; ``next`` the other).
    An engine that registers the words anyway orders them itself with its own copy of ``addr``'s low bit
    (:func:`read_window`), so that the ordering LUT is its own, next to it, and not one net per bit
    shared by every engine on the port."""

    def __init__(self, config):
        super().__init__({
            "addr": Out(range(config.ub_words)),
            "en": Out(1),
            "data": In(8 * config.ub_word_bytes),
            "next": In(8 * config.ub_word_bytes),
            "even": In(8 * config.ub_word_bytes),
            "odd": In(8 * config.ub_word_bytes),
        })


#: Cycles from a read's words on the port (``READ_LATENCY`` after its ``en``) to the engine's own window
#: register (:func:`ordered_window`, :func:`read_window`).
WINDOW_CYCLES = 1


def ordered_window(m, port, odd, enables, name):
    """A register of ``Cat(data, next)`` of UB read port ``port``, formed from ``port.even`` /
    ``port.odd`` and loaded in the cycle they hold a read's words (``READ_LATENCY`` cycles after its
    ``en``). ``odd`` are copies of that read's ``addr[0]`` and ``enables`` copies of "this engine's read
    is here", both registers of the engine's own, as many of each (copy ``k`` orders and loads slice
    ``k`` of the window). The even/odd order is then one 3-input LUT in front of each of the engine's
    flip-flops, beside it in one slice."""
    assert len(odd) == len(enables)
    e, o = port.even, port.odd
    n = len(e)
    r = Signal(2 * n, name=name, reset_less=True)
    data, nxt = (o, e), (e, o)          # (if odd, else): an odd address's word is in the odd bank
    for k in range(len(odd)):
        lo, hi = 2 * n * k // len(odd), 2 * n * (k + 1) // len(odd)
        for base, (if_odd, if_even) in ((0, data), (n, nxt)):
            a, b = max(lo, base), min(hi, base + n)
            if a < b:
                with m.If(enables[k]):
                    m.d.sync += r[a:b].eq(Mux(odd[k], if_odd[a - base:b - base], if_even[a - base:b - base]))
    return r


def read_window(m, port, parity, arrive, copies, name):
    """:func:`ordered_window` for an engine's reads: ``parity`` is a read's ``addr[0]`` in the cycle of
    its ``en``, ``arrive`` is high ``READ_LATENCY - 1`` cycles after the engine's own read's ``en`` (a
    register of its pipeline). Both are delayed / copied here (``copies`` of each, one per slice of the
    window); returns the window register, ``Cat(data, next)`` of the read from ``READ_LATENCY +
    WINDOW_CYCLES`` cycles after its ``en``."""
    for k in range(UnifiedBuffer.READ_LATENCY - 1):
        r = Signal(name=f"{name}_odd_d{k}")
        m.d.sync += r.eq(parity)
        parity = r
    return ordered_window(m, port, held_copies(m, parity, C(1, 1), copies, f"{name}_odd"),
                          held_copies(m, arrive, C(1, 1), copies, f"{name}_en"), name)


class UbWriteSignature(wiring.Signature):
    """A UB write port as seen by its user: one word, a byte-enable bit per byte (``be`` = 0 writes nothing).

    With ``handshake=True`` (an engine's port: the write port is shared, and not every cycle is the
    engine's) it also has ``valid`` (out) and ``ready`` (in): the word is written at an edge where both
    are high, and only then (``be`` is ignored otherwise). ``valid`` must not depend on ``ready``; a word
    offered while ``ready`` is low stays offered, unchanged (``addr``, ``data``, ``be``), until it is
    taken. The UB's own port (``UnifiedBuffer.wr``) has no handshake: it writes ``be`` every cycle.
    """

    def __init__(self, config, *, handshake=False):
        members = {
            "addr": Out(range(config.ub_words)),
            "data": Out(8 * config.ub_word_bytes),
            "be": Out(config.ub_word_bytes),
        }
        if handshake:
            members.update({"valid": Out(1), "ready": In(1)})
        super().__init__(members)


class UnifiedBuffer(wiring.Component):
    """Unified buffer: ``config.ub_bytes`` of storage as ``config.ub_words`` words of ``config.ub_word_bytes``.

    Ports
    -----
    rd : list of ``config.ub_read_ports`` flipped :class:`UbReadSignature`
        Pipelined read: ``data`` holds the word at ``addr`` and ``next`` the word at ``addr + 1``
        (wrapping: after the last word comes word 0) :attr:`READ_LATENCY` cycles after ``en``; both keep
        their values until the next read's data arrives. Reads may be issued every cycle.
    wr : flipped :class:`UbWriteSignature`
        Byte-granular write: registered here, it lands at the second clock edge after the cycle it is
        offered in. A read issued in a later cycle sees it; a read issued in the same cycle returns the
        old word (undefined in the synthesised netlist, see below).
    wr_bank : two flipped :class:`UbWriteSignature` (``write_banks=True``, instead of ``wr``)
        The even bank's write port and the odd bank's, each as ``wr``: port ``b`` writes only words of
        parity ``b`` (its ``addr`` must have ``addr[0] == b`` whenever ``be`` is not zero), so two words of
        different parity land in the same cycle.

    Structure: two memories of ``config.ub_words / 2`` words, *even* (words 0, 2, 4, ...) and *odd*
    (words 1, 3, ...), each with ``config.ub_read_ports`` read ports; same storage as one memory. Read
    port ``i`` reads both banks with its ``i``-th bank ports: word ``addr >> 1`` of the odd bank and word
    ``(addr >> 1) + addr[0]`` of the even bank; the parity of ``addr`` picks which is ``data`` and which
    is ``next``. A write goes to the bank of its address's parity.

    Pipeline (why :attr:`READ_LATENCY` is 3): the block RAMs of a 64 KiB UB are spread over the whole
    FPGA and their clock-to-output time is ~4.3 ns on an ECP5, so every path into or out of them is a
    register with only wire (and at most one LUT) between. Cycle ``t``: ``en``/``addr`` offered (after
    the front end's engine multiplexer); ``t + 1``: the bank row addresses (the even bank's increment
    done) from registers into the RAMs; ``t + 2``: the RAMs' outputs straight into the port's
    registers; ``t + 3``: ``data`` / ``next`` on the port, through the even/odd multiplexer (one LUT
    level after registers, its select in copies). Writes likewise: the offered
    address (as a bank row), data and per-bank byte enables are registered, then written.

    Contents are not cleared by reset (as in an SRAM).

    Collisions: the simulated and exported model returns the old word when a word is read at the clock
    edge it is written (a read issued in the cycle of the write). The ECP5 synthesis flow
    (``flow/synth.py``) declares that case undefined with :func:`relax_ub_collisions`, so that the block
    RAMs need no "read old data" emulation (bypass registers and multiplexers in front of every bank).
    That is safe because no engine reads a word in the cycle it writes it except in the operand
    overlaps the golden model already calls undefined; it is not applied to the exported Verilog (where
    Yosys would write X for those reads, which a testbench cannot adopt as an undefined result).
    """

    #: Cycles from a read's ``en`` to its ``data`` / ``next`` on the port.
    READ_LATENCY = 3
    #: Cycles from a write offered on ``wr`` to the first cycle a read may be issued that returns it.
    WRITE_TO_READ = 1
    #: Copies of each read port's registered parity, each ordering a slice of the port's words.
    ODD_COPIES = 8

    def __init__(self, config, *, write_banks=False):
        self._config, self._banks = config, write_banks
        ports = {"rd": In(UbReadSignature(config)).array(config.ub_read_ports)}
        if write_banks:
            ports["wr_bank"] = In(UbWriteSignature(config)).array(2)
        else:
            ports["wr"] = In(UbWriteSignature(config))
        super().__init__(ports)

    @property
    def write_ports(self):
        """The write ports: ``[wr]``, or ``wr_bank`` (even, odd) with ``write_banks``."""
        return list(self.wr_bank) if self._banks else [self.wr]

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        W = cfg.ub_word_bytes
        half = cfg.ub_words // 2
        row_bits = (half - 1).bit_length() or 1
        # write: one register stage (bank row, data, each bank's byte enables), then the RAMs
        # (the row in a register per bank, each loaded only for a write to its bank, so that synthesis
        # keeps them apart: one register drove every block RAM's write address, 64 in `default`, a
        # 10.9 ns net)
        w_row = [Signal(row_bits, name=f"wr_row_{name}", reset_less=True) for name in ("even", "odd")]
        w_be = [Signal(W, name=f"wr_be_{name}") for name in ("even", "odd")]
        if self._banks:
            # a port per bank: each bank's row, data and enables from its own port
            w_data = [Signal(8 * W, name=f"wr_data_{name}", reset_less=True) for name in ("even", "odd")]
            for b, port in enumerate(self.wr_bank):
                m.d.sync += [w_row[b].eq(port.addr >> 1), w_data[b].eq(port.data), w_be[b].eq(port.be)]
        else:
            w_data = [Signal(8 * W, name="wr_data", reset_less=True)] * 2
            m.d.sync += [w_data[0].eq(self.wr.data),
                         w_be[0].eq(Mux(self.wr.addr[0], 0, self.wr.be)),
                         w_be[1].eq(Mux(self.wr.addr[0], self.wr.be, 0))]
            with m.If(self.wr.addr[0]):
                m.d.sync += w_row[1].eq(self.wr.addr >> 1)
            with m.Else():
                m.d.sync += w_row[0].eq(self.wr.addr >> 1)
        banks = []
        for parity, name in enumerate(("even", "odd")):
            mem = memory.Memory(shape=8 * W, depth=half, init=[])
            m.submodules[f"mem_{name}"] = mem
            wp = mem.write_port(granularity=8)
            m.d.comb += [wp.addr.eq(w_row[parity]), wp.data.eq(w_data[parity]), wp.en.eq(w_be[parity])]
            banks.append(mem)
        even, odd = banks
        for i, port in enumerate(self.rd):
            pe, po = even.read_port(), odd.read_port()
            # stage 1: bank rows; the even bank's address wraps at its depth (after the last word, word 0)
            row_e = Signal(row_bits, name=f"rd{i}_row_even", reset_less=True)
            row_o = Signal(row_bits, name=f"rd{i}_row_odd", reset_less=True)
            en1, odd1 = Signal(name=f"rd{i}_en1"), Signal(name=f"rd{i}_odd1", reset_less=True)
            # (loaded in every cycle, not on ``en``: the RAMs read only with en1, and the rows' flip-flops
            # then need no clock enable from the engines' multiplexed ``en``)
            m.d.sync += [en1.eq(port.en), row_o.eq(port.addr >> 1), row_e.eq((port.addr >> 1) + port.addr[0]),
                         odd1.eq(port.addr[0])]
            m.d.comb += [pe.addr.eq(row_e), po.addr.eq(row_o), pe.en.eq(en1), po.en.eq(en1)]
            # stage 2: the RAMs' words, as they come, into the port's registers (nothing between a block
            # RAM's output and its register: with the even / odd multiplexer there, 10.7-10.8 ns in
            # `default` seed 3); the parity, registered beside them, puts them in address order on the
            # port, one LUT level. It comes in ``ODD_COPIES`` copies, each for a slice of the words' bits.
            # The word registers load in every cycle: a RAM's output holds its last read while ``en1``
            # is low, so they hold too, and need no clock enable (``en2`` drove the 2 x 8W enables,
            # an 11.9 ns net in `default` seed 3 at 23a2220).
            en2, odd2 = Signal(name=f"rd{i}_en2"), Signal(name=f"rd{i}_odd2", reset_less=True)
            m.d.sync += [en2.eq(en1), odd2.eq(odd1)]
            word_e = Signal(8 * W, name=f"rd{i}_even", reset_less=True)
            word_o = Signal(8 * W, name=f"rd{i}_odd", reset_less=True)
            m.d.sync += [word_e.eq(pe.data), word_o.eq(po.data)]
            m.d.comb += [port.even.eq(word_e), port.odd.eq(word_o)]
            par = held_copies(m, odd2, en2, self.ODD_COPIES, f"rd{i}_odd3_")
            n = len(word_e)
            for k, o in enumerate(par):
                sl = slice(n * k // len(par), n * (k + 1) // len(par))
                m.d.comb += [port.data[sl].eq(Mux(o, word_o[sl], word_e[sl])),
                             port.next[sl].eq(Mux(o, word_e[sl], word_o[sl]))]
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
