"""The instruction table: what every opcode needs of its command, defined once.

``rtl/isa/encoding.py`` says how a command is *encoded*; this module says what each opcode *means* to the checks:
which operand slots it uses and in which role, whether it reaches global memory, its immediates, the data
types it accepts in each profile and how the types of its operands relate, its layout rules, its limits,
and which statuses it can answer (its places in :data:`CHECK_ORDER`).

Everything that needs one of these facts reads it from here: the golden model's checks
(``golden/check.py``), the hardware checker (``rtl/checker/``, which builds the checks common to all
instructions from this table, once per operand slot), the driver and the harness (which slot an
instruction writes), the documentation tables (``python -m flow.docs``) and the assembler. What is
special to one instruction (shape relations, GM ranges, validity patterns) stays beside its engine
(``add_checks``) and in ``golden/check.py``'s per-instruction rules.

Type rules come in two kinds:

* ``"same"``: every ``data`` slot (and the GM descriptor when ``gm_typed``) has one element type, which
  must be in ``types[profile]``; an ``index`` slot's type must be in ``index_types``.
* ``"gemv"``: the (``acc``, ``a``, ``b``) slots form a triple in ``triples[profile]``; an ``init`` slot
  (C_in, bias) has the accumulator's type.
"""

import enum
from dataclasses import dataclass, field

from rtl.isa import DType, Opcode, Profile, Status

__all__ = ["CHECK_ORDER", "EXEC_STATUSES", "FRONT_END_OPCODES", "Pipe", "Slot", "Instruction", "INSTRUCTIONS", "TILE_SLOTS", "instruction",
           "main_slot", "LOCAL_GATHER_GROUP", "LOCAL_GATHER_MAX_INDICES", "LOCAL_GATHER_MAX_NEPI_LOG2",
           "GEMV_MAX_DIM", "GEMV_PARTIAL_SUMS", "EXPAND_BLOCK_BYTES"]

#: When several constraints fail, the first in this order wins (docs/semantics.md, "Checking order").
CHECK_ORDER = (
    Status.UNKNOWN_OPCODE, Status.UNSUPPORTED, Status.DTYPE_INVALID, Status.DTYPE_UNSUPPORTED,
    Status.DTYPE_MISMATCH, Status.INDEX_DTYPE, Status.UB_MISALIGNED, Status.UB_OUT_OF_RANGE,
    Status.VALID_EXCEEDS_STATIC, Status.LAYOUT_UNSUPPORTED, Status.SHAPE_MISMATCH, Status.PARAM_INVALID,
    Status.DIM_OUT_OF_RANGE, Status.GM_MISALIGNED, Status.GM_OUT_OF_RANGE, Status.VALIDITY_PATTERN,
)

#: Statuses found during execution, after the checks: never answered by the checker.
EXEC_STATUSES = (Status.INDEX_OUT_OF_RANGE, Status.AXI_READ_ERROR, Status.AXI_WRITE_ERROR)

#: The tile operand slots of a command, in the order checks examine them.
TILE_SLOTS = ("dst", "src0", "src1", "src2")

# ---- limits ---------------------------------------------------------------------------------------------
LOCAL_GATHER_GROUP = 16             #: local_gather: rows (partitions) per group, one index list per group
LOCAL_GATHER_MAX_INDICES = 4096     #: local_gather: indices per group (num_valid_indices and 16 x index cols)
LOCAL_GATHER_MAX_NEPI_LOG2 = 5      #: local_gather: num_elem_per_idx in 1, 2, 4, ..., 32
GEMV_MAX_DIM = 4095                 #: TGEMV*: K and N in [1, 4095]
#: TGEMV*: the reference number of interleaved partial sums P, which fixes the float accumulation order
#: (docs/semantics.md; a unit's own P is ``Config.gemv_partial_sums``, by default this one).
GEMV_PARTIAL_SUMS = 8
EXPAND_BLOCK_BYTES = 32             #: TROWEXPAND* mode 2: one 32-byte block per row

