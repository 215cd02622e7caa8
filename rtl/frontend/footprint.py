"""An instruction's footprint in hardware: the UB and GM byte ranges it reads and writes, from its command.

The ranges are those of ``golden.access`` (docs/architecture.md, "Pipes and footprints"): one UB range per
tile slot the instruction uses, from the tile's base to the end of its valid region's last element (the
destination counts as read too, and is the only slot written); TLOAD's / TSTORE's GM lines, MGATHER's
whole table. The hazard scoreboard (:class:`rtl.frontend.scoreboard.Scoreboard`) compares them.
"""

from amaranth import *
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from rtl.fpga.dsp import product
from rtl.isa import INSTRUCTIONS, TILE_SLOTS, UB_ALIGN, Command, Layout, Opcode
from rtl.lib.tile import DIM_BITS, elem_log2

__all__ = ["RangeLayout", "FootprintLayout", "UB_GRAIN", "ub_units", "ub_range_bits", "gm_range_bits", "Footprint"]

#: The unit of a UB range's bounds, in bytes: a tile's base is a multiple of ``UB_ALIGN`` (the checker's
#: ``UB_MISALIGNED``), so a range ``[lo, hi)`` held as ``[lo / UB_GRAIN, ceil(hi / UB_GRAIN))`` overlaps another
#: exactly when the byte ranges do (``lo`` is a multiple: ``lo < hi`` iff ``lo / g < ceil(hi / g)``), with
#: ``log2(UB_GRAIN)`` bits fewer in every stored bound and comparator of the scoreboard.
UB_GRAIN = UB_ALIGN

#: The slot a written tile is in: every instruction that writes the UB writes its ``dst`` (slot 0).
WRITE_SLOT = 0
assert all(s.writes == (s.name == TILE_SLOTS[WRITE_SLOT]) for ins in INSTRUCTIONS.values() for s in ins.slots), \
    "Footprint assumes that an instruction writes exactly its dst tile"

# GM footprints by opcode (the instruction table says which instructions have a GM operand and which
# write it; how the range is measured is the instruction's own: golden.access)
_GM_LINES = (Opcode.TLOAD, Opcode.TSTORE)
assert {op for op, ins in INSTRUCTIONS.items() if ins.gm} == {*_GM_LINES, Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM}, \
    "an instruction with a GM operand Footprint does not know"
#: The factors of the GM products are cut into pieces of this many bits (one DSP block per pair).
_PIECE = 16


def ub_units(lo, hi):
    """A UB byte range ``[lo, hi)`` (``lo`` a multiple of :data:`UB_GRAIN`) in the footprint's units."""
    assert lo % UB_GRAIN == 0, f"UB range at {lo:#x}: not a multiple of UB_GRAIN = {UB_GRAIN}"
    return lo // UB_GRAIN, -(-hi // UB_GRAIN)


