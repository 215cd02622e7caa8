"""The GEMV family's rules beyond the instruction table's common checks (``rtl.checker``), built into the
checker by :meth:`rtl.engines.gemv.engine.GemvEngine.add_checks` (as ``golden.check``)."""

from amaranth import *

from rtl.isa import GEMV_MAX_DIM, Opcode, Status

__all__ = ["gemv_checks"]


def gemv_checks(m, config, cmd, fail, opcodes):
    """The family's (``opcodes``) shape rules (``golden.check._rules_gemv``); types, layouts and UB ranges are the
    checker's common checks."""
    gemv = Cat(cmd.opcode == op for op in opcodes).any()
    with_init = (cmd.opcode == Opcode.TGEMV_ACC) | (cmd.opcode == Opcode.TGEMV_BIAS)
    c, a, b, i = cmd.dst, cmd.src0, cmd.src1, cmd.src2
    K, N = b.valid_rows, b.valid_cols
    fail[Status.SHAPE_MISMATCH].append(gemv & (
        (a.rows != c.rows) | (a.cols != b.rows) | (b.cols != c.cols) |
        (a.valid_rows != c.valid_rows) | (a.valid_cols != K) | (c.valid_cols != N) |
        (with_init & ((i.rows != c.rows) | (i.cols != c.cols) |
                      (i.valid_rows != c.valid_rows) | (i.valid_cols != c.valid_cols)))))
    fail[Status.DIM_OUT_OF_RANGE].append(gemv & (
        (c.valid_rows != 1) | (K == 0) | (K > GEMV_MAX_DIM) | (N == 0) | (N > GEMV_MAX_DIM)))