class Pipe(enum.Enum):
    """The pipe an instruction runs in: the machines this unit follows run these at the same time, each in
    order (Ascend's MTE2, MTE3, V and M pipes; issue #33 brings them to this unit). Today's unit runs one
    instruction at a time; the pipe already names the lane an instruction takes in a timeline
    (``python -m sim run P.pto --timeline T.png``)."""
    GM_TO_UB = "GM -> UB"       #: TLOAD, MGATHER (Ascend MTE2)
    UB_TO_GM = "UB -> GM"       #: TSTORE (MTE3)
    VECTOR = "vector"           #: the elementwise family, local_gather (V)
    MATRIX = "matrix"           #: the TGEMV family (M, the cube)


#: The opcodes the command front end answers itself, in no engine and no pipe (``Instruction.pipe`` is
#: ``None``): every unit has them, whatever ``Config.engines`` says.
FRONT_END_OPCODES = frozenset({Opcode.TSYNC})


_ALL = frozenset(DType)
_BOTH = frozenset(Profile)
_FP8 = (DType.FP8E4M3, DType.FP8E5M2)


@dataclass(frozen=True)
class Slot:
    """One tile operand of an instruction.

    ``name``: the command field (``dst``, ``src0``, ``src1``, ``src2``). ``role``: what the instruction
    calls it. ``kind``: which type rule applies (``data``, ``index``; for GEMV ``acc``, ``a``, ``b``,
    ``init``). ``row_major``: the profiles in which this slot must be ROW_MAJOR (LAYOUT_UNSUPPORTED).
    ``writes``: the instruction writes this tile (its destination).
    """
    name: str
    role: str
    kind: str = "data"
    row_major: frozenset = _BOTH
    writes: bool = False

    @property
    def label(self):
        return self.name if self.role == self.name else f"{self.name} ({self.role})"


@dataclass(frozen=True)
class Instruction:
    """Everything the checks and the tools need to know about one opcode (see the module docstring).

    ``special``: the statuses its own rules can answer beyond the common ones (shape relations, limits,
    GM range ...), implemented by ``golden/check.py`` and by its engine's ``add_checks``.
    ``family``: the name its files carry (``rtl/<family>.py`` or the engine's module,
    ``golden.ops.<golden>``, ``cocotb_tests/test_<family>.py``, ``tests/rtl/test_rtl_<family>.py``).
    ``pipe``: the :class:`Pipe` it runs in; ``None`` for the front end's own opcodes
    (:data:`FRONT_END_OPCODES`: TSYNC, which has no operands).
    """
    opcode: Opcode
    summary: str
    slots: tuple
    family: str
    golden: str
    pipe: Pipe
    gm: str = ""                    # role of the GM descriptor ("" = not used)
    gm_typed: bool = False          # the GM descriptor's dtype joins the ``same`` type group
    immediates: tuple = ()
    type_rule: str = "same"
    types: dict = field(default_factory=lambda: {p: _ALL for p in Profile})
    index_types: frozenset = frozenset()
    triples: dict = None
    special: tuple = ()
    exec_statuses: tuple = ()
    limits: dict = field(default_factory=dict)
    seed: str = ""
    note: str = ""                  # a rule the columns above do not show (for the docs)

    def slot(self, name):
        return next((s for s in self.slots if s.name == name), None)

    @property
    def gm_writes(self):
        """The instruction writes the GM region (TSTORE's ``destination``); every other GM use reads it."""
        return self.gm == "destination"

    @property
    def slot_names(self):
        return tuple(s.name for s in self.slots)

    @property
    def destination(self):
        """The slot the instruction writes, or None (TSTORE writes GM)."""
        return next((s for s in self.slots if s.writes), None)

    def data_slots(self):
        return tuple(s for s in self.slots if s.kind == "data")

    def allowed(self, slot, profile):
        """The types ``slot`` accepts in ``profile`` under a ``gemv`` rule (``acc``/``init``, ``a``, ``b``)."""
        t = self.triples[profile]
        pos = {"acc": 0, "init": 0, "a": 1, "b": 2}[slot.kind]
        return frozenset(x[pos] for x in t)

    def statuses(self, profile=None):
        """The statuses the checks can answer for this instruction, in :data:`CHECK_ORDER`."""
        profiles = (profile,) if profile else tuple(Profile)
        if not self.slots and not self.gm:
            return tuple(x for x in CHECK_ORDER if x in self.special)      # TSYNC: no operand to check
        s = {Status.DTYPE_INVALID, Status.UB_MISALIGNED, Status.UB_OUT_OF_RANGE, Status.VALID_EXCEEDS_STATIC}
        if self.type_rule == "gemv" or any(self.types[p] != _ALL for p in profiles):
            s.add(Status.DTYPE_UNSUPPORTED)
        typed = len(self.data_slots()) + self.gm_typed
        if self.type_rule == "gemv" or typed > 1:
            s.add(Status.DTYPE_MISMATCH)
        if self.index_types:
            s.add(Status.INDEX_DTYPE)
        if any(p in slot.row_major for slot in self.slots for p in profiles):
            s.add(Status.LAYOUT_UNSUPPORTED)
        s |= set(self.special)
        return tuple(x for x in CHECK_ORDER if x in s)


