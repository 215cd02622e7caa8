"""TROWEXPAND* (row-broadcast) and TPART* (partial validity): the elementwise engine.

* :mod:`.engine`: :class:`ElementwiseEngine` (its parts, the segment queues, the lanes and the writer, ``done``;
  its depths and the timing contract's checks);
* :mod:`.setup`: the setup's three register stages over the command and the engine's state machine;
* :mod:`.walker`: the destination's segments (:class:`SegmentWalker`);
* :mod:`.pattern`: TROWEXPAND*'s expanded operand (:class:`PatternBuilder`);
* :mod:`.combiner`: a full-operand word paired with the other operand's, into the lanes' operand registers;
* :mod:`.lanes`: the arithmetic lanes (:class:`ElementwiseLanes`: IEEE-754 and integer add, sub, mul, max, min),
  their float path; :mod:`.cheap_path` the rest of a slot (:class:`CheapPath`: integers, MAX / MIN, copies);
* :mod:`.model`: the cycle model (:meth:`ElementwiseEngine.cycles`).
"""

from rtl.engines.elementwise.engine import ElementwiseEngine

__all__ = ["ElementwiseEngine"]
