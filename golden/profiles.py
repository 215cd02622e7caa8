"""Which data types each instruction accepts in each target profile (from the seeds).

A type outside an instruction's set for the configured profile answers ``Status.DTYPE_UNSUPPORTED``.
"""

from rtl.isa import DType as D, Opcode as O, Profile as P

__all__ = ["TYPES", "GEMV_TRIPLES", "gemv_roles", "INDEX_TYPES"]

_ALL = frozenset(D)
_FP8 = (D.FP8E4M3, D.FP8E5M2)

#: Element types accepted by every non-GEMV instruction (destination type; sources must equal it).
TYPES = {
    # TLOAD / TSTORE move bits: every type in both profiles.
    O.TLOAD: {P.A2A3: _ALL, P.A5: _ALL},
    O.TSTORE: {P.A2A3: _ALL, P.A5: _ALL},
    # MGATHER is an A5 instruction (its seed documents only include/pto/npu/a5/MGather.hpp): the A2A3
    # profile accepts no type at all, so every MGATHER answers DTYPE_UNSUPPORTED there.
    O.MGATHER_ROW: {P.A2A3: frozenset(), P.A5: _ALL},
    O.MGATHER_ELEM: {P.A2A3: frozenset(), P.A5: _ALL},
    # local_gather (NKI) is a pure copy that "preserves the input data types": every type, both profiles.
    O.LOCAL_GATHER: {P.A2A3: _ALL, P.A5: _ALL},
    # TROWEXPANDMUL: the seed gives half, float, int16, int32 (A2/A3/A5) + uint16, uint32 (A5); issue 3
    # adds bfloat16, int8 and uint8 for A5.
    O.TROWEXPANDMUL: {
        P.A2A3: frozenset({D.FP16, D.FP32, D.INT16, D.INT32}),
        P.A5: frozenset({D.FP16, D.FP32, D.BF16, D.INT8, D.INT16, D.INT32, D.UINT8, D.UINT16, D.UINT32}),
    },
    # TPARTADD: seed lists per target.
    O.TPARTADD: {
        P.A2A3: frozenset({D.INT32, D.INT16, D.FP16, D.FP32}),
        P.A5: frozenset({D.UINT8, D.INT8, D.UINT16, D.INT16, D.UINT32, D.INT32, D.FP16, D.FP32, D.BF16}),
    },
}

_A2A3_TRIPLES = frozenset({
    (D.INT32, D.INT8, D.INT8),
    (D.FP32, D.FP16, D.FP16),
    (D.FP32, D.FP32, D.FP32),
    (D.FP32, D.BF16, D.BF16),
})

#: (accumulator, A, B) type triples of TGEMV / TGEMV_ACC / TGEMV_BIAS. A5 adds fp8 x fp8 in any mix.
GEMV_TRIPLES = {
    P.A2A3: _A2A3_TRIPLES,
    P.A5: _A2A3_TRIPLES | frozenset((D.FP32, a, b) for a in _FP8 for b in _FP8),
}

#: Index tile types: MGATHER int32 / uint32 (read as uint32), local_gather uint16.
INDEX_TYPES = {
    O.MGATHER_ROW: frozenset({D.INT32, D.UINT32}),
    O.MGATHER_ELEM: frozenset({D.INT32, D.UINT32}),
    O.LOCAL_GATHER: frozenset({D.UINT16}),
}


def gemv_roles(profile):
    """(accumulator types, A types, B types) accepted by the GEMV family in ``profile``."""
    t = GEMV_TRIPLES[profile]
    return (frozenset(x[0] for x in t), frozenset(x[1] for x in t), frozenset(x[2] for x in t))
