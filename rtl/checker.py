"""Instruction checking: which status an instruction gets before any engine touches anything."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .isa import Command, Opcode, UB_ALIGN
from .status import Status
from .tile import dtype_valid, elem_log2, tile_geometry

__all__ = ["Checker", "CHECK_ORDER"]

#: When several constraints fail, the first in this list wins (same order as ``golden.check``).
CHECK_ORDER = (
    Status.UNKNOWN_OPCODE, Status.UNSUPPORTED, Status.DTYPE_INVALID, Status.DTYPE_UNSUPPORTED,
    Status.DTYPE_MISMATCH, Status.INDEX_DTYPE, Status.UB_MISALIGNED, Status.UB_OUT_OF_RANGE,
    Status.VALID_EXCEEDS_STATIC, Status.LAYOUT_UNSUPPORTED, Status.SHAPE_MISMATCH,
    Status.PARAM_INVALID, Status.DIM_OUT_OF_RANGE, Status.GM_MISALIGNED, Status.GM_OUT_OF_RANGE,
    Status.VALIDITY_PATTERN,
)


class Checker(wiring.Component):
    """Combinational instruction checker.

    Parameters: ``config``; ``supported``, the opcodes some engine of this configuration executes
    (others answer ``UNSUPPORTED``).

    Ports: ``cmd`` (in, :data:`Command`), ``status`` (out): ``OK`` or the first failing check in
    :data:`CHECK_ORDER`. Latency: 0 (the front end registers the command before it and the status after).
    """

    def __init__(self, config, supported):
        self._config = config
        self._supported = frozenset(supported)
        super().__init__({"cmd": In(Command), "status": Out(Status)})

    def _tile_checks(self, m, fail, tile, enable):
        """Checks every tile operand gets: alignment, UB range, valid <= static."""
        cfg = self._config
        esz = elem_log2(m, tile.dtype)
        size = Signal(35)
        m.d.comb += size.eq((tile.rows * tile.cols) << esz)
        fail[Status.UB_MISALIGNED].append(enable & (tile.base[:UB_ALIGN.bit_length() - 1] != 0))
        fail[Status.UB_OUT_OF_RANGE].append(enable & (tile.base + size > cfg.ub_bytes))
        fail[Status.VALID_EXCEEDS_STATIC].append(
            enable & ((tile.valid_rows > tile.rows) | (tile.valid_cols > tile.cols)))
        return esz

    def _transfer_checks(self, m, fail, enable):
        """TLOAD / TSTORE: tile (dst or src0) against the GM descriptor."""
        cfg = self._config
        cmd, gm = self.cmd, self.cmd.gm
        tile = cmd.dst.shape()(Mux(cmd.opcode == Opcode.TSTORE, cmd.src0.as_value(), cmd.dst.as_value()))
        fail[Status.DTYPE_INVALID].append(enable & ~(dtype_valid(tile.dtype) & dtype_valid(gm.dtype)))
        fail[Status.DTYPE_MISMATCH].append(enable & (tile.dtype != gm.dtype))
        esz = self._tile_checks(m, fail, tile, enable)
        fail[Status.SHAPE_MISMATCH].append(
            enable & ((gm.rows != tile.valid_rows) | (gm.cols != tile.valid_cols)))
        mask = Signal(2)
        m.d.comb += mask.eq((1 << esz) - 1)
        fail[Status.GM_MISALIGNED].append(enable & (((gm.base | gm.row_stride) & mask) != 0))
        lines, line_elems, _ = tile_geometry(m, tile, esz)
        end = Signal(64 + 49)   # one past the last byte touched
        m.d.comb += end.eq(gm.base + (lines - 1) * gm.row_stride + (line_elems << esz))
        touches = (lines != 0) & (line_elems != 0)
        fail[Status.GM_OUT_OF_RANGE].append(enable & touches & (end > (1 << cfg.gm_addr_bits)))

    def elaborate(self, platform):
        m = Module()
        op = self.cmd.opcode
        fail = {status: [] for status in CHECK_ORDER}
        known = Cat(op == member for member in Opcode).any()
        fail[Status.UNKNOWN_OPCODE].append(~known)
        supported = Cat(op == member for member in self._supported).any()
        fail[Status.UNSUPPORTED].append(known & ~supported)

        transfer = (op == Opcode.TLOAD) | (op == Opcode.TSTORE)
        if {Opcode.TLOAD, Opcode.TSTORE} & self._supported:
            self._transfer_checks(m, fail, transfer)

        m.d.comb += self.status.eq(Status.OK)
        for status in reversed(CHECK_ORDER):   # last assignment wins: walk from lowest priority up
            if fail[status]:
                with m.If(Cat(fail[status]).any()):
                    m.d.comb += self.status.eq(status)
        return m