def _gemv_triples():
    a2a3 = frozenset({
        (DType.INT32, DType.INT8, DType.INT8), (DType.FP32, DType.FP16, DType.FP16),
        (DType.FP32, DType.FP32, DType.FP32), (DType.FP32, DType.BF16, DType.BF16),
    })
    return {Profile.A2A3: a2a3, Profile.A5: a2a3 | frozenset((DType.FP32, a, b) for a in _FP8 for b in _FP8)}


def _gemv(opcode, summary, init_role=None):
    slots = [Slot("dst", "C_out" if init_role == "C_in" else "C", "acc", writes=True),
             Slot("src0", "A", "a"), Slot("src1", "B", "b")]
    if init_role:
        slots.append(Slot("src2", init_role, "init"))
    return Instruction(
        opcode, summary, tuple(slots), family="gemv", golden=opcode.name.lower(), pipe=Pipe.MATRIX, type_rule="gemv",
        types=None, triples=_gemv_triples(), special=(Status.SHAPE_MISMATCH, Status.DIM_OUT_OF_RANGE),
        limits={"max_dim": GEMV_MAX_DIM, "m": 1}, seed="TGEMV_ACC.txt",
        note=f"m = 1; K, N in [1, {GEMV_MAX_DIM}]" + ("; C_in may be the C_out tile" if init_role == "C_in" else ""))


