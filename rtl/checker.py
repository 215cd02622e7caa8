"""Instruction checking: which status an instruction gets before any engine touches anything."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .isa import Command, Opcode, UB_ALIGN
from .status import Status
from .tile import elem_log2

__all__ = ["Checker", "CHECK_ORDER", "tile_checks"]

#: When several constraints fail, the first in this list wins (same order as ``golden.check``).
CHECK_ORDER = (
    Status.UNKNOWN_OPCODE, Status.UNSUPPORTED, Status.DTYPE_INVALID, Status.DTYPE_UNSUPPORTED,
    Status.DTYPE_MISMATCH, Status.INDEX_DTYPE, Status.UB_MISALIGNED, Status.UB_OUT_OF_RANGE,
    Status.VALID_EXCEEDS_STATIC, Status.LAYOUT_UNSUPPORTED, Status.SHAPE_MISMATCH,
    Status.PARAM_INVALID, Status.DIM_OUT_OF_RANGE, Status.GM_MISALIGNED, Status.GM_OUT_OF_RANGE,
    Status.VALIDITY_PATTERN,
)


def tile_checks(m, config, fail, tile, enable):
    """Checks every tile operand gets: base alignment, UB range of the static extent, valid <= static.
    Appends conditions to ``fail`` (status -> list of conditions); returns log2 of the element size."""
    esz = elem_log2(m, tile.dtype)
    size = Signal(35)
    m.d.comb += size.eq((tile.rows * tile.cols) << esz)
    fail[Status.UB_MISALIGNED].append(enable & (tile.base[:UB_ALIGN.bit_length() - 1] != 0))
    fail[Status.UB_OUT_OF_RANGE].append(enable & (tile.base + size > config.ub_bytes))
    fail[Status.VALID_EXCEEDS_STATIC].append(
        enable & ((tile.valid_rows > tile.rows) | (tile.valid_cols > tile.cols)))
    return esz


class Checker(wiring.Component):
    """Combinational instruction checker.

    Parameters: ``config``; ``engines``, the engine classes of this configuration. Their ``opcodes``
    are supported (others answer ``UNSUPPORTED``); each contributes its instructions' constraints
    through a static method ``add_checks(m, config, cmd, fail)`` that appends, per status, conditions
    that are true when the constraint fails (gated by its own opcodes).

    Ports: ``cmd`` (in, :data:`Command`), ``status`` (out): ``OK`` or the first failing check in
    :data:`CHECK_ORDER`. Latency: 0 (the front end registers the command before it and the status after).
    """

    def __init__(self, config, engines):
        self._config = config
        self._engines = tuple(engines)
        self._supported = frozenset(op for engine in self._engines for op in engine.opcodes)
        super().__init__({"cmd": In(Command), "status": Out(Status)})

    def elaborate(self, platform):
        m = Module()
        op = self.cmd.opcode
        fail = {status: [] for status in CHECK_ORDER}
        known = Cat(op == member for member in Opcode).any()
        fail[Status.UNKNOWN_OPCODE].append(~known)
        supported = Cat(op == member for member in self._supported).any()
        fail[Status.UNSUPPORTED].append(known & ~supported)

        for engine in self._engines:
            engine.add_checks(m, self._config, self.cmd, fail)

        m.d.comb += self.status.eq(Status.OK)
        for status in reversed(CHECK_ORDER):   # last assignment wins: walk from lowest priority up
            if fail[status]:
                with m.If(Cat(fail[status]).any()):
                    m.d.comb += self.status.eq(status)
        return m
