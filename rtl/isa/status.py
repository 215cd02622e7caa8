"""Status codes returned on the response stream (and carried by ``golden.errors.IsaError``).

One code per constraint class. The hardware checker and the golden model must agree on which code an
illegal instruction gets; when several constraints fail, the lowest-numbered check in the order of
``docs/architecture.md`` ("Checking order") wins. Codes are append-only: never renumber.
"""

from amaranth.lib import enum

__all__ = ["Status"]


class Status(enum.Enum, shape=8):
    OK                   = 0x00  #: completed
    UNKNOWN_OPCODE       = 0x01  #: opcode not in ``Opcode``
    UNSUPPORTED          = 0x02  #: known instruction, but this configuration has no engine for it
    DTYPE_INVALID        = 0x03  #: a data-type code not in ``DType``
    DTYPE_UNSUPPORTED    = 0x04  #: a valid type the instruction or the target profile does not accept
    DTYPE_MISMATCH       = 0x05  #: operands that must share a type do not
    UB_MISALIGNED        = 0x06  #: tile base not a multiple of UB_ALIGN
    UB_OUT_OF_RANGE      = 0x07  #: tile (static extent) beyond the UB capacity
    VALID_EXCEEDS_STATIC = 0x08  #: valid rows/cols larger than static rows/cols
    LAYOUT_UNSUPPORTED   = 0x09  #: row/column-major order the instruction does not accept
    SHAPE_MISMATCH       = 0x0A  #: static or valid shapes that must agree do not
    GM_MISALIGNED        = 0x0B  #: GM base or row stride not a multiple of the element size
    GM_OUT_OF_RANGE      = 0x0C  #: GM region beyond the address width
    INDEX_DTYPE          = 0x0D  #: index tile of a type the instruction does not accept
    INDEX_OUT_OF_RANGE   = 0x0E  #: an index outside its table (modes / instructions that forbid it)
    PARAM_INVALID        = 0x0F  #: an immediate parameter out of its range (e.g. num_elem_per_idx)
    DIM_OUT_OF_RANGE     = 0x10  #: a dimension outside the instruction's range (e.g. GEMV K, N)
    VALIDITY_PATTERN     = 0x11  #: a partial-validity pattern the instruction does not define
    AXI_READ_ERROR       = 0x20  #: SLVERR/DECERR on a global-memory read
    AXI_WRITE_ERROR      = 0x21  #: SLVERR/DECERR on a global-memory write
