"""LOCAL_GATHER's rules beyond the instruction table's common checks (``rtl.checker``), built into the
checker by :meth:`rtl.engines.local_gather.engine.LocalGatherEngine.add_checks` (as ``golden.check``)."""

from amaranth import *

from rtl.checker.stages import align, stage
from rtl.engines.local_gather.geometry import GROUP_LOG2, MAX_INDICES, MAX_NEPI_LOG2
from rtl.isa import Opcode, Status, TileDesc

__all__ = ["local_gather_checks"]


def local_gather_checks(m, config, cmd, fail):
    """LOCAL_GATHER constraints beyond the common ones (``rtl.checker``), as
    ``golden.check._rules_local_gather``."""
    en = cmd.opcode == Opcode.LOCAL_GATHER
    dst, src, idx = cmd.dst, cmd.src0, cmd.src1
    nv = cmd.num_valid
    # 16 x index valid cols (one bit spare, as built)
    per_group = Signal(TileDesc["valid_cols"].width + GROUP_LOG2 + 1)
    n = Signal(len(per_group))
    m.d.comb += [per_group.eq(idx.valid_cols << GROUP_LOG2), n.eq(Mux(nv != 0, nv, per_group))]
    # n x nepi (nepi = 1 << nepi_log2 as encoded): a variable shift, registered before its compare
    width = stage(m, n << cmd.nepi_log2, "lg_width")
    # (aligned: in a checker that takes a command every cycle the staged width is the next stage's)
    en_w, rows_differ, dst_cols, width = align(
        m, en, (idx.valid_rows != src.valid_rows) | (dst.valid_rows != src.valid_rows), dst.valid_cols, width)
    fail[Status.SHAPE_MISMATCH].append(en_w & (rows_differ | (dst_cols != width)))
    fail[Status.PARAM_INVALID].append(
        en & ((cmd.nepi_log2 > MAX_NEPI_LOG2) | (nv > MAX_INDICES) | (nv > per_group)))
    fail[Status.DIM_OUT_OF_RANGE].append(
        en & ((src.valid_rows[:GROUP_LOG2] != 0) | (n > MAX_INDICES)))