_MGATHER = dict(
    family="mgather", pipe=Pipe.GM_TO_UB, gm="table", gm_typed=True, immediates=("oob",),
    # MGATHER is an A5 instruction (its seed documents only include/pto/npu/a5/MGather.hpp): the A2A3
    # profile accepts no type at all, so every MGATHER answers DTYPE_UNSUPPORTED there.
    types={Profile.A2A3: frozenset(), Profile.A5: _ALL},
    # indices are read as uint32 (a negative int32 index is a large one)
    index_types=frozenset({DType.INT32, DType.UINT32}),
    special=(Status.SHAPE_MISMATCH, Status.DIM_OUT_OF_RANGE, Status.GM_MISALIGNED, Status.GM_OUT_OF_RANGE),
    exec_statuses=(Status.AXI_READ_ERROR,), seed="MGATHER.txt",
    note="index types read as uint32; row: index (R, 1), gm.cols = dst valid cols; elem: index shape = dst's",
)
_MG_SLOTS = (Slot("dst", "dst", writes=True), Slot("src0", "index tile", "index"))
_EW_SLOTS = (Slot("dst", "dst", writes=True), Slot("src0", "src0"), Slot("src1", "src1"))
#: TROWEXPANDMUL and its siblings (TROWEXPANDADD/SUB/MAX/MIN): the same slots, types, rules and limits.
_TROWEXPAND = dict(
    # dst must be row-major; the full operand's layout rule depends on which source it is (special)
    slots=(Slot("dst", "dst", writes=True), Slot("src0", "src0", row_major=frozenset()),
           Slot("src1", "src1", row_major=frozenset())),
    family="elementwise", pipe=Pipe.VECTOR,
    # the seed gives half, float, int16, int32 (A2/A3/A5) + uint16, uint32 (A5); bf16, int8, uint8 added for A5
    types={Profile.A2A3: frozenset({DType.FP16, DType.FP32, DType.INT16, DType.INT32}),
           Profile.A5: frozenset({DType.FP16, DType.FP32, DType.BF16, DType.INT8, DType.INT16, DType.INT32,
                                  DType.UINT8, DType.UINT16, DType.UINT32})},
    special=(Status.LAYOUT_UNSUPPORTED, Status.SHAPE_MISMATCH),
    limits={"block_bytes": EXPAND_BLOCK_BYTES}, seed="TROWEXPANDMUL.txt",
    note="the source with dst's valid shape is the full operand (row-major); if both have it, src1 is the "
         "expanded one; the expanded operand: column-major (R, 1) mode 1, row-major (R, 32 / size) mode 2",
)
#: TPARTADD and its siblings (TPARTMUL/MAX/MIN).
_TPART = dict(
    # A5 accepts row- and column-major tiles; A2/A3 row-major only
    slots=tuple(Slot(s.name, s.role, s.kind, frozenset({Profile.A2A3}), s.writes) for s in _EW_SLOTS),
    family="elementwise", pipe=Pipe.VECTOR,
    types={Profile.A2A3: frozenset({DType.INT32, DType.INT16, DType.FP16, DType.FP32}),
           Profile.A5: frozenset({DType.UINT8, DType.INT8, DType.UINT16, DType.INT16, DType.UINT32,
                                  DType.INT32, DType.FP16, DType.FP32, DType.BF16})},
    special=(Status.VALIDITY_PATTERN,), seed="TPARTADD.txt",
    note="one source has dst's valid shape, the other does not exceed it",
)


def _sibling(opcode, summary, base):
    """An elementwise sibling of TROWEXPANDMUL / TPARTADD: the base entry's everything, its own operation.
    The siblings are beyond the seeds (the base's seed is the nearest); the note says so."""
    rest = dict(base, note=base["note"] + f"; not in the seeds: {base['seed'].removesuffix('.txt')}'s rules")
    return Instruction(opcode, summary, golden=opcode.name.lower(), **rest)


_TRANSFER = dict(family="transfer", gm_typed=True,
                 special=(Status.SHAPE_MISMATCH, Status.GM_MISALIGNED, Status.GM_OUT_OF_RANGE),
                 note="gm rows x cols = the tile's valid shape; either layout")

