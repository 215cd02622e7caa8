"""Commands of the GEMV family (TGEMV, TGEMV_ACC, TGEMV_BIAS) and their operand data, shared by the cocotb
regression (``test_gemv``), the benchmark (``bench_gemv``) and the generator's own checks
(``tests/test_cocotb_gemv.py``).

* Commands: every (C, A, B) triple of the profile, any K x N, static shapes larger than the valid ones
  (extra A/C rows, extra columns: B rows whose byte pitch is no multiple of the UB word), random disjoint
  placements (``ew_commands.place``), C_in / bias identical to C (in place).
* Data: operand bit patterns per type: normal values in a narrow exponent band (so that sums round and
  cancel), special values at a chosen rate, and *scenarios* that steer every column of a command into one
  numerical corner (all products -0, inf - inf, NaN payloads, overflow, subnormal operands and products,
  rounding ties of the fp32 accumulation, exact cancellation, integer wrap-around).
* Illegal commands: :func:`error_cases`, one or more per status GEMV can answer, each changing one
  constraint of a legal command (the golden's ``check`` decides the status; the tests check that it is
  the intended one).
"""

import functools

import numpy as np

from golden.numerics import CANONICAL_NAN, FLOAT_TYPES, UINT_OF_SIZE
from golden.profiles import GEMV_TRIPLES
from rtl.isa import DType, DTYPE_BYTES, GEMV_MAX_DIM, INSTRUCTIONS, Layout, Opcode, Status, UB_ALIGN
from golden.numerics import DTYPE_NUMPY

from .ew_commands import place, tile

__all__ = ["GEMV_OPS", "INIT", "lanes", "triples", "triple_name", "gemv_command", "random_pads", "footprint",
           "fits", "largest", "specials", "values", "SCENARIOS", "scenario", "fill", "error_cases"]

#: TGEMV, TGEMV_ACC, TGEMV_BIAS.
GEMV_OPS = tuple(op for op, ins in INSTRUCTIONS.items() if ins.type_rule == "gemv")
#: The slot of C_in (TGEMV_ACC) and bias (TGEMV_BIAS).
INIT = "src2"
ROW, COL = Layout.ROW_MAJOR, Layout.COL_MAJOR


def lanes(config, b_dtype):
    """Products per cycle of the GEMV engine for B of type ``b_dtype`` (``rtl.engines.gemv.engine.GemvEngine.lanes``)."""
    from rtl.engines.gemv.engine import GemvEngine
    return GemvEngine.lanes(config, b_dtype)


def triples(profile):
    """The (C, A, B) triples of ``profile``, in a fixed order."""
    return sorted(GEMV_TRIPLES[profile], key=lambda t: tuple(d.value for d in t))


def triple_name(triple):
    """``FP32/FP16/FP16``."""
    return "/".join(d.name for d in triple)


# ------------------------------------------------------------------------------------------------ commands

def gemv_command(rng, config, op, triple, K, N, *, pad_k=0, pad_n=0, pad_rows=0, in_place=False, region=None):
    """``op`` on ``triple`` = (C, A, B) types: C (1 + pad_rows, N + pad_n) with valid (1, N); A
    (1 + pad_rows, K + pad_k) valid (1, K); B (K + pad_k, N + pad_n) valid (K, N); C_in / bias (slot
    ``src2``) C's shape, or the C tile itself with ``in_place``. Random disjoint aligned bases in the UB
    or in ``region`` = (first byte, bytes) of it; None when the tiles do not fit."""
    c_t, a_t, b_t = triple
    rows, ks, ns = 1 + pad_rows, K + pad_k, N + pad_n
    slots = {"dst": tile(rows, ns, c_t, (1, N)), "src0": tile(rows, ks, a_t, (1, K)),
             "src1": tile(ks, ns, b_t, (K, N))}
    shared = []
    if op != Opcode.TGEMV:
        slots[INIT] = tile(rows, ns, c_t, (1, N))
        if in_place:
            shared = [("dst", INIT)]
    elif in_place:
        raise ValueError("TGEMV has no C_in / bias tile to share with C")
    start, size = region or (0, config.ub_bytes)
    if not place(rng, slots, size, shared):
        return None
    for t in slots.values():
        t["base"] += start
    return {"opcode": op, **slots}


