"""The LOCAL_GATHER engine's sizes and geometry: the widths its registers take from the ISA's limits
(:class:`Sizes` and the module's constants), the table of what depends on the element size and
``num_elem_per_idx`` alone (:func:`piece_geometry`, also the cycle model's), and the hardware that
registers both from the command (:func:`geometry_registers`)."""

from dataclasses import dataclass
from types import SimpleNamespace

from amaranth import *

from rtl.isa import (DTYPE_BYTES, LOCAL_GATHER_GROUP, LOCAL_GATHER_MAX_INDICES, LOCAL_GATHER_MAX_NEPI_LOG2, Command,
                     Opcode, TileDesc, instruction)
from rtl.lib.contract import require
from rtl.lib.fanout import variant_copies
from rtl.lib.tile import ESZ_BITS, ESZ_MAX, elem_log2

__all__ = ["GROUP", "GROUP_LOG2", "MAX_INDICES", "MAX_NEPI_LOG2", "INDEX_BYTES", "INDEX_BYTES_LOG2", "INDEX_BITS",
           "N_BITS", "GROUPS_BITS", "K_BITS", "K_INDEX_BITS", "QW", "SLOT_BITS", "GEOMETRY_WIDTHS", "Sizes",
           "piece_geometry", "legal_geometry", "geometry_registers"]

GROUP = LOCAL_GATHER_GROUP                  #: rows (partitions) per group; one index list per group
GROUP_LOG2 = GROUP.bit_length() - 1         #: log2 of :data:`GROUP` (a power of two)
MAX_INDICES = LOCAL_GATHER_MAX_INDICES      #: indices per group
MAX_NEPI_LOG2 = LOCAL_GATHER_MAX_NEPI_LOG2  #: num_elem_per_idx <= 32

#: log2 of the largest element size (4 bytes): ``rtl.lib.tile.ESZ_MAX``; ``ESZ_BITS`` its width.
ESZ_LOG2_MAX = ESZ_MAX
#: Bits of the command's ``nepi_log2``.
NEPI_BITS = Command["nepi_log2"].width
#: log2 of the largest chunk, ``B = nepi * size`` <= 32 x 4 = 128 bytes.
B_LOG2_MAX = ESZ_LOG2_MAX + MAX_NEPI_LOG2
#: log2 of the largest piece: a chunk moves as pieces of ``P = min(B, W, 32)`` bytes.
PIECE_LOG2_MAX = 5
#: log2 of the smallest UB word (``Config`` asks ``ub_word_bytes >= 16``): the smallest piece of a chunk
#: longer than a word, so the most pieces per chunk.
WORD_LOG2_MIN = 4
#: log2 of the most pieces per chunk (``B / P`` <= 128 / 16 = 8).
NPC_LOG2_MAX = B_LOG2_MAX - min(PIECE_LOG2_MAX, WORD_LOG2_MIN)

#: The index tile's element type (the instruction table's only index type, UINT16), its size and width.
(INDEX_DTYPE,) = instruction(Opcode.LOCAL_GATHER).index_types
INDEX_BYTES = DTYPE_BYTES[INDEX_DTYPE]
INDEX_BYTES_LOG2 = INDEX_BYTES.bit_length() - 1
INDEX_BITS = 8 * INDEX_BYTES

#: Bits of ``n``, the chunks (indices) of a group: up to :data:`MAX_INDICES`.
N_BITS = MAX_INDICES.bit_length()
#: Bits of a count of groups: the source's valid rows (a descriptor field) over :data:`GROUP`.
GROUPS_BITS = TileDesc["valid_rows"].width - GROUP_LOG2
#: Bits of the chunks of a block (1 .. :data:`GROUP`).
K_BITS = GROUP.bit_length()
#: Bits of a chunk's number in its block, of ``K - 1`` and of a row's number in its group (0 .. GROUP - 1).
K_INDEX_BITS = (GROUP - 1).bit_length()
#: Bits of a byte offset in a row's block (``QW``): it holds the block's length, up to ``GROUP`` chunks
#: of the largest ``B`` (16 x 128 = 2048; the offsets stay below it: one bit spare, as built).
QW = (GROUP << B_LOG2_MAX).bit_length()
#: Bits of the count of slots of a row's block: it holds up to ``GROUP`` chunks of the most pieces
#: (16 x 8 = 128, 16-byte words; the counters hold that count - 1: one bit spare, as built).
SLOT_BITS = (GROUP << NPC_LOG2_MAX).bit_length()