#: One entry per opcode, in opcode order.
INSTRUCTIONS = {ins.opcode: ins for ins in (
    Instruction(Opcode.TLOAD, "GM region -> UB tile (valid region), 2-D strided",
                (Slot("dst", "tile", row_major=frozenset(), writes=True),), golden="tload", gm="source", pipe=Pipe.GM_TO_UB,
                exec_statuses=(Status.AXI_READ_ERROR,), **_TRANSFER),
    Instruction(Opcode.TSTORE, "UB tile (valid region) -> GM region, 2-D strided",
                (Slot("src0", "tile", row_major=frozenset()),), golden="tstore", gm="destination", pipe=Pipe.UB_TO_GM,
                exec_statuses=(Status.AXI_WRITE_ERROR,), **_TRANSFER),
    Instruction(Opcode.MGATHER_ROW, "dst[i, :] = table[idx[i], :]", _MG_SLOTS, golden="mgather_row", **_MGATHER),
    Instruction(Opcode.MGATHER_ELEM, "dst[i, j] = table_flat[idx[i, j]]", _MG_SLOTS, golden="mgather_elem",
                **_MGATHER),
    Instruction(
        Opcode.LOCAL_GATHER, "NKI local_gather inside the UB, per group of 16 rows",
        (Slot("dst", "dst", writes=True), Slot("src0", "source"), Slot("src1", "index tile", "index")),
        family="local_gather", golden="local_gather", pipe=Pipe.VECTOR, immediates=("nepi_log2", "num_valid"),
        # a pure copy that "preserves the input data types": every type, both profiles
        index_types=frozenset({DType.UINT16}),
        special=(Status.SHAPE_MISMATCH, Status.PARAM_INVALID, Status.DIM_OUT_OF_RANGE),
        limits={"group": LOCAL_GATHER_GROUP, "max_indices": LOCAL_GATHER_MAX_INDICES,
                "max_nepi_log2": LOCAL_GATHER_MAX_NEPI_LOG2},
        note=f"source valid rows a multiple of {LOCAL_GATHER_GROUP}; up to {LOCAL_GATHER_MAX_INDICES} indices "
             f"per group; num_elem_per_idx = 1 << nepi_log2 <= {1 << LOCAL_GATHER_MAX_NEPI_LOG2}",
        seed="nki_local_gather.txt"),
    Instruction(Opcode.TROWEXPANDMUL,
                "dst = full operand x row-broadcast operand (mode 1 scalar, mode 2 32-byte block)",
                golden="trowexpandmul", **_TROWEXPAND),
    Instruction(Opcode.TPARTADD, "dst = src0 + src1 over dst's valid region, with partial validity",
                golden="tpartadd", **_TPART),
    _sibling(Opcode.TROWEXPANDADD, "dst = full operand + row-broadcast operand", _TROWEXPAND),
    _sibling(Opcode.TROWEXPANDSUB, "dst = src0 - src1, one of them the row-broadcast operand", _TROWEXPAND),
    _sibling(Opcode.TROWEXPANDMAX, "dst = max(full operand, row-broadcast operand)", _TROWEXPAND),
    _sibling(Opcode.TROWEXPANDMIN, "dst = min(full operand, row-broadcast operand)", _TROWEXPAND),
    _sibling(Opcode.TPARTMUL, "dst = src0 x src1 over dst's valid region, with partial validity", _TPART),
    _sibling(Opcode.TPARTMAX, "dst = max(src0, src1) over dst's valid region, with partial validity", _TPART),
    _sibling(Opcode.TPARTMIN, "dst = min(src0, src1) over dst's valid region, with partial validity", _TPART),
    _gemv(Opcode.TGEMV, "C = A x B (from +0)"),
    _gemv(Opcode.TGEMV_ACC, "C_out = C_in + A x B", "C_in"),
    _gemv(Opcode.TGEMV_BIAS, "C = bias + A x B", "bias"),
    Instruction(Opcode.TSYNC, "barrier: answers when every instruction before it has finished", (),
                family="sync", golden="tsync", pipe=None, types={p: frozenset() for p in Profile},
                note="no operands (every other field is ignored); answered by the front end, no engine"),
)}

assert set(INSTRUCTIONS) == set(Opcode), "every opcode needs an entry in INSTRUCTIONS"


def instruction(opcode):
    """The table entry of ``opcode`` (an ``Opcode`` or its code); ``KeyError`` for an unknown code."""
    return INSTRUCTIONS[Opcode(opcode)]


def main_slot(opcode):
    """The slot whose tile describes the instruction in summaries: the one it writes, or TSTORE's tile;
    ``None`` for an instruction without operands (TSYNC)."""
    ins = instruction(opcode)
    dest = ins.destination
    return dest.name if dest else (ins.slots[0].name if ins.slots else None)
