"""TGEMV, TGEMV_ACC and TGEMV_BIAS: the GEMV engine.

* :mod:`.engine`: :class:`GemvEngine` (its timing constants and cycle model, the walker, the C words, the
  control; :meth:`GemvEngine.elaborate` calls the sections below in order);
* :mod:`.params`: the engine's setup (the per-instruction parameters) and its counters' widths;
* :mod:`.feed`: port 1's A / init lines and words, the init assembler, the A serializer;
* :mod:`.fire`: when a product fires, the product counter and the reducer bank credits, a step's tag;
* :mod:`.mac`: :class:`MacArray` (products and the accumulation ring of ``gemv_partial_sums``);
* :mod:`.operands`: how the MAC array widens its operands (:class:`.operands.OperandKind`, :func:`.operands.unpack`);
* :mod:`.reduce`: :class:`Reducer` (the partial sums' tree and the initial value, in the golden's order).
* :mod:`.overlap`: with ``overlap=True`` (the concurrent unit), the release after the last product and what
  travels per step, block and instruction behind it.
"""

from rtl.engines.gemv.engine import GemvEngine

__all__ = ["GemvEngine"]
