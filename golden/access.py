"""What an instruction reads and writes: its UB and GM byte ranges (the footprint hazards are tracked on).

``access(cmd, config) -> Access`` for a command the checker passes: four tuples of half-open byte ranges
``(lo, hi)``, ``ub_reads``, ``ub_writes``, ``gm_reads``, ``gm_writes``, one range per operand (empty operands
give none). ``hazards(older, younger)`` names the read-after-write, write-after-read and write-after-write
overlaps between two of them. This is the reference the hardware's hazard tracking is held to (issue #33:
pipes that run at once must still compute what one instruction at a time computes, ``golden.Machine``).

The ranges, per operand (docs/architecture.md, "Footprints"):

- a tile: from its base to the end of its valid region's last element, ``((vr - 1) * cols + vc) * size``
  bytes row-major, ``((vc - 1) * rows + vr) * size`` column-major: a superset of the valid region (rows
  between valid rows and the padding columns are included), which is what a hazard check can compare with
  two comparators. Every source slot is read, the destination written; the destination counts as read
  too (conservative, and free: every overlap with it is a write-after-write as well), so that a result that
  keeps some of the destination's old bytes (MGATHER's UNDEFINED rows, in the hardware) needs no rule.
- the GM region of TLOAD (read) and TSTORE (written): the lines of the valid region, ``base`` to
  ``base + (lines - 1) * row_stride + line bytes``, lines = valid rows (row-major) or columns.
- MGATHER's table: the whole table, whatever the indices are (conservative: which rows a gather reads is
  known only from the index tile's contents): row mode ``base`` to ``base + (rows - 1) * row_stride +
  cols * size``, element mode ``rows * cols`` contiguous elements. In UNDEFINED mode an out-of-range index
  reads outside it in hardware; the elements it gives are undefined anyway.

A property test (tests/golden/test_golden_access.py) holds the golden machine to it: an instruction changes
no byte outside its write ranges, and bytes outside its read ranges do not change what it writes.
"""

from dataclasses import dataclass

from rtl.isa import DTYPE_BYTES, INSTRUCTIONS, Layout, Opcode

from .check import gm_view, normalize, tile_view

__all__ = ["Access", "access", "tile_span", "hazards", "overlap"]


@dataclass(frozen=True)
class Access:
    """An instruction's footprint: tuples of half-open byte ranges ``(lo, hi)``, ``lo < hi``."""
    ub_reads: tuple = ()
    ub_writes: tuple = ()
    gm_reads: tuple = ()
    gm_writes: tuple = ()


def tile_span(t):
    """``(lo, hi)`` of a tile view's valid region (``golden.check.tile_view``), from its first to its last
    valid element; None when the valid region is empty."""
    if not t.vr or not t.vc:
        return None
    size = DTYPE_BYTES[t.dtype]
    last = (t.vr - 1) * t.cols + t.vc if t.layout == Layout.ROW_MAJOR else (t.vc - 1) * t.rows + t.vr
    return (t.base, t.base + last * size)


def _gm_lines(g, t):
    """The GM range TLOAD reads / TSTORE writes for tile ``t`` and region ``g``."""
    lines, line_len = (t.vr, t.vc) if t.layout == Layout.ROW_MAJOR else (t.vc, t.vr)
    if not lines or not line_len:
        return None
    return (g.base, g.base + (lines - 1) * g.row_stride + line_len * DTYPE_BYTES[t.dtype])


def _table(g, row_mode):
    if not g.rows or not g.cols:
        return None
    size = DTYPE_BYTES[g.dtype]
    if row_mode:
        return (g.base, g.base + (g.rows - 1) * g.row_stride + g.cols * size)
    return (g.base, g.base + g.rows * g.cols * size)


def access(cmd, config=None):
    """The :class:`Access` of ``cmd``, a command the checker passes (``golden.check`` is ``OK``; the
    ranges of an illegal command mean nothing: it touches nothing). ``config`` is not needed today (the
    footprint depends on the command alone) and is accepted for the hardware's sake."""
    cmd = normalize(cmd)
    op = cmd["opcode"]
    ins = INSTRUCTIONS[op]
    ub_reads, ub_writes = [], []
    tiles = {}
    for s in ins.slots:
        t = tiles[s.name] = tile_view(cmd, s.name, s.role)
        span = tile_span(t)
        if span is None:
            continue
        ub_reads.append(span)
        if s.writes:
            ub_writes.append(span)
    gm_reads, gm_writes = [], []
    if ins.gm:
        g = gm_view(cmd)
        if op in (Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM):
            span = _table(g, op == Opcode.MGATHER_ROW)
        else:
            (tile,) = tiles.values()
            span = _gm_lines(g, tile)
        if span is not None:
            (gm_writes if ins.gm_writes else gm_reads).append(span)
    return Access(tuple(ub_reads), tuple(ub_writes), tuple(gm_reads), tuple(gm_writes))


def overlap(a, b):
    """Whether two collections of half-open ranges share a byte."""
    return any(lo < hi2 and lo2 < hi for lo, hi in a for lo2, hi2 in b)


def hazards(older, younger):
    """The hazards between two instructions' :class:`Access` es, ``older`` first in program order: a set of
    ``"RAW"`` (younger reads what older writes), ``"WAR"`` (younger writes what older reads) and ``"WAW"``,
    over the UB and GM together (a TLOAD reading GM that an older TSTORE writes is a RAW)."""
    out = set()
    for space in ("ub", "gm"):
        o_r, o_w = getattr(older, f"{space}_reads"), getattr(older, f"{space}_writes")
        y_r, y_w = getattr(younger, f"{space}_reads"), getattr(younger, f"{space}_writes")
        if overlap(o_w, y_r):
            out.add("RAW")
        if overlap(o_r, y_w):
            out.add("WAR")
        if overlap(o_w, y_w):
            out.add("WAW")
    return out
