"""Random legal commands of the elementwise family (TROWEXPAND*, TPART*), shared by the block tests and the
cocotb regression: every type, both TROWEXPAND modes and operand placements, every TPART validity pattern
and layout combination, odd static shapes and pitches, in-place destinations."""


from golden.check import check
from rtl.isa import DTYPE_BYTES, EXPAND_BLOCK_BYTES, INSTRUCTIONS, Layout, Status, UB_ALIGN

__all__ = ["EW_OPS", "ROWEXPAND_OPS", "PART_OPS", "tile", "place", "rowexpand_command", "part_command",
           "random_command"]

EW_OPS = tuple(op for op, ins in INSTRUCTIONS.items() if ins.family == "elementwise")
ROWEXPAND_OPS = tuple(op for op in EW_OPS if op.name.startswith("TROWEXPAND"))
PART_OPS = tuple(op for op in EW_OPS if op.name.startswith("TPART"))
ROW, COL = Layout.ROW_MAJOR, Layout.COL_MAJOR


def tile(rows, cols, dtype, valid, layout=ROW, base=0):
    return {"base": base, "rows": rows, "cols": cols, "valid_rows": valid[0], "valid_cols": valid[1],
            "dtype": dtype, "layout": layout}


def _extent(t):
    return t["rows"] * t["cols"] * DTYPE_BYTES[t["dtype"]]


def place(rng, tiles, ub_bytes, shared=()):
    """Give the tiles of ``tiles`` (a dict slot -> tile) disjoint, aligned, random bases in the UB; a pair
    (a, b) in ``shared`` makes tile ``b`` the identical tile as ``a``. Returns False if they do not fit."""
    own = [s for s in tiles if s not in {b for _, b in shared}]
    sizes = [-(-_extent(tiles[s]) // UB_ALIGN) * UB_ALIGN for s in own]
    slack = ub_bytes - sum(sizes)
    if slack < 0:
        return False
    cuts = sorted(rng.randrange(slack // UB_ALIGN + 1) for _ in own)
    order = rng.sample(range(len(own)), len(own))
    pos, prev = 0, 0
    for which, cut in zip(order, cuts):
        pos += (cut - prev) * UB_ALIGN
        prev = cut
        tiles[own[which]]["base"] = pos
        pos += sizes[which]
    for a, b in shared:
        tiles[b] = dict(tiles[a])
    return True


def _shape(rng, small):
    R = rng.choice([1, 2, 3, 5, 8, 16]) if small else rng.randrange(1, 40)
    C = rng.choice([1, 2, 3, 7, 8, 16, 17]) if small else rng.randrange(1, 70)
    return R, C


def rowexpand_command(rng, config, op, dtype, *, mode, expanded, R, C, pad=True, in_place=False):
    """TROWEXPAND* ``op``: dst (R, C) row-major; the full operand row-major; the expanded operand
    (``expanded`` = 0 for src0, 1 for src1) column-major (R, 1) in mode 1 or row-major (R, 32 / size) in
    mode 2. ``pad``: random extra static rows / cols (odd pitches, rows not a multiple of the word)."""
    size = DTYPE_BYTES[dtype]
    extra = (lambda: rng.choice([0, 0, 1, 3, 5])) if pad else (lambda: 0)
    block = EXPAND_BLOCK_BYTES // size
    if expanded == 0 and C == (1 if mode == 1 else block):
        C += 1          # both sources would have dst's shape: src1 would be the expanded one
    d = tile(R + extra(), C + extra(), dtype, (R, C))
    f = tile(R + extra(), C + extra(), dtype, (R, C))
    if mode == 1:
        e = tile(R + extra(), 1 + extra(), dtype, (R, 1), COL)
    else:
        e = tile(R + extra(), block + extra(), dtype, (R, block), ROW)
    slots = {"dst": d, "src0": e if expanded == 0 else f, "src1": f if expanded == 0 else e}
    shared = [("dst", f"src{1 - expanded}")] if in_place else []
    if in_place:
        slots[f"src{1 - expanded}"] = d
    if not place(rng, slots, config.ub_bytes, shared):
        return None
    return {"opcode": op, **slots}


def part_command(rng, config, op, dtype, *, R, C, partial, full_slot, layouts, in_place=None):
    """TPART* ``op``: dst (R, C); the source in ``full_slot`` (0 or 1) has dst's valid shape, the other the
    valid shape ``partial`` (<= (R, C)); ``layouts`` = (dst, src0, src1)."""
    extra = lambda: rng.choice([0, 0, 1, 2, 5])
    d = tile(R + extra(), C + extra(), dtype, (R, C), layouts[0])
    full = tile(R + extra(), C + extra(), dtype, (R, C), layouts[1 + full_slot])
    pr, pc = partial
    part = tile(max(pr, 1) + extra(), max(pc, 1) + extra(), dtype, partial, layouts[2 - full_slot])
    slots = {"dst": d, f"src{full_slot}": full, f"src{1 - full_slot}": part}
    shared = []
    if in_place is not None:       # dst identical to src<in_place> (needs the same static shape and layout)
        shared = [("dst", f"src{in_place}")]
        slots[f"src{in_place}"] = d
    if not place(rng, slots, config.ub_bytes, shared):
        return None
    return {"opcode": op, **slots}


def random_command(rng, config, *, ops=EW_OPS, small=False):
    """A random legal command of ``ops`` (in the configuration's profile), or None when it does not fit."""
    op = rng.choice(ops)
    dtype = rng.choice(sorted(INSTRUCTIONS[op].types[config.profile], key=lambda d: d.value))
    R, C = _shape(rng, small)
    if op in ROWEXPAND_OPS:
        mode, expanded = rng.choice([1, 2]), rng.choice([0, 1])
        cmd = rowexpand_command(rng, config, op, dtype, mode=mode, expanded=expanded, R=R, C=C,
                                in_place=rng.random() < 0.2)
    else:
        kind = rng.choice(["full", "rows", "cols", "both", "empty"])
        pr = {"full": R, "rows": rng.randrange(R + 1), "cols": R, "both": rng.randrange(R + 1), "empty": 0}[kind]
        pc = {"full": C, "rows": C, "cols": rng.randrange(C + 1), "both": rng.randrange(C + 1),
              "empty": rng.randrange(C + 1)}[kind]
        lay = (rng.choice([ROW, COL]),) * 3 if rng.random() < 0.6 else tuple(rng.choice([ROW, COL]) for _ in range(3))
        if config.profile.value == "a2a3":
            lay = (ROW,) * 3
        full_slot = rng.choice([0, 1])
        in_place = None
        if rng.random() < 0.2 and lay[0] == lay[1 + full_slot]:
            in_place = full_slot
        cmd = part_command(rng, config, op, dtype, R=R, C=C, partial=(pr, pc), full_slot=full_slot, layouts=lay,
                           in_place=in_place)
    if cmd is None or check(cmd, config) != Status.OK:
        return None
    return cmd
