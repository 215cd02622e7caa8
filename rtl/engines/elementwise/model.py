"""The elementwise engine's cycle model (plain Python on commands as :func:`rtl.isa.decode` gives them):
:func:`cycles` is :meth:`ElementwiseEngine.cycles`, built from the engine's named depths.

The timeline, in cycles from ``start`` (0). The walker starts in PARAMS, ``SETUP_CYCLES`` after
``start``, and pushes the segment of destination line ``r`` ``SegmentWalker.LATENCY + r`` cycles later
(one per cycle while the queues have room). A reader takes a line ``QUEUE_CYCLES`` after its push at the
earliest, or in the cycle it reads the last word of the line before, and gives the line's words from
``UbReader.LATENCY`` cycles after the take, one per cycle: the first full-operand word is at the combiner
``FIRST_WORD_CYCLES`` after ``start``, and the combiner takes one word every ``K = W / ew_lane_bytes``
cycles. From the cycle it takes the first word, ``COMBINER_CYCLES`` and the lanes' ``LATENCY`` bring
the last one to the writer, which is ``done``.

TROWEXPAND*: reader B takes the expanded operand's first line ``QUEUE_CYCLES`` after PARAMS (the
engine queues it there, ``pre_line``), each later line with the segment of the row it serves (mode 2
every row, a 32-byte block at the row's lane; mode 1 every ``W / size`` rows, a word of scalars). A
row's pattern is ready ``PatternBuilder.LATENCY`` cycles after its line's last word (mode 1: the later
rows of a line one per cycle after). The first row waits for its pattern. A later row whose pattern is
not ready when its first word is due stalls the combiner; then the readers' credits and the queues
decide what follows, and the model gives ``None``.
"""

from rtl.engines.base import tile_lines, words_of
from rtl.engines.elementwise.lanes import ElementwiseLanes
from rtl.engines.elementwise.pattern import PATTERN_BYTES, PatternBuilder
from rtl.engines.elementwise.setup import is_rowexpand
from rtl.engines.elementwise.walker import QUEUE_CYCLES, SegmentWalker
from rtl.isa import DTYPE_BYTES, DType, Layout, Opcode
from rtl.ub.reader import UbReader

__all__ = ["cycles", "pattern_ready"]


def _full_is_src1(cmd):
    """The full operand is src1 (src0 lacks dst's valid shape), as the engine decides it."""
    d, s0 = cmd["dst"], cmd["src0"]
    return (s0["valid_rows"], s0["valid_cols"]) != (d["valid_rows"], d["valid_cols"])


def pattern_ready(engine, config, cmd):
    """TROWEXPAND*: per destination line (a row), the cycle after ``start`` from which its pattern is at
    the head of the pattern queue, if nothing stalls (see the module doc)."""
    W = config.ub_word_bytes
    dst = cmd["dst"]
    expanded = cmd["src0"] if _full_is_src1(cmd) else cmd["src1"]
    mode1 = Layout(expanded["layout"]) == Layout.COL_MAJOR
    per_line = W // DTYPE_BYTES[DType(dst["dtype"])] if mode1 else 1     # rows served by one expanded line
    ready, take, words = [], None, 0
    for r, (address, _) in enumerate(tile_lines(dst)):
        if r % per_line:
            ready.append(ready[-1] + 1)
            continue
        if r == 0:              # ``pre_line``: queued in PARAMS
            take = engine.SETUP_CYCLES + QUEUE_CYCLES
        else:                   # with the row's segment, after the line before
            take = max(engine.SETUP_CYCLES + SegmentWalker.LATENCY + r + QUEUE_CYCLES, take + words)
        # mode 1: up to W / size scalars from lane 0, one word; mode 2: a block at the row's lane
        words = 1 if mode1 else words_of(address, PATTERN_BYTES, W)
        at = take + UbReader.LATENCY + words - 1 + PatternBuilder.LATENCY
        ready.append(at if r == 0 else max(at, ready[-1] + 1))
    return ready


def cycles(engine, config, cmd):
    """Cycles from ``start`` to ``done`` of ``cmd`` on ``engine`` (:class:`ElementwiseEngine` or a
    subclass: its depths), or ``None`` where they are not exact: TPART* with a source stored in the
    other order than ``dst`` (the element path: per element, not modelled) and TROWEXPAND* where a
    later row's pattern can be late (:func:`pattern_ready`)."""
    W = config.ub_word_bytes
    K = W // config.ew_lane_bytes
    dst, s0, s1 = cmd["dst"], cmd["src0"], cmd["src1"]
    lines = tile_lines(dst)
    if not lines:
        return engine.EMPTY_CYCLES
    words = [words_of(a, n, W) for a, n in lines]
    total = sum(words) * K + engine.FIXED + ElementwiseLanes.latency(**engine.LANE_DEPTHS)
    if not is_rowexpand(Opcode(cmd["opcode"])):
        line_path = Layout(s0["layout"]) == Layout(dst["layout"]) == Layout(s1["layout"])
        return total if line_path else None
    ready = pattern_ready(engine, config, cmd)
    first = max(engine.FIRST_WORD_CYCLES, ready[0])         # the combiner takes the first word
    due = first
    for r in range(1, len(lines)):
        due += K * words[r - 1]
        if ready[r] > due:
            return None
    return total + first - engine.FIRST_WORD_CYCLES
