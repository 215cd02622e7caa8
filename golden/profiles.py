"""Which data types each instruction accepts in each target profile: the golden's view of
``rtl.isa.INSTRUCTIONS`` (the one place these sets are written down).

A type outside an instruction's set for the configured profile answers ``Status.DTYPE_UNSUPPORTED``.
"""

from rtl.isa import INSTRUCTIONS

__all__ = ["TYPES", "GEMV_TRIPLES", "gemv_roles", "INDEX_TYPES"]

#: Element types accepted by every non-GEMV instruction (destination type; sources must equal it).
TYPES = {op: dict(ins.types) for op, ins in INSTRUCTIONS.items() if ins.type_rule == "same"}

#: (accumulator, A, B) type triples of TGEMV / TGEMV_ACC / TGEMV_BIAS (the same for all three).
GEMV_TRIPLES = next(ins.triples for ins in INSTRUCTIONS.values() if ins.type_rule == "gemv")

#: Index tile types: MGATHER int32 / uint32 (read as uint32), local_gather uint16.
INDEX_TYPES = {op: ins.index_types for op, ins in INSTRUCTIONS.items() if ins.index_types}


def gemv_roles(profile):
    """(accumulator types, A types, B types) accepted by the GEMV family in ``profile``."""
    t = GEMV_TRIPLES[profile]
    return (frozenset(x[0] for x in t), frozenset(x[1] for x in t), frozenset(x[2] for x in t))
