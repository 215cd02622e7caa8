"""TGEMV, TGEMV_ACC and TGEMV_BIAS: the GEMV engine.

* :mod:`.engine`: :class:`GemvEngine` (blocks of columns, the B walker, the A serializer, C words);
* :mod:`.mac`: :class:`MacArray` (products and the accumulation ring of ``gemv_partial_sums``);
* :mod:`.reduce`: :class:`Reducer` (the partial sums' tree and the initial value, in the golden's order).
"""

from rtl.engines.gemv.engine import GemvEngine

__all__ = ["GemvEngine"]
