"""The elementwise family's rules beyond the instruction table's common checks (``rtl.checker``), built into
the checker by :meth:`rtl.engines.elementwise.engine.ElementwiseEngine.add_checks` (as ``golden.check``)."""

from amaranth import *

from rtl.checker.stages import stage
from rtl.engines.elementwise.setup import EW_OPCODES, is_rowexpand, same_valid
from rtl.isa import EXPAND_BLOCK_BYTES, Layout, Status
from rtl.lib.tile import elem_log2

__all__ = ["elementwise_checks"]


def elementwise_checks(m, config, cmd, fail):
    """The family's own rules (``golden.check._rules_trowexpandmul`` / ``_rules_tpartadd``): TROWEXPAND*'s
    operand shapes and layouts, TPART*'s validity pattern."""
    dst, s0, s1 = cmd.dst, cmd.src0, cmd.src1
    # The opcode decodes and the field compares are registered (``stage``: the command is held while
    # it is checked), the conditions combine the registers: a few LUT levels each side of them.
    trow = stage(m, Cat(cmd.opcode == op for op in EW_OPCODES if is_rowexpand(op)).any(), "ew_trow")
    tpart = stage(m, Cat(cmd.opcode == op for op in EW_OPCODES if not is_rowexpand(op)).any(), "ew_tpart")
    m0 = stage(m, same_valid(s0, dst), "ew_same0")
    m1 = stage(m, same_valid(s1, dst), "ew_same1")
    esz = elem_log2(m, dst.dtype)
    block = Signal(range(EXPAND_BLOCK_BYTES + 1))      # the block's elements
    m.d.comb += block.eq(EXPAND_BLOCK_BYTES >> esz)

    def expanded_ok(t):     # ``t`` has the expanded operand's shape: its layout picks the mode
        want_cols = Mux(t.layout == Layout.COL_MAJOR, 1, block)
        return (t.valid_rows == dst.valid_rows) & (t.valid_cols == want_cols)
    # TROWEXPAND*: the full operand is src0 when it has dst's valid shape (also when both do: then
    # src1 is the expanded one), else src1; the expanded operand's layout picks the mode.
    exp0_ok, exp1_ok = stage(m, expanded_ok(s0), "ew_exp0"), stage(m, expanded_ok(s1), "ew_exp1")
    row0, row1 = (stage(m, t.layout == Layout.ROW_MAJOR, f"ew_row{k}") for k, t in enumerate((s0, s1)))
    full_is_1 = ~m0
    fail[Status.LAYOUT_UNSUPPORTED].append(trow & (m0 | m1) & ~Mux(full_is_1, row1, row0))
    fail[Status.SHAPE_MISMATCH].append(trow & (~(m0 | m1) | ~Mux(full_is_1, exp0_ok, exp1_ok)))
    # TPART*: one source has dst's valid shape, the other fits inside it; an empty dst region is fine
    fits0 = stage(m, (s0.valid_rows <= dst.valid_rows) & (s0.valid_cols <= dst.valid_cols), "ew_fits0")
    fits1 = stage(m, (s1.valid_rows <= dst.valid_rows) & (s1.valid_cols <= dst.valid_cols), "ew_fits1")
    empty = stage(m, (dst.valid_rows == 0) | (dst.valid_cols == 0), "ew_empty")
    fail[Status.VALIDITY_PATTERN].append(tpart & ~empty & ~((m0 & fits1) | (m1 & fits0)))