def random_pads(rng):
    """Random extra static extents: ``pad_k`` (A cols = B rows), ``pad_n`` (B cols = C cols; B's byte pitch
    then is rarely a multiple of the word), ``pad_rows`` (static rows of C, A, C_in beyond the valid 1)."""
    return {"pad_k": rng.choice([0, 0, 1, 2, 5]), "pad_n": rng.choice([0, 0, 1, 3, 7]),
            "pad_rows": rng.choice([0, 0, 0, 1, 2])}


def footprint(op, triple, K, N, *, pad_k=0, pad_n=0, pad_rows=0, in_place=False):
    """UB bytes the tiles of :func:`gemv_command` take side by side (each rounded up to ``UB_ALIGN``)."""
    c, a, b = (DTYPE_BYTES[d] for d in triple)
    up = lambda n: -(-n // UB_ALIGN) * UB_ALIGN
    rows, ks, ns = 1 + pad_rows, K + pad_k, N + pad_n
    inits = 0 if op == Opcode.TGEMV or in_place else 1
    return up(rows * ks * a) + up(ks * ns * b) + up(rows * ns * c) * (1 + inits)


def fits(config, op, triple, K, N):
    """Whether unpadded tiles of ``op`` (C_in / bias not in place) fit the UB side by side."""
    return footprint(op, triple, K, N) <= config.ub_bytes


def largest(config, op, triple, *, K=None, N=None):
    """The largest N (given K) or K (given N), at most ``GEMV_MAX_DIM``, whose unpadded tiles fit the UB
    (0 if none)."""
    lo, hi = 0, GEMV_MAX_DIM
    while lo < hi:
        mid = (lo + hi + 1) // 2
        ok = fits(config, op, triple, mid, N) if K is None else fits(config, op, triple, K, mid)
        lo, hi = (mid, hi) if ok else (lo, mid - 1)
    return lo


# ------------------------------------------------------------------------------------------------ data

@functools.lru_cache(maxsize=None)
def _format(dtype):
    """(exponent bits, mantissa bits, bias, has infinities) of a float type."""
    import ml_dtypes
    fi = ml_dtypes.finfo(DTYPE_NUMPY[dtype])
    return fi.nexp, fi.nmant, fi.maxexp - 1, dtype != DType.FP8E4M3


def _float(dtype, sign, exp, mant):
    """Bits of a float from its fields (``exp`` the biased exponent field)."""
    ne, nm, _, _ = _format(dtype)
    return (sign << (ne + nm)) | (exp << nm) | mant


def _max_exp_field(dtype):
    """The largest exponent field of a finite number (e4m3fn uses the all-ones exponent too)."""
    ne, nm, _, inf = _format(dtype)
    return (1 << ne) - (2 if inf else 1)


def _max_finite(dtype, sign=0):
    ne, nm, _, inf = _format(dtype)
    return _float(dtype, sign, _max_exp_field(dtype), (1 << nm) - 1 - (0 if inf else 1))


def _pow2(dtype, e, sign=0, mant=0):
    """``(-1)^sign * (1 + mant / 2^nm) * 2^e`` (or the subnormal ``2^e`` when e is below the normal range;
    ``mant`` ignored then). None when not representable."""
    ne, nm, bias, _ = _format(dtype)
    field = e + bias
    if 1 <= field <= _max_exp_field(dtype):
        bits = _float(dtype, sign, field, mant & ((1 << nm) - 1))
        return None if bits & ~(1 << (ne + nm)) > _max_finite(dtype) else bits
    if 1 - bias - nm <= e < 1 - bias:           # subnormal power of two
        return _float(dtype, sign, 0, 1 << (e - (1 - bias - nm)))
    return None


def _exp_range(dtype):
    """(smallest subnormal exponent, largest normal exponent) of a float type."""
    _, nm, bias, _ = _format(dtype)
    return 1 - bias - nm, _max_exp_field(dtype) - bias


def specials(dtype):
    """Special bit patterns of a float type: signed zeros, infinities, NaNs (canonical, with payloads, both
    signs, signalling), the smallest and largest subnormals, the smallest normal, the largest finite, 1."""
    ne, nm, bias, inf = _format(dtype)
    top = (1 << ne) - 1
    out = [_float(dtype, 0, 0, 0), _float(dtype, 1, 0, 0), CANONICAL_NAN[dtype], _float(dtype, 0, 0, 1),
           _float(dtype, 1, 0, 1), _float(dtype, 0, 0, (1 << nm) - 1), _float(dtype, 1, 0, (1 << nm) - 1),
           _float(dtype, 0, 1, 0), _float(dtype, 1, 1, 0), _max_finite(dtype), _max_finite(dtype, 1),
           _float(dtype, 0, bias, 0)]
    if inf:
        out += [_float(dtype, 0, top, 0), _float(dtype, 1, top, 0), _float(dtype, 1, top, 1),
                _float(dtype, 0, top, (1 << nm) - 1), _float(dtype, 1, top, 1 << (nm - 1)),
                _float(dtype, 0, top, 1)]      # the last two: a negative quiet NaN, a signalling NaN
    else:
        out += [_float(dtype, 1, top, (1 << nm) - 1)]          # e4m3fn's negative NaN
    return out


def values(rng, dtype, n, *, specials_rate=0.0, band=(-6, 6)):
    """``n`` bit patterns (numpy unsigned) of ``dtype``. Integers: uniform over the type's range. Floats:
    normal numbers with an exponent in ``band`` (clipped to the type) and a random mantissa, each replaced
    by a random :func:`specials` member with probability ``specials_rate``."""
    size = DTYPE_BYTES[dtype]
    if dtype not in FLOAT_TYPES:
        return np.array([rng.randrange(1 << (8 * size)) for _ in range(n)], UINT_OF_SIZE[size])
    _, nm, bias, _ = _format(dtype)
    lo, hi = max(band[0], 1 - bias), min(band[1], _max_exp_field(dtype) - bias)
    pool = specials(dtype)
    out = []
    for _ in range(n):
        if rng.random() < specials_rate:
            out.append(rng.choice(pool))
        else:
            e = rng.randint(lo, hi)
            bits = _pow2(dtype, e, rng.randrange(2), rng.randrange(1 << nm))
            out.append(bits if bits is not None else _pow2(dtype, e, rng.randrange(2)))
    return np.array(out, UINT_OF_SIZE[size])


def _sign(dtype, bits):
    return (np.asarray(bits).astype(np.uint64) >> (8 * DTYPE_BYTES[dtype] - 1)) & 1


#: Numerical corners a command's columns can be steered into (:func:`scenario`).
SCENARIOS = ("random", "specials", "neg_zero", "inf_cancel", "nan", "overflow", "subnormal", "ties", "cancel",
             "int_extremes")


def scenario(rng, name, triple, K, N):
    """Operand bits for one numerical corner: ``(a, b, init)`` with ``a`` (K,), ``b`` (K, N), ``init`` (N,)
    (C_in / bias; ignored by TGEMV). None when the corner does not exist for the triple.

    * ``random``: normal values in a narrow band (sums round, partly cancel), 2% specials.
    * ``specials``: 30% special values in A, B and init; an infinity in A at least (when its type has one).
    * ``neg_zero``: every product is -0 (B's zero takes the opposite sign of A, A finite); init -0, +0 or
      random per column: TGEMV gives +0, C_in = -0 gives -0. At least one zero in A.
    * ``inf_cancel``: +inf and -inf products in every column (B's infinities, or A's: when B has none, and
      half of the time when both have them).
    * ``nan``: NaNs with payloads and both signs, quiet and signalling, in A, B and init.
    * ``overflow``: operands near the largest finite value (products of bf16 / fp32 overflow fp32; sums of
      large fp32 products overflow).
    * ``subnormal``: subnormal and smallest-normal operands (bf16 / fp32 products below fp32's range).
    * ``ties``: products 2^E and 2^(E-24) (the half ulp of 2^E in fp32) with random signs, so that the
      partial sums and the tree meet exact rounding ties, and near-ties (2^(E-23), 2^(E-25), 3 * 2^(E-25)).
    * ``cancel``: A in equal pairs and B's pairs opposite: the products cancel exactly pairwise (to +0).
    * ``int_extremes``: int8 -128 / 127 / -1 / 0 / 1 and int32 init near the wrap-around.
    """
    c_t, a_t, b_t = triple
    is_int = c_t == DType.INT32
    init = values(rng, c_t, N, specials_rate=0.05)
    if name == "int_extremes":
        if not is_int:
            return None
        pick = lambda *shape: np.array([rng.choice([0x80, 0x7F, 0xFF, 0, 1]) for _ in range(int(np.prod(shape)))],
                                       np.uint8).reshape(shape)
        init = np.array([rng.choice([0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0, 0x7FFFFF00, 0x80000100])
                         for _ in range(N)], np.uint32)
        return pick(K), pick(K, N), init
    if name == "random":
        return values(rng, a_t, K, specials_rate=0.02), values(rng, b_t, K * N, specials_rate=0.02).reshape(K, N), init
    if name == "specials":
        a = values(rng, a_t, K, specials_rate=0.3)
        if a_t in FLOAT_TYPES and _format(a_t)[3]:     # an infinity in A at least (B gets them by chance)
            a[rng.randrange(K)] = _float(a_t, rng.randrange(2), (1 << _format(a_t)[0]) - 1, 0)
        return a, values(rng, b_t, K * N, specials_rate=0.3).reshape(K, N), values(rng, c_t, N, specials_rate=0.3)
    if is_int:
        return None
    a = values(rng, a_t, K)
    b = values(rng, b_t, K * N).reshape(K, N)
    if name == "neg_zero":
        a = values(rng, a_t, K, band=(-20, 20))
        zeros = [x for x in (_float(a_t, 0, 0, 0), _float(a_t, 1, 0, 0))]
        a = np.array([rng.choice(zeros) if rng.random() < 0.2 else x for x in a], a.dtype)
        a[rng.randrange(K)] = rng.choice(zeros)              # at least one zero in A
        sign_b = 1 - _sign(a_t, a)                          # product sign = sign(a) xor sign(b) = 1
        b = np.repeat(np.array([_float(b_t, int(s), 0, 0) for s in sign_b], b.dtype)[:, None], N, axis=1)
        init = np.array([rng.choice([_float(c_t, 1, 0, 0)] * 2 + [_float(c_t, 0, 0, 0)]) if rng.random() < 0.8
                         else x for x in init], init.dtype)
        return a, b, init
    if name == "inf_cancel":
        if K < 2:
            return None
        a = np.array([_pow2(a_t, rng.randint(-3, 3), 0, rng.randrange(4)) for _ in range(K)], a.dtype)
        sign_b = 1 << (8 * DTYPE_BYTES[b_t] - 1)
        if not _format(b_t)[3] and not _format(a_t)[3]:
            return None                                 # e4m3 x e4m3: no infinity in any operand
        # infinities in A (shared by the columns) when B has none, and half of the time when both have them
        in_a = not _format(b_t)[3] or (_format(a_t)[3] and rng.random() < 0.5)
        if in_a:
            k0, k1 = rng.sample(range(K), 2)
            a[k0] = a[k1] = _float(a_t, 0, (1 << _format(a_t)[0]) - 1, 0)
        for j in range(N):
            if not in_a:
                k0, k1 = rng.sample(range(K), 2)
                b[k0, j], b[k1, j] = _float(b_t, 0, (1 << _format(b_t)[0]) - 1, 0), \
                    _float(b_t, 1, (1 << _format(b_t)[0]) - 1, 0)
            else:                                       # +inf x (+b) and +inf x (-b), b finite nonzero
                b[k0, j], b[k1, j] = int(b[k0, j]) & ~sign_b, int(b[k1, j]) | sign_b
            if rng.random() < 0.25:                     # an infinite result instead of inf - inf
                b[k1, j] ^= sign_b
        return a, b, init
    if name == "nan":
        nans = [x for x in specials(a_t) if _is_nan(a_t, x)]
        a = np.array([rng.choice(nans) if rng.random() < 0.15 else x for x in a], a.dtype)
        nans = [x for x in specials(b_t) if _is_nan(b_t, x)]
        b = np.array([[rng.choice(nans) if rng.random() < 0.15 else x for x in row] for row in b], b.dtype)
        nans = [x for x in specials(c_t) if _is_nan(c_t, x)]
        init = np.array([rng.choice(nans) if rng.random() < 0.3 else x for x in init], init.dtype)
        return a, b, init
    if name == "overflow":
        def near(t, signs, flips=0.0):   # the given signs, a few flipped (mixed signs give inf - inf)
            out = []
            for sign in signs:
                sign ^= rng.random() < flips
                bits = _pow2(t, _exp_range(t)[1] - rng.randrange(3), sign, rng.randrange(1 << _format(t)[1]))
                out.append(bits if bits is not None and rng.random() < 0.8 else _max_finite(t, sign))
            return np.array(out, UINT_OF_SIZE[DTYPE_BYTES[t]])
        col = [rng.randrange(2) for _ in range(N)]
        b = np.stack([near(b_t, [s] * K, rng.choice([0.0, 0.0, 0.1])) for s in col], axis=1)
        return near(a_t, [0] * K), b, near(c_t, col, 0.2)
    if name == "subnormal":
        def small(t, n):
            lo, _ = _exp_range(t)
            ne, nm, bias, _ = _format(t)
            out = []
            for _ in range(n):
                r = rng.random()
                if r < 0.5:
                    out.append(_float(t, rng.randrange(2), 0, rng.randrange(1, 1 << nm)))
                elif r < 0.8:
                    out.append(_float(t, rng.randrange(2), rng.randint(1, 3), rng.randrange(1 << nm)))
                else:
                    out.append(_float(t, rng.randrange(2), bias + rng.randint(-2, 2), rng.randrange(1 << nm)))
            return np.array(out, UINT_OF_SIZE[DTYPE_BYTES[t]])
        return small(a_t, K), small(b_t, K * N).reshape(K, N), small(c_t, N)
    if name == "ties":
        return _ties(rng, triple, K, N)
    if name == "cancel":
        for k in range(1, K, 2):
            a[k] = a[k - 1]
            b[k] = b[k - 1] ^ (1 << (8 * DTYPE_BYTES[b_t] - 1))       # -B: the products cancel exactly
        zero = [_float(c_t, 0, 0, 0), _float(c_t, 1, 0, 0)]
        init = np.array([rng.choice(zero) if rng.random() < 0.6 else x for x in init], init.dtype)
        return a, b, init
    raise ValueError(f"unknown scenario {name!r}")


def _is_nan(dtype, bits):
    ne, nm, _, inf = _format(dtype)
    top = (1 << ne) - 1
    e, m = (bits >> nm) & top, bits & ((1 << nm) - 1)
    return e == top and (m != 0 if inf else m == (1 << nm) - 1)


def _ties(rng, triple, K, N):
    """Products of magnitude 2^E ("big") and 2^(E-24) ("small"), and near-ties, with random signs: A is a
    power of two per k (big or small positions shared by all columns), B a power of two (sometimes 1.5x)."""
    c_t, a_t, b_t = triple
    (alo, ahi), (blo, bhi) = _exp_range(a_t), _exp_range(b_t)
    # A big exponent E for which both E and E - 24 split into an A and a B exponent (normal or subnormal).
    options = [E for E in range(alo + blo + 24, ahi + bhi + 1) if -40 <= E <= 60]
    E = rng.choice(options)

    def split(e):
        ea = min(max(e // 2, alo), ahi)
        ea = min(max(ea, e - bhi), e - blo)
        return ea, e - ea

    big = [rng.random() < 0.3 for _ in range(K)]
    a = np.array([_pow2(a_t, split(E if bg else E - 24)[0]) for bg in big], UINT_OF_SIZE[DTYPE_BYTES[a_t]])
    rows = []
    for k in range(K):
        ea, eb = split(E if big[k] else E - 24)
        row = []
        for _ in range(N):
            shift = 0 if big[k] else rng.choice([0, 0, 0, 1, -1])     # near-ties: 2^(E-23), 2^(E-25)
            e = eb + shift
            bits = _pow2(b_t, e, rng.randrange(2), (1 << (_format(b_t)[1] - 1)) if rng.random() < 0.2 else 0)
            row.append(bits if bits is not None else _pow2(b_t, eb, rng.randrange(2)))
        rows.append(row)
    init = np.array([_pow2(c_t, E + rng.choice([0, 1, -24]), rng.randrange(2)) for _ in range(N)],
                    UINT_OF_SIZE[DTYPE_BYTES[c_t]])
    return a, np.array(rows, UINT_OF_SIZE[DTYPE_BYTES[b_t]]), init


def fill(rng, cmd, data=None, *, specials_rate=0.02):
    """UB writes ``[(address, bytes), ...]`` that fill the static extent of every source tile of ``cmd``
    (A, B, C_in / bias): ``data`` = ``(a, b, init)`` from :func:`scenario` goes into the valid regions
    (row 0 of A and of C_in / bias, B's K x N block), random values of the type everywhere else."""
    out = []
    K, N = cmd["src1"]["valid_rows"], cmd["src1"]["valid_cols"]
    slots = ["src0", "src1"] + ([INIT] if INIT in cmd else [])
    for slot, part in zip(slots, data or (None,) * 3):
        t = cmd[slot]
        arr = values(rng, t["dtype"], t["rows"] * t["cols"], specials_rate=specials_rate).reshape(t["rows"], t["cols"])
        if part is not None:
            if slot == "src1":
                arr[:K, :N] = part
            else:
                arr[0, :len(part)] = part
        out.append((t["base"], arr.tobytes()))
    return out


# ------------------------------------------------------------------------------------------------ errors

def _legal(op=Opcode.TGEMV_ACC, triple=(DType.FP32, DType.FP16, DType.FP16)):
    """A legal command at fixed bases (K = 5, N = 6, extra static rows and columns)."""
    c_t, a_t, b_t = triple
    cmd = {"opcode": op, "dst": tile(2, 7, c_t, (1, 6), base=0), "src0": tile(2, 9, a_t, (1, 5), base=0x80),
           "src1": tile(9, 7, b_t, (5, 6), base=0x100)}
    if op != Opcode.TGEMV:
        cmd[INIT] = tile(2, 7, c_t, (1, 6), base=0x200)
    return cmd


def _copy(cmd):
    return {k: (dict(v) if isinstance(v, dict) else v) for k, v in cmd.items()}


def error_cases(config):
    """``{status: [(what, bad command, a legal command to run after it), ...]}``: every status an
    instruction of the GEMV family can answer, each case violating one constraint of a legal command."""
    F32, F16, BF16, I32, I8 = DType.FP32, DType.FP16, DType.BF16, DType.INT32, DType.INT8
    cases = {}

    def case(status, what, mutate, op=Opcode.TGEMV_ACC, triple=(F32, F16, F16)):
        good = _legal(op, triple)
        bad = _copy(good)
        mutate(bad)
        cases.setdefault(status, []).append((what, bad, good))

    def set_(slot, **kw):
        return lambda c: c[slot].update(kw)

    S = Status
    case(S.DTYPE_INVALID, "C dtype code 13", set_("dst", dtype=13))
    case(S.DTYPE_INVALID, "B dtype code 15", set_("src1", dtype=15), Opcode.TGEMV)
    case(S.DTYPE_UNSUPPORTED, "C FP16 (not an accumulator type)", set_("dst", dtype=F16), Opcode.TGEMV)
    case(S.DTYPE_UNSUPPORTED, "A INT16", set_("src0", dtype=DType.INT16))
    case(S.DTYPE_UNSUPPORTED, "B UINT8", set_("src1", dtype=DType.UINT8), Opcode.TGEMV, (I32, I8, I8))
    case(S.DTYPE_UNSUPPORTED, "C_in FP16", set_(INIT, dtype=F16))
    case(S.DTYPE_UNSUPPORTED, "bias UINT32", set_(INIT, dtype=DType.UINT32), Opcode.TGEMV_BIAS)
    case(S.DTYPE_MISMATCH, "(FP32, FP16, BF16)", set_("src1", dtype=BF16), Opcode.TGEMV)
    case(S.DTYPE_MISMATCH, "(INT32, FP16, FP16)", lambda c: (c["dst"].update(dtype=I32), c[INIT].update(dtype=I32)))
    case(S.DTYPE_MISMATCH, "(FP32, INT8, INT8)", lambda c: (c["src0"].update(dtype=I8), c["src1"].update(dtype=I8)),
         Opcode.TGEMV_BIAS)
    case(S.DTYPE_MISMATCH, "C_in INT32, C FP32", set_(INIT, dtype=I32))
    case(S.DTYPE_MISMATCH, "bias FP32, C INT32", set_(INIT, dtype=F32), Opcode.TGEMV_BIAS, (I32, I8, I8))
    case(S.UB_MISALIGNED, "B base + 16", lambda c: c["src1"].update(base=c["src1"]["base"] + 16))
    case(S.UB_MISALIGNED, "C_in base + 4", lambda c: c[INIT].update(base=c[INIT]["base"] + 4))
    case(S.UB_MISALIGNED, "C base + 8", lambda c: c["dst"].update(base=8), Opcode.TGEMV)
    case(S.UB_OUT_OF_RANGE, "B past the end", set_("src1", base=config.ub_bytes - 64))
    case(S.UB_OUT_OF_RANGE, "bias past the end", set_(INIT, base=config.ub_bytes - 32), Opcode.TGEMV_BIAS)
    case(S.UB_OUT_OF_RANGE, "A past the end", set_("src0", base=config.ub_bytes - 32), Opcode.TGEMV)
    case(S.VALID_EXCEEDS_STATIC, "B valid cols > static", lambda c: [c[s].update(valid_cols=8) for s in
                                                                   ("dst", "src1", INIT)])
    case(S.VALID_EXCEEDS_STATIC, "A valid rows > static", lambda c: [c[s].update(valid_rows=3) for s in
                                                                   ("dst", "src0", INIT)], Opcode.TGEMV_BIAS)
    case(S.LAYOUT_UNSUPPORTED, "B column-major", set_("src1", layout=COL), Opcode.TGEMV)
    case(S.LAYOUT_UNSUPPORTED, "A column-major", set_("src0", layout=COL))
    case(S.LAYOUT_UNSUPPORTED, "C column-major", set_("dst", layout=COL), Opcode.TGEMV_BIAS)
    case(S.LAYOUT_UNSUPPORTED, "C_in column-major", set_(INIT, layout=COL))
    case(S.SHAPE_MISMATCH, "A static cols != B static rows", set_("src0", cols=8))
    case(S.SHAPE_MISMATCH, "B static cols != C static cols", lambda c: [c[s].update(cols=8) for s in ("dst", INIT)])
    case(S.SHAPE_MISMATCH, "A static rows != C static rows", set_("src0", rows=1), Opcode.TGEMV)
    case(S.SHAPE_MISMATCH, "A valid cols != K", set_("src0", valid_cols=4), Opcode.TGEMV)
    case(S.SHAPE_MISMATCH, "C valid cols != N", set_("dst", valid_cols=5), Opcode.TGEMV)
    case(S.SHAPE_MISMATCH, "C_in static shape != C", set_(INIT, rows=1))
    case(S.SHAPE_MISMATCH, "bias valid cols != N", set_(INIT, valid_cols=5), Opcode.TGEMV_BIAS)
    case(S.SHAPE_MISMATCH, "A valid rows != C valid rows", set_("src0", valid_rows=2), Opcode.TGEMV)
    case(S.DIM_OUT_OF_RANGE, "m = 2", lambda c: [c[s].update(valid_rows=2) for s in ("dst", "src0", INIT)])
    case(S.DIM_OUT_OF_RANGE, "m = 0", lambda c: [c[s].update(valid_rows=0) for s in ("dst", "src0")], Opcode.TGEMV)
    case(S.DIM_OUT_OF_RANGE, "K = 0", lambda c: (c["src0"].update(valid_cols=0), c["src1"].update(valid_rows=0)))
    case(S.DIM_OUT_OF_RANGE, "N = 0", lambda c: [c[s].update(valid_cols=0) for s in ("dst", "src1", INIT)],
         Opcode.TGEMV_BIAS)
    # K = 4096 (static A 1 x 4096 and B 4096 x 1 int8: 4 KiB each; they overlap, which only matters to
    # a legal command) and, where the UB holds C's 4096 int32, N = 4096.
    big = lambda c, K, N: (c.update(dst=tile(1, N, I32, (1, N)), src0=tile(1, K, I8, (1, K)),
                                    src1=tile(K, N, I8, (K, N))), c.pop(INIT, None))
    case(S.DIM_OUT_OF_RANGE, "K = 4096", lambda c: big(c, GEMV_MAX_DIM + 1, 1), Opcode.TGEMV, (I32, I8, I8))
    if (GEMV_MAX_DIM + 1) * 4 <= config.ub_bytes:
        case(S.DIM_OUT_OF_RANGE, "N = 4096", lambda c: big(c, 1, GEMV_MAX_DIM + 1), Opcode.TGEMV, (I32, I8, I8))
    return cases