#: Bits one more than the largest value needs, as built (the netlist, whose timing is measured, keeps them).
_SPARE = 1
#: Register widths of the geometry table's fields, each from the field's largest legal value (element
#: sizes up to 4 bytes, ``nepi_log2 <= MAX_NEPI_LOG2``, any word size); ``psize``, ``step``, ``bmask``
#: and ``npc_log2`` have a spare bit.
GEOMETRY_WIDTHS = {
    "b_log2": B_LOG2_MAX.bit_length(),                      # log2 B
    "p_log2": PIECE_LOG2_MAX.bit_length(),                  # log2 P
    "psize": (1 << PIECE_LOG2_MAX).bit_length() + _SPARE,   # P
    "pmode": 1,                                             # pieces go in pairs
    "step": (2 << PIECE_LOG2_MAX).bit_length() + _SPARE,    # bytes per slot: P, or 2 P for a pair
    "bmask": ((1 << B_LOG2_MAX) - 1).bit_length() + _SPARE,  # B - 1
    "blkstep": (GROUP << B_LOG2_MAX).bit_length(),          # a block's bytes in a destination row, 16 B
    "npc_log2": NPC_LOG2_MAX.bit_length() + _SPARE,         # log2 of the pieces per chunk
}


@dataclass(frozen=True)
class Sizes:
    """The engine's sizes for one configuration."""
    W: int          #: bytes per UB word (``ub_word_bytes``)
    sh: int         #: log2 W: bits of a byte offset in a word
    two: bool       #: two read ports (two pieces, or two index reads, per cycle)
    UA: int         #: bits of a byte address modulo the UB (reads wrap at its end)
    WA: int         #: bits of a word address
    IW: int         #: bits of an index kept in the tables: the index modulo the UB (scaled when it is read)
    QW: int         #: bits of a byte offset in a row's block (:data:`QW`)

    @classmethod
    def of(cls, config, ports):
        W = config.ub_word_bytes
        sh = W.bit_length() - 1
        UA = config.ub_bytes.bit_length() - 1
        return cls(W=W, sh=sh, two=ports >= 2, UA=UA, WA=UA - sh, IW=min(UA, INDEX_BITS), QW=QW)


#: Copies of the piece size's log2 (``g_plog2_copies``), each for a group of the lanes' masks.
PLOG2_COPIES = 4


def piece_geometry(esz, nepi_log2, sh, two):
    """What depends on the element size (``esz`` = log2 of it) and ``nepi_log2`` alone, for words of
    ``1 << sh`` bytes and one or ``two`` read ports: ``b_log2`` (log2 of the chunk B), ``p_log2`` and
    ``psize`` (the piece P = min(B, W, 32)), ``pmode`` (two pieces per slot: two ports and ``2 P <= W``),
    ``step`` (bytes per slot), ``bmask`` (B - 1), ``blkstep`` (16 B: a block's bytes in a destination
    row) and ``npc_log2`` (log2 of the pieces per chunk)."""
    b = esz + nepi_log2
    pl = min(b, sh, PIECE_LOG2_MAX)
    pm = int(two and pl < sh)
    return {"b_log2": b, "p_log2": pl, "psize": 1 << pl, "pmode": pm, "step": 1 << (pl + pm),
            "bmask": (1 << b) - 1, "blkstep": GROUP << b, "npc_log2": b - pl}


def legal_geometry(sh, two):
    """:func:`piece_geometry` of every legal element size and ``nepi_log2`` (the checker rejects the rest)."""
    return [piece_geometry(e, n, sh, two) for e in range(ESZ_LOG2_MAX + 1) for n in range(MAX_NEPI_LOG2 + 1)]