def ub_range_bits(config):
    """Width of a UB range's bounds, in units of :data:`UB_GRAIN`: ``hi`` of a legal tile is at most
    ``ub_bytes``."""
    return (config.ub_bytes // UB_GRAIN).bit_length()


def gm_range_bits(config):
    """Width of a GM range's bounds: ``hi`` of a legal region is at most ``2**gm_addr_bits``."""
    return config.gm_addr_bits + 1


def RangeLayout(width):
    """A half-open byte range ``[lo, hi)``, ``valid`` = 0 for none (an unused operand, an empty region)."""
    return data.StructLayout({"valid": 1, "lo": width, "hi": width})


def FootprintLayout(config):
    """What an instruction touches: ``ub[k]`` the range of tile slot ``TILE_SLOTS[k]`` (read; the
    destination, slot 0, is counted as read too) in units of :data:`UB_GRAIN` bytes (:func:`ub_units`),
    ``ub_write`` = slot 0 is written; ``gm`` its GM range in bytes, ``gm_write`` = written (TSTORE), else
    read."""
    return data.StructLayout({
        "ub": data.ArrayLayout(RangeLayout(ub_range_bits(config)), len(TILE_SLOTS)),
        "ub_write": 1,
        "gm": RangeLayout(gm_range_bits(config)),
        "gm_write": 1,
    })


class Footprint(wiring.Component):
    """The footprint of a command, a pipeline of registers.

    Parameters: ``config`` (:class:`rtl.config.Config`).

    Ports
    -----
    cmd : In(:data:`rtl.isa.Command`)
        A command the checker passes (the ranges of an illegal one mean nothing: it never runs).
    footprint : Out(:func:`FootprintLayout`)
        Its footprint, :attr:`LATENCY` clock edges after ``cmd`` (a new command may come every cycle).

    Latency: :attr:`LATENCY` = 5 edges. (1) the decodes, the factors of each product and the addends,
    registered; (2) the products, in DSP blocks with registered outputs (a tile slot's ``(valid lines - 1)
    * line length`` in one block; a GM region's 32 x 32 product as four 16 x 16 pieces); (3) a tile's last
    element, the GM pieces summed in pairs, the GM base plus the line's bytes; (4) a tile's end (its base
    plus the last element's bytes), the GM pieces' sum; (5) the GM end. Every stage is at most one carry
    chain after a register. Arithmetic is modulo ``2**width`` of the range: legal ranges fit (the
    checker's UB and GM range checks), so it is exact for them.
    """

    #: Clock edges from ``cmd`` to its ``footprint`` (see the class docstring).
    LATENCY = 5

    def __init__(self, config):
        self._config = config
        super().__init__({"cmd": In(Command), "footprint": Out(FootprintLayout(config))})

    def elaborate(self, platform):
        m = Module()
        cfg, cmd = self._config, self.cmd
        gm_w = gm_range_bits(cfg)
        ub_ranges = [self._tile_range(m, platform, k, cfg.ub_bytes.bit_length()) for k in range(len(TILE_SLOTS))]
        gm = self._gm_range(m, platform, gm_w)
        ub_write = Cat(cmd.opcode == op for op, ins in INSTRUCTIONS.items()
                       if any(s.writes for s in ins.slots)).any()
        gm_write = Cat(cmd.opcode == op for op, ins in INSTRUCTIONS.items() if ins.gm_writes).any()
        out = self.footprint
        m.d.comb += [out.ub[k].eq(r) for k, r in enumerate(ub_ranges)]
        m.d.comb += [out.gm.eq(gm),
                     out.ub_write.eq(_delay(m, ub_write, self.LATENCY, "fp_ub_write")),
                     out.gm_write.eq(_delay(m, gm_write, self.LATENCY, "fp_gm_write"))]
        return m

    def _tile_range(self, m, platform, k, width):
        """Slot ``k``'s range, ``LATENCY`` edges after ``cmd``: ``base`` to ``base + last * size``, last =
        ``(vr - 1) * cols + vc`` row-major, ``(vc - 1) * rows + vr`` column-major, computed in bytes
        (``width`` bits) and held in units of :data:`UB_GRAIN` (:func:`ub_units`: the end rounded up, as
        ``(base | UB_GRAIN - 1) + last * size``, which needs no more adders: ``base`` is a multiple)."""
        g = UB_GRAIN.bit_length() - 1
        slot = TILE_SLOTS[k]
        t = getattr(self.cmd, slot)
        users = [op for op, ins in INSTRUCTIONS.items() if any(s.name == slot for s in ins.slots)]
        col = t.layout == Layout.COL_MAJOR
        n = f"fp_{slot}"
        # (1) factors and addends
        valid1 = _reg(m, Cat(self.cmd.opcode == op for op in users).any() & (t.valid_rows != 0) &
                      (t.valid_cols != 0), f"{n}_valid1")
        a = _reg(m, Mux(col, t.valid_cols, t.valid_rows) - 1, f"{n}_a", DIM_BITS)
        b = _reg(m, Mux(col, t.rows, t.cols), f"{n}_b", DIM_BITS)
        tail = _reg(m, Mux(col, t.valid_rows, t.valid_cols), f"{n}_tail", DIM_BITS)
        esz = _reg(m, elem_log2(m, t.dtype), f"{n}_esz")
        base = _reg(m, t.base, f"{n}_base", width)
        # (2) the product
        prod = product(m, a, b, platform=platform, in_reg=False, name=f"{n}_prod")
        valid2, tail2, esz2, base2 = (_reg(m, v, f"{n}_{s}2") for v, s in
                                      ((valid1, "valid"), (tail, "tail"), (esz, "esz"), (base, "base")))
        # (3) the last element's index (plus one)
        last = _reg(m, prod + tail2, f"{n}_last", width)
        valid3, esz3, base3 = (_reg(m, v, f"{n}_{s}3") for v, s in ((valid2, "valid"), (esz2, "esz"), (base2, "base")))
        # (4) the end, rounded up to the grain
        hi = _reg(m, ((base3 | (UB_GRAIN - 1)) + (last << esz3))[g:width], f"{n}_hi", width - g)
        valid4, lo4 = _reg(m, valid3, f"{n}_valid4"), _reg(m, base3[g:], f"{n}_lo4")
        # (5) aligned with the GM range
        r = Signal(RangeLayout(width - g), name=f"{n}_range")
        m.d.comb += [r.valid.eq(_reg(m, valid4, f"{n}_valid5")), r.lo.eq(_reg(m, lo4, f"{n}_lo5")),
                     r.hi.eq(_reg(m, hi, f"{n}_hi5"))]
        return r

    def _gm_range(self, m, platform, width):
        """The GM range, ``LATENCY`` edges after ``cmd``: ``base`` to ``base + a * b << shift + tail``,
        with (a, b, shift, tail) = TLOAD / TSTORE (lines - 1, row_stride, 0, line elements * size),
        MGATHER_ROW (rows - 1, row_stride, 0, cols * size), MGATHER_ELEM (rows, cols, log2 size, 0)."""
        cmd, gm = self.cmd, self.cmd.gm
        op = cmd.opcode
        lines_op = Cat(op == o for o in _GM_LINES).any()
        row, elem = op == Opcode.MGATHER_ROW, op == Opcode.MGATHER_ELEM
        tile = cmd.dst.shape()(Mux(op == Opcode.TSTORE, cmd.src0.as_value(), cmd.dst.as_value()))
        col = tile.layout == Layout.COL_MAJOR
        lines, line_len = Mux(col, tile.valid_cols, tile.valid_rows), Mux(col, tile.valid_rows, tile.valid_cols)
        t_esz, g_esz = elem_log2(m, tile.dtype), elem_log2(m, gm.dtype)
        # (1) factors and addends (each factor cut to the range's width: the product is needed modulo it)
        nonempty = Mux(lines_op, (lines != 0) & (line_len != 0), (gm.rows != 0) & (gm.cols != 0))
        valid1 = _reg(m, (lines_op | row | elem) & nonempty, "fp_gm_valid1")
        a = _reg(m, Mux(lines_op, lines - 1, Mux(row, gm.rows - 1, gm.rows)), "fp_gm_a", min(width, 32))
        b = _reg(m, Mux(elem, gm.cols, gm.row_stride), "fp_gm_b", min(width, 32))
        shift = _reg(m, Mux(elem, g_esz, 0), "fp_gm_shift")
        tail = _reg(m, Mux(lines_op, line_len << t_esz, Mux(row, gm.cols << g_esz, 0)), "fp_gm_tail", width)
        base = _reg(m, gm.base, "fp_gm_base", width)
        # (2) the products of the pieces, each in its DSP block
        pieces = []
        for i in range(0, len(a), _PIECE):
            for j in range(0, len(b), _PIECE):
                if i + j < width:
                    p = product(m, a[i:i + _PIECE], b[j:j + _PIECE], platform=platform, in_reg=False,
                                name=f"fp_gm_p{i // _PIECE}{j // _PIECE}")
                    pieces.append((i + j, p))
        valid2, shift2, tail2, base2 = (_reg(m, v, f"fp_gm_{s}2") for v, s in
                                        ((valid1, "valid"), (shift, "shift"), (tail, "tail"), (base, "base")))
        # (3) the pieces summed in pairs; the base plus the tail
        sums = []
        for k in range(0, len(pieces), 2):
            pair = pieces[k:k + 2]
            sums.append(_reg(m, sum((p << s) for s, p in pair), f"fp_gm_s{k // 2}", width))
        start3 = _reg(m, base2 + tail2, "fp_gm_start3", width)
        valid3, shift3, base3 = (_reg(m, v, f"fp_gm_{s}3") for v, s in ((valid2, "valid"), (shift2, "shift"),
                                                                        (base2, "base")))
        # (4) the product
        total = _reg(m, sum(sums), "fp_gm_total", width)
        valid4, shift4, base4, start4 = (_reg(m, v, f"fp_gm_{s}4") for v, s in
                                         ((valid3, "valid"), (shift3, "shift"), (base3, "base"), (start3, "start")))
        # (5) the end
        r = Signal(RangeLayout(width), name="fp_gm_range")
        m.d.comb += [r.valid.eq(_reg(m, valid4, "fp_gm_valid5")), r.lo.eq(_reg(m, base4, "fp_gm_lo5")),
                     r.hi.eq(_reg(m, start4 + (total << shift4), "fp_gm_hi5", width))]
        return r


def _reg(m, value, name, width=None):
    """``value`` (cut to ``width`` bits) in a reset-less register: the footprint is recomputed every cycle
    from the command, and read only once its command has been in place for ``LATENCY`` cycles."""
    value = Value.cast(value)
    sig = Signal(width or len(value), name=name, reset_less=True)
    m.d.sync += sig.eq(value)
    return sig


def _delay(m, value, cycles, name):
    for k in range(cycles):
        value = _reg(m, value, f"{name}{k + 1}")
    return value
