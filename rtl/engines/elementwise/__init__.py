"""TROWEXPAND* (row-broadcast) and TPART* (partial validity): the elementwise engine.

* :mod:`.engine`: :class:`ElementwiseEngine` (setup, the readers, the combiner, the writer);
* :mod:`.walker`: the destination's segments (:class:`SegmentWalker`);
* :mod:`.pattern`: TROWEXPAND*'s expanded operand (:class:`PatternBuilder`);
* :mod:`.lanes`: the arithmetic lanes (:class:`ElementwiseLanes`: IEEE-754 and integer add, sub, mul, max, min).
"""

from rtl.engines.elementwise.engine import ElementwiseEngine

__all__ = ["ElementwiseEngine"]