def geometry_registers(m, cmd, sz):
    """The geometry, registered from the command while the engine is idle (level 1: the command is valid
    and held in the start cycle, and the engine ignores these registers until then), then derived from
    those registers (level 2: tables of the element size and ``nepi_log2``, one LUT level each). Only
    the next state and the first index read depend on ``start``.

    Returns the namespace of: ``idle`` (driven by the control), the command's ``n_c`` (chunks per
    group), ``groups_c`` and ``empty`` (combinational, for the start cycle), the level-1 registers
    ``g_esz``, ``g_nepi``, ``g_n``, ``g_src_stride``, ``g_dst_stride``, ``g_idx_stride`` and the
    level-2 ones (``g_blog2``, ``g_plog2``, ``g_P``, ``g_pmode``, ``g_step``, ``g_bmask``, ``g_blkstep``,
    ``g_npc_log2``: the fields of :func:`piece_geometry`)."""
    W, sh, two, UA = sz.W, sz.sh, sz.two, sz.UA
    dst, src, idx = cmd.dst, cmd.src0, cmd.src1
    idle = Signal()
    esz_c = elem_log2(m, src.dtype)
    require(len(esz_c) == ESZ_BITS,
            f"elem_log2 gives {len(esz_c)} bits, the geometry table is indexed by ESZ_BITS = {ESZ_BITS}")
    n_c = Signal(N_BITS)
    groups_c = Signal(GROUPS_BITS)
    m.d.comb += [n_c.eq(Mux(cmd.num_valid != 0, cmd.num_valid, idx.valid_cols << GROUP_LOG2)),
                 groups_c.eq(src.valid_rows >> GROUP_LOG2)]
    empty = (groups_c == 0) | ((cmd.num_valid == 0) & (idx.valid_cols == 0))

    def greg(width, name):
        return Signal(width, name=f"g_{name}", reset_less=True)
    g_esz, g_nepi, g_n = greg(ESZ_BITS, "esz"), greg(NEPI_BITS, "nepi_log2"), greg(N_BITS, "n")
    g_src_stride, g_dst_stride, g_idx_stride = (greg(UA, f"{t}_stride") for t in ("src", "dst", "idx"))
    with m.If(idle):
        m.d.sync += [g_esz.eq(esz_c), g_nepi.eq(cmd.nepi_log2), g_n.eq(n_c),
                     g_src_stride.eq(src.cols << esz_c), g_dst_stride.eq(dst.cols << esz_c),
                     g_idx_stride.eq(idx.cols << INDEX_BYTES_LOG2)]
    # level 2: everything that depends on the element size and nepi only, as tables of those 5 bits
    # (one LUT level each), valid GEOMETRY_DELAY cycles after start (a block's first row is begun in its
    # last index cycle, INDEX_MIN_CYCLES - 1 or more after start: LocalGatherEngine checks the margin)
    table = [piece_geometry(i & ((1 << ESZ_BITS) - 1), i >> ESZ_BITS, sh, two)
             for i in range(1 << (ESZ_BITS + NEPI_BITS))]
    legal = legal_geometry(sh, two)
    geo = {}
    for key, width in GEOMETRY_WIDTHS.items():
        need = max(t[key] for t in legal).bit_length()
        require(need <= width, f"geometry field {key}: its largest legal value needs {need} bits, the "
                               f"register has GEOMETRY_WIDTHS[{key!r}] = {width}")
        reg = geo[key] = greg(width, key)
        rom = Array(C(t[key] % (1 << width), width) for t in table)
        m.d.sync += reg.eq(rom[Cat(g_esz, g_nepi)])
        if key == "p_log2":
            # copies of log2 P for the lane masks (every lane reads it: one register for 2 x W masks was a
            # 10.2 ns path of wire on default, seed 2, 5aa51ab); kept apart by their reset variants
            plog2_copies = variant_copies(m, "g_p_log2_c", rom[Cat(g_esz, g_nepi)], PLOG2_COPIES)
    return SimpleNamespace(
        idle=idle, n_c=n_c, groups_c=groups_c, empty=empty,
        g_esz=g_esz, g_nepi=g_nepi, g_n=g_n,
        g_src_stride=g_src_stride, g_dst_stride=g_dst_stride, g_idx_stride=g_idx_stride,
        g_blog2=geo["b_log2"], g_plog2=geo["p_log2"], g_plog2_copies=plog2_copies, g_P=geo["psize"], g_pmode=geo["pmode"],
        g_step=geo["step"], g_bmask=geo["bmask"], g_blkstep=geo["blkstep"], g_npc_log2=geo["npc_log2"])
