"""LOCAL_GATHER (NKI local_gather inside the UB), bit-exact against the golden machine.

Every command runs on the RTL and on the golden machine (``Harness``); after each one the whole UB is
compared (everything outside the destination is a canary: the UB is filled with random bytes first).
Parameters: ``TILEVEC_ROUNDS``.
"""

import os

import cocotb
import numpy as np

from rtl.top import VectorUnit
from rtl.isa import DType, DTYPE_BYTES, gm_region, Layout, Opcode, Status, tile, UB_ALIGN

from .harness import Harness

#: The engines of the unit these tests simulate (``Config.engines``; sim.regress builds it): a
#: unit of only what the tests exercise simulates several times faster.
UNIT_ENGINES = ('transfer', 'local_gather')

GM_IMAGE = 0x0001_0000
NEPI_LOG2 = range(6)


def _env(name, default):
    return os.environ.get(f"TILEVEC_{name}", default)


def _round_up(v):
    return -(-v // UB_ALIGN) * UB_ALIGN


async def _load_ub(h, image):
    """Make ``image`` (bytes of the whole UB) the UB contents through GM + one TLOAD (shadowed)."""
    cols = 256
    rows = h.config.ub_bytes // cols
    h.gm_write(GM_IMAGE, bytes(image))
    rsp = await h.run({"opcode": Opcode.TLOAD, "dst": tile(0, rows, cols, DType.UINT8),
                       "gm": gm_region(GM_IMAGE, rows, cols, DType.UINT8)}, label="ub fill")
    assert rsp["status"] == Status.OK


def _place(rng, ub_bytes, sizes):
    """Non-overlapping 32-byte-aligned bases for tiles of ``sizes`` bytes, in random order and gaps
    (None if they do not fit)."""
    need = sum(_round_up(s) for s in sizes)
    if need > ub_bytes:
        return None
    slack = (ub_bytes - need) // UB_ALIGN
    cuts = sorted(rng.randrange(slack + 1) for _ in sizes)
    bases, pos, prev = [0] * len(sizes), 0, 0
    for which, cut in zip(rng.sample(range(len(sizes)), len(sizes)), cuts):
        pos += (cut - prev) * UB_ALIGN
        prev = cut
        bases[which] = pos
        pos += _round_up(sizes[which])
    return bases


def _gather(rng, ub_bytes, dtype, nepi_log2, *, R=None, n=None, X=None, nv=None, C=None, pad=True,
            undefined=0.0):
    """A legal LOCAL_GATHER (command, index array): random shape within the UB, random index tile.
    ``undefined``: probability of an offset with ``offset + nepi > C``."""
    size, nepi = DTYPE_BYTES[dtype], 1 << nepi_log2
    for _ in range(1000):
        r = R if R is not None else rng.choice([16, 32, 48])
        c = C if C is not None else nepi + rng.choice([0, rng.randrange(4), rng.randrange(40)])
        src_cols = c + (rng.choice([0, 0, 1, 3]) if pad else 0)
        budget = ub_bytes - _round_up(r * src_cols * size) - 2 * UB_ALIGN - r * 2 * 4
        max_n = budget // (r * nepi * size) if r else 4096
        if max_n < 1:
            continue
        nn = n if n is not None else rng.choice([1, rng.randrange(1, min(max_n, 80) + 1), min(max_n, 80)])
        if nn > max_n:
            continue
        x = X if X is not None else -(-nn // 16) + rng.choice([0, 0, 1])
        v = nv if nv is not None else (nn if nn < 16 * x else rng.choice([0, nn]))
        nn = v or 16 * x
        if nn > max_n:
            continue
        dst_cols = nn * nepi + (rng.choice([0, 0, 1, 5]) if pad else 0)
        idx_cols = x + (rng.choice([0, 1]) if pad else 0)
        bases = _place(rng, ub_bytes, [r * dst_cols * size, r * src_cols * size, r * idx_cols * 2])
        if bases is None:
            continue
        hi = max(c - nepi + 1, 1)
        idx = np.array([[rng.randrange(hi) if rng.random() >= undefined else
                         rng.choice([c - nepi + 1, c, 65535 - nepi, 65535, rng.randrange(65536)])
                         for _ in range(idx_cols)] for _ in range(max(r, 1))], np.uint16)
        cmd = {"opcode": Opcode.LOCAL_GATHER, "nepi_log2": nepi_log2, "num_valid": v,
               "dst": tile(bases[0], r, dst_cols, dtype, valid=(r, nn * nepi)),
               "src0": tile(bases[1], r, src_cols, dtype, valid=(r, c)),
               "src1": tile(bases[2], r, idx_cols, DType.UINT16, valid=(r, x))}
        return cmd, idx
    return None         # e.g. 4-byte types with nepi 32 on the 4 KiB UB: src and dst alone fill it


def _image(h, cmd, idx):
    """Random UB bytes with the index tile of ``cmd`` holding ``idx``."""
    img = bytearray(h.rng.randbytes(h.config.ub_bytes))
    t = cmd["src1"]
    for i in range(min(t["rows"], len(idx))):
        a = t["base"] + i * t["cols"] * 2
        img[a:a + 2 * t["cols"]] = idx[i].tobytes()
    return img


async def _gather_and_check(h, cmd, idx, *, label=None, masked=False):
    await _load_ub(h, _image(h, cmd, idx))
    if masked:
        rsp, undefined = await h.run_masked(cmd, label=label)
    else:
        rsp, undefined = await h.run(cmd, label=label), 0
        await h.check_ub()
    assert rsp["status"] == Status.OK, rsp
    return rsp, undefined


@cocotb.parametrize(dtype=[d.name for d in DType])
async def lg_dtype(dut, dtype):
    """One data type: every num_elem_per_idx, 1-3 groups, full and partial num_valid, random indices,
    odd static shapes; whole UB against golden after every command."""
    dtype = DType[dtype]
    h = await Harness.start(dut)
    ub = h.config.ub_bytes
    for nepi_log2 in NEPI_LOG2:
        for _ in range(int(_env("ROUNDS", "2"))):
            case = _gather(h.rng, ub, dtype, nepi_log2)
            if case is None:
                case = _tight(ub, dtype, nepi_log2)
            await _gather_and_check(h, *case)


def _tight(ub_bytes, dtype, nepi_log2):
    """When no separate tiles fit: src (16, nepi) in the first half of the UB, dst (16, nepi) in the
    second, the index tile inside src (sources may overlap) with its first bytes zeroed: offsets 0."""
    size, nepi = DTYPE_BYTES[dtype], 1 << nepi_log2
    assert 2 * 16 * nepi * size <= ub_bytes
    cmd = {"opcode": Opcode.LOCAL_GATHER, "nepi_log2": nepi_log2, "num_valid": 1,
           "src0": tile(0, 16, nepi, dtype), "dst": tile(ub_bytes // 2, 16, nepi, dtype),
           "src1": tile(0, 16, 1, DType.UINT16)}
    return cmd, np.zeros((16, 1), np.uint16)


@cocotb.test()
async def lg_shapes(dut):
    """Group counts 16/32/48 with 1 and 2 index columns, num_valid 1, partial and 0 (= 16 X), dense and
    padded static shapes, word-aligned and unaligned destination rows; empty cases (no rows, n = 0)."""
    h = await Harness.start(dut)
    ub = h.config.ub_bytes
    rng = h.rng
    cases = [
        dict(dtype=DType.INT8, nepi_log2=0, R=48, X=2, nv=0, pad=False),
        dict(dtype=DType.INT8, nepi_log2=0, R=48, X=2, nv=1),
        dict(dtype=DType.FP16, nepi_log2=1, R=32, X=2, nv=19),
        dict(dtype=DType.FP16, nepi_log2=3, R=16, X=1, nv=6, pad=False),
        dict(dtype=DType.FP32, nepi_log2=2, R=32, X=1, nv=5),
        dict(dtype=DType.FP32, nepi_log2=2, R=16, X=1, nv=5, pad=False),
        dict(dtype=DType.INT8, nepi_log2=1, R=16, X=1, nv=0, pad=False),
        dict(dtype=DType.UINT8, nepi_log2=4, R=32, X=1, nv=3, pad=False),
        dict(dtype=DType.BF16, nepi_log2=5, R=16, X=1, nv=1),
        dict(dtype=DType.INT32, nepi_log2=0, R=48, X=1, nv=7),
        dict(dtype=DType.FP8E5M2, nepi_log2=5, R=16, X=1, nv=3, C=40),
    ]
    for c in cases:
        dtype, nepi_log2 = c.pop("dtype"), c.pop("nepi_log2")
        await _gather_and_check(h, *_gather(rng, ub, dtype, nepi_log2, **c))
    # empty: no rows (R = 0), and no indices (X = 0, num_valid = 0): nothing written, status OK
    for cmd in (_gather(rng, ub, DType.FP32, 1, R=0, n=4, X=1, nv=0)[0],
                _gather(rng, ub, DType.INT16, 2, R=16, X=0, nv=0)[0]):
        rsp = await h.run(cmd)
        # done at start; answered when the checker decides (as a rejection would be)
        assert rsp["status"] == Status.OK and rsp["cycles"] <= VectorUnit.REJECT_CYCLES, rsp
    await h.check_ub()


@cocotb.test()
async def lg_seed_example(dut):
    """The NKI example's shape logic: a 16 x X per-group index tile (partition offsets scaled by
    num_elem_per_idx = 4) replicated over the groups, float32, explicit num_valid_indices. The seed's
    src (128, 512), index (128, 4), num_valid 64 does not fit a simulated UB; scaled: small config
    src (32, 8), index (32, 1), num_valid 3; default config src (128, 32), index (128, 4), num_valid 20."""
    h = await Harness.start(dut)
    nepi = 4
    if h.config.ub_bytes >= 64 * 1024:
        R, C, X, nv = 128, 32, 4, 20
    else:
        R, C, X, nv = 32, 8, 1, 3
    rng = np.random.default_rng(h.rng.randrange(1 << 30))
    index_per_core = rng.integers(0, C // nepi, size=(16, X), dtype=np.uint16)
    index = np.tile(index_per_core, (R // 16, 1))
    index_hw = (index * nepi).astype(np.uint16)           # element offsets, as the UB tile holds them
    src_bytes, dst_bytes = R * C * 4, R * nv * nepi * 4
    cmd = {"opcode": Opcode.LOCAL_GATHER, "nepi_log2": 2, "num_valid": nv,
           "src0": tile(0, R, C, DType.FP32),
           "dst": tile(_round_up(src_bytes), R, nv * nepi, DType.FP32),
           "src1": tile(_round_up(src_bytes) + _round_up(dst_bytes), R, X, DType.UINT16)}
    src = rng.random((R, C), dtype=np.float32)
    img = _image(h, cmd, index_hw)
    img[:src_bytes] = src.tobytes()
    await _load_ub(h, img)
    rsp = await h.run(cmd, label=f"seed {R}x{C} fp32 nepi 4 n {nv}")
    assert rsp["status"] == Status.OK
    await h.check_ub()
    # the seed's numpy reference, independently of the golden model
    out = np.frombuffer(bytes(h.golden.ub[cmd["dst"]["base"]:cmd["dst"]["base"] + dst_bytes]), np.float32)
    want = np.empty((R, nv, nepi), np.float32)
    src3 = src.reshape(R, C // nepi, nepi)
    for g in range(R // 16):
        indices_1d = index[16 * g:16 * (g + 1)].flatten(order="F")[:nv]
        want[16 * g:16 * (g + 1)] = np.take(src3[16 * g:16 * (g + 1)], indices_1d, axis=1)
    assert (out.view(np.uint32) == want.reshape(-1).view(np.uint32)).all(), "seed reference differs"


@cocotb.test()
async def lg_undefined(dut):
    """Offsets with offset + nepi > C (up to 65535, reads wrap around the UB): no hang, status OK, every
    defined byte exact and nothing outside the destination's valid region changed; then a legal command."""
    h = await Harness.start(dut)
    ub, rng = h.config.ub_bytes, h.rng
    total = 0
    for dtype, nepi_log2 in ((DType.FP32, 2), (DType.INT8, 0), (DType.FP16, 4), (DType.UINT8, 5),
                             (DType.INT32, 3), (DType.BF16, 1)):
        cmd, idx = _gather(rng, ub, dtype, nepi_log2, undefined=0.4)
        _, undefined = await _gather_and_check(h, cmd, idx, masked=True)
        total += undefined
    assert total > 0, "no undefined offsets were exercised"
    await _gather_and_check(h, *_gather(rng, ub, DType.FP32, 2))


def _straddle_case(rng, config, dtype, nepi_log2, where):
    """A 16-row LOCAL_GATHER whose chunks mostly straddle two source words (command, index array,
    straddling (row, chunk) count). Source rows of 4 words (word-aligned, so the same offset straddles
    in every row, except ``where == "middle"``: one padding element shifts each row). ``where``:
    ``"first"``: src at UB word 0, a chunk straddles words 0 and 1; ``"last"``: src ends at the end of
    the UB, a chunk straddles its last two words and one ends on the last byte; ``"middle"``. The
    destination rows are word-aligned, or not (padding), at random."""
    W, ub = config.ub_word_bytes, config.ub_bytes
    size, nepi = DTYPE_BYTES[dtype], 1 << nepi_log2
    B, R = nepi * size, 16
    C = 4 * W // size
    src_cols = C + (1 if where == "middle" else 0)
    n = min(20, ub // 2 // (R * B))
    X = -(-n // 16)
    nv = n if n < 16 * X else 0
    dst_cols = n * nepi + rng.choice([0, 1, 3])
    src_bytes, dst_bytes, idx_bytes = R * src_cols * size, R * dst_cols * size, R * X * 2
    if where == "first":
        src = 0
        dst = _round_up(src_bytes)
        idx_base = dst + _round_up(dst_bytes)
    else:
        dst = 0
        idx_base = _round_up(dst_bytes)
        src = ub - _round_up(src_bytes) if where == "last" else idx_base + _round_up(idx_bytes) + 2 * UB_ALIGN
    assert src % UB_ALIGN == 0 and src + src_bytes <= ub
    assert idx_base + idx_bytes <= (ub if where == "first" else src)
    straddling = [o for o in range(C - nepi + 1) if (o * size) % W + B > W]
    idx = np.array([[rng.choice(straddling) if rng.random() < 0.85 else rng.randrange(C - nepi + 1)
                     for _ in range(X)] for _ in range(R)], np.uint16)
    # indices_1d[0] (row 0 of the index tile) straddles a row's first word boundary (for "first": UB
    # words 0 and 1), indices_1d[1] its last one (for "last": the UB's last two words), indices_1d[2]
    # ends on the row's last byte (for "last": the UB's last byte, whose read window wraps to word 0)
    idx[0, 0] = (W - B // 2) // size
    idx[1, 0] = (3 * W - B // 2) // size
    idx[2, 0] = C - nepi
    indices_1d = idx.flatten(order="F")[:nv or 16 * X]
    count = sum((src + p * src_cols * size + int(o) * size) % W + B > W for p in range(R) for o in indices_1d)
    cmd = {"opcode": Opcode.LOCAL_GATHER, "nepi_log2": nepi_log2, "num_valid": nv,
           "dst": tile(dst, R, dst_cols, dtype, valid=(R, n * nepi)),
           "src0": tile(src, R, src_cols, dtype, valid=(R, C)),
           "src1": tile(idx_base, R, X, DType.UINT16, valid=(R, X))}
    return cmd, idx, count


@cocotb.test()
async def lg_straddle(dut):
    """16- and 8-byte chunks (fp32, fp16, int8) at offsets that straddle two source words, so that two
    straddling chunks go in one cycle (one read port's 2-word window each, where 2 x chunk <= word):
    source at the first UB words, at the last ones, and with rows that shift against the words;
    word-aligned and unaligned destination rows; whole UB against golden after each."""
    h = await Harness.start(dut)
    W = h.config.ub_word_bytes
    for B in (16, 8):
        for dtype in (DType.FP32, DType.FP16, DType.INT8):
            nepi_log2 = (B // DTYPE_BYTES[dtype]).bit_length() - 1
            for where in ("first", "last", "middle"):
                cmd, idx, count = _straddle_case(h.rng, h.config, dtype, nepi_log2, where)
                rows, n = 16, cmd["dst"]["valid_cols"] >> nepi_log2
                assert count >= (1 if where == "middle" else rows * n // 2), \
                    f"only {count} of {rows * n} chunks straddle"
                await _gather_and_check(h, cmd, idx, label=f"straddle {B} B {dtype.name} {where} "
                                                          f"(W {W}, {count}/{rows * n} straddle)")


# ---- one test per constraint status ---------------------------------------------------------------

def _legal():
    """R = 16, X = 1 (n = 16), nepi 2, fp16: src (16, 8) at 0, dst (16, 32) at 0x200, index at 0x700."""
    return {"opcode": Opcode.LOCAL_GATHER, "nepi_log2": 1, "num_valid": 0,
            "src0": tile(0x000, 16, 8, DType.FP16), "dst": tile(0x200, 16, 32, DType.FP16),
            "src1": tile(0x700, 16, 1, DType.UINT16)}


def _empty_rows(cmd, dst_cols, idx_cols, dtype=DType.INT8):
    """Valid and static rows 0 everywhere: huge widths fit the UB (the extent is rows x cols)."""
    cmd["dst"] = tile(0x200, 0, dst_cols, dtype)
    cmd["src0"] = tile(0x000, 0, 8, dtype)
    cmd["src1"] = tile(0x700, 0, idx_cols, DType.UINT16)
    return cmd


def _violations(name, ub_bytes):
    """Commands that each break exactly one LOCAL_GATHER constraint (several variants per status)."""
    def v(**edits):
        cmd = _legal()
        for key, value in edits.items():
            if "__" in key:
                slot, field = key.split("__")
                cmd[slot][field] = value
            else:
                cmd[key] = value
        return cmd
    return {
        "DTYPE_INVALID": [v(dst__dtype=13), v(src0__dtype=11), v(src1__dtype=15)],
        "DTYPE_MISMATCH": [v(dst__dtype=DType.BF16), v(src0__dtype=DType.INT16)],
        "INDEX_DTYPE": [v(src1__dtype=DType.INT16), v(src1__dtype=DType.UINT32), v(src1__dtype=DType.FP16)],
        "UB_MISALIGNED": [v(src0__base=16), v(dst__base=0x210), v(src1__base=0x702)],
        "UB_OUT_OF_RANGE": [v(dst__base=ub_bytes - 32), v(src1__base=(1 << 24) - 32)],
        "VALID_EXCEEDS_STATIC": [v(src0__valid_cols=9), v(src1__valid_cols=2)],
        "LAYOUT_UNSUPPORTED": [v(dst__layout=Layout.COL_MAJOR), v(src0__layout=Layout.COL_MAJOR),
                               v(src1__layout=Layout.COL_MAJOR)],
        "SHAPE_MISMATCH": [v(src1__valid_rows=15), v(dst__valid_rows=15), v(dst__valid_cols=30),
                           v(num_valid=15), v(nepi_log2=2)],
        "PARAM_INVALID": [_empty_rows(v(nepi_log2=6), 16 * 64, 1), _empty_rows(v(nepi_log2=7), 16 * 128, 1),
                          _empty_rows(v(nepi_log2=0, num_valid=4097), 4097, 300),
                          v(num_valid=17, dst__cols=34, dst__valid_cols=34, dst__base=0x200)],
        "DIM_OUT_OF_RANGE": [v(src0__valid_rows=15, dst__valid_rows=15, src1__valid_rows=15),
                             _empty_rows(v(nepi_log2=0), 16 * 257, 257)],
    }[name]


async def _error_then_recover(dut, name):
    h = await Harness.start(dut)
    ub, rng = h.config.ub_bytes, h.rng
    # dst (16, 34) fp16 for the num_valid = 17 variant stays clear of the index tile at 0x700
    for cmd in _violations(name, ub):
        legal, idx = _gather(rng, ub, DType.FP16, rng.randrange(6))
        await _load_ub(h, _image(h, cmd, np.arange(32, dtype=np.uint16).reshape(32, 1)))
        rsp = await h.run(cmd)              # asserts RTL status == golden status
        assert rsp["status"] == Status[name], f"expected {name}, got {rsp['status']} for {cmd}"
        assert rsp["cycles"] == VectorUnit.REJECT_CYCLES, rsp   # answered as soon as the checker decides
        await h.check_ub()                  # nothing touched
        await _gather_and_check(h, legal, idx)


#: The statuses ``lg_error`` answers, one test each (``lg_error/status=DTYPE_INVALID``, run and labelled
#: ``lg_error_dtype_invalid`` by ``sim.regress``).
STATUSES = [Status.DTYPE_INVALID, Status.DTYPE_MISMATCH, Status.INDEX_DTYPE, Status.UB_MISALIGNED,
            Status.UB_OUT_OF_RANGE, Status.VALID_EXCEEDS_STATIC, Status.LAYOUT_UNSUPPORTED,
            Status.SHAPE_MISMATCH, Status.PARAM_INVALID, Status.DIM_OUT_OF_RANGE]


@cocotb.test()
@cocotb.parametrize(status=STATUSES)
async def lg_error(dut, status):
    """One LOCAL_GATHER constraint status: answered, nothing touched, the next LOCAL_GATHER exact."""
    await _error_then_recover(dut, status.name)


@cocotb.test()
async def lg_status_sweep(dut):
    """Random mutations of legal LOCAL_GATHER fields: the RTL's status equals golden.check's every time;
    legal ones (possibly with undefined results) compared byte for byte outside the undefined bytes."""
    from golden.check import check
    h = await Harness.start(dut)
    ub, rng = h.config.ub_bytes, h.rng
    cmd, idx = _gather(rng, ub, DType.FP16, 2)
    await _load_ub(h, _image(h, cmd, idx))
    for _ in range(int(_env("ROUNDS", "120"))):
        case = None
        while case is None:
            case = _gather(rng, ub, rng.choice(list(DType)), rng.randrange(6))
        cmd = case[0]
        for _ in range(rng.choice([0, 1, 1, 2])):
            slot = rng.choice(["dst", "src0", "src1"])
            field = rng.choice(["dtype", "layout", "base", "rows", "cols", "valid_rows", "valid_cols",
                                "nepi_log2", "num_valid"])
            t = cmd[slot]
            if field == "dtype":
                t["dtype"] = rng.choice([*DType, 11, 15])
            elif field == "layout":
                t["layout"] = Layout.COL_MAJOR
            elif field == "base":
                t["base"] = rng.choice([t["base"] + 8, ub - 32, 1 << 20])
            elif field == "nepi_log2":
                cmd["nepi_log2"] = rng.randrange(8)
            elif field == "num_valid":
                cmd["num_valid"] = rng.choice([1, 4096, 4097, 16 * cmd["src1"]["valid_cols"] + 1])
            else:
                t[field] = rng.choice([0, 15, 16, 17, t[field] + 1, max(t[field] - 1, 0)])
        if check(cmd, h.config, h.golden.supported) == Status.OK:
            await h.run_masked(cmd)
        else:
            await h.run(cmd)
    await h.check_ub()
