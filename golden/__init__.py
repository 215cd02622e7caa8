"""Bit-exact numpy golden model of the tile vector unit (see docs/semantics.md).

* ``golden.ops``: one array-level function per instruction;
* ``golden.check`` / ``golden.check_strict``: the status of a decoded command, in the fixed checking order;
* ``golden.Machine``: UB bytes + sparse GM + ``execute(cmd) -> Status``;
* ``golden.errors``: ``IsaError`` (illegal, carries the ``Status``), ``UndefinedResult`` and ``AmbiguousFault``;
* ``golden.faults``: ``GmFaults``, GM windows whose AXI accesses fail (``Machine.faults``).
"""

from .errors import AmbiguousFault, IsaError, UndefinedResult
from .faults import GmFaults
from .numerics import CANONICAL_NAN
from .ops import (tload, tstore, mgather_row, mgather_elem, local_gather, trowexpandmul, trowexpandadd,
                  trowexpandsub, trowexpandmax, trowexpandmin, tpartadd, tpartmul, tpartmax, tpartmin, tgemv,
                  tgemv_acc, tgemv_bias, gemv_reduce)
from .check import check, check_strict, CHECKING_ORDER
from .machine import Machine, SparseMemory
from .profiles import TYPES, GEMV_TRIPLES

__all__ = [
    "IsaError", "UndefinedResult", "AmbiguousFault", "GmFaults", "CANONICAL_NAN", "tload", "tstore", "mgather_row", "mgather_elem",
    "local_gather", "trowexpandmul", "trowexpandadd", "trowexpandsub", "trowexpandmax", "trowexpandmin",
    "tpartadd", "tpartmul", "tpartmax", "tpartmin", "tgemv", "tgemv_acc", "tgemv_bias", "gemv_reduce",
    "check", "check_strict", "CHECKING_ORDER", "Machine", "SparseMemory", "TYPES", "GEMV_TRIPLES",
]
