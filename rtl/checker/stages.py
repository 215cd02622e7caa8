"""The checker's building blocks, for the common checks and every engine's ``add_checks``.

The checker (:class:`rtl.checker.checker.Checker`) is a pipeline of ``Checker.LATENCY`` register stages.
These helpers keep each stage short: :func:`stage` registers a decode of the command,
:func:`stage_product` multiplies command fields in DSP blocks whose input registers take the command as
it arrives, :func:`exceeds` compares a sum of products and fields with a limit (carry-save adds, one
carry chain in the last stage). :func:`tile_checks` holds the checks of one tile operand slot.

Every value the helpers build carries its *depth*: the register stages between it and the held command (0:
logic of the held command; 1: a :func:`stage` of that or a product; 2: :func:`exceeds`' carry-save vectors).
A checker that takes a command in every cycle (``Checker(pipelined=True)``, the concurrent front end's) needs
every operand of a condition at one depth: :func:`align` delays the shallower ones (and is the identity in a
checker that holds its command, whose netlist it leaves as it was); :func:`depth` raises a named error at
elaboration where a condition mixes depths.
"""

import contextlib
import contextvars

from amaranth import *

from rtl.fpga.dsp import product, product_latency
from rtl.isa import UB_ALIGN, Status
from rtl.lib.tile import elem_log2

__all__ = ["PRODUCT_CYCLES", "SUM_CYCLES", "CONDITION_CYCLES", "tile_checks", "dtype_in", "stage", "stage_product",
           "exceeds", "checker_context", "uses_stage", "depth", "align", "pipelined"]


def dtype_in(dtype, allowed):
    """True when ``dtype`` (a ``DType`` field) holds one of the types in ``allowed``."""
    if not allowed:
        return C(0, 1)
    return Cat(dtype.as_value() == d.value for d in sorted(allowed, key=lambda d: d.value)).any()


#: Edges from the one that takes the command to a :func:`stage_product` product in a register: the DSP
#: blocks' operand registers take the factors at that edge, their output registers hold the product one
#: edge later.
PRODUCT_CYCLES = product_latency(in_reg=True) - 1
#: Edges from the products (and the staged terms) to :func:`exceeds`' two carry-save vectors.
SUM_CYCLES = 1
#: The edge that registers every failing condition, one register per status (the verdict is their
#: priority encoding, a few LUT levels after them).
CONDITION_CYCLES = 1


# The checker's elaboration context: the platform (products in DSP blocks with their own registers on
# an ECP5, rtl.fpga.dsp) and a counter for unique block names. Set by Checker.elaborate around the checks it
# builds (the engines' ``add_checks`` included), so that their signature stays (m, config, cmd, fail).
_CONTEXT = contextvars.ContextVar("checker_context", default=None)


def _staged(value, depth=1):
    """Mark ``value`` as holding checker registers ``depth`` stages after the held command (:func:`exceeds`
    then adds no register in front)."""
    value._checker_staged = True
    value._checker_depth = depth
    return value


def pipelined():
    """True inside a checker that takes a command in every cycle (its values must not mix depths)."""
    ctx = _CONTEXT.get()
    return bool(ctx and ctx.get("pipelined"))


def _depths(value):
    value = Value.cast(value)
    own = getattr(value, "_checker_depth", None)
    if own is not None:
        return {own}
    return {getattr(sig, "_checker_depth", 0) for sig in value._rhs_signals()} or {0}


def depth(value, what="a checker value"):
    """The register stages between the held command and ``value`` (the deepest of its operands). In a
    pipelined checker (:func:`pipelined`) operands of different depths are an error: they belong to
    different commands there (:func:`align` them)."""
    found = _depths(value)
    if len(found) > 1 and pipelined():
        raise ValueError(f"checker: {what} mixes values {sorted(found)} stages after the command; in a checker "
                         f"that takes a command every cycle they belong to different commands: align() them")
    return max(found)


def align(m, *values):
    """``values`` each delayed to the depth of the deepest (:func:`depth`) in a pipelined checker, so that
    logic combining them sees one command; unchanged otherwise (the command is held while it is checked, so
    a shallower value is still the same command's). Returns the list."""
    if not pipelined():
        return list(values)
    target = max(depth(v) for v in values)
    out = []
    for v in values:
        for _ in range(target - depth(v)):
            v = stage(m, v)
        out.append(v)
    return out


def stage(m, value, name=None):
    """``value`` registered: a pipeline register inside the checker. Of the command alone, it is taken
    with the command (stage 1, the edge that takes it) and holds while the command does; use it to cut
    a check's long paths. A condition may read it directly (the checker registers every condition
    again) or through :func:`exceeds`."""
    value = Value.cast(value)
    d = depth(value, f"stage {name!r}")
    # reset-less: recomputed every cycle from the held command, read only at the verdict (the unit's
    # reset reached ~1,200 checker flip-flops: a 12.2 ns net in `default`)
    reg = Signal(value.shape(), name=name, reset_less=True)
    m.d.sync += reg.eq(value)
    return _staged(reg, d + 1)


def stage_product(m, a, b, name=None):
    """``a(cmd) * b(cmd)`` for unsigned factors of any width, as a list of registered partial products
    whose sum is the product: a factor wider than a DSP block's 18 bits is cut into 16-bit pieces, each
    pair of pieces multiplied in one DSP block (MULT18X18D, through :func:`rtl.fpga.dsp.product`, with the
    block's own input and output registers on an ECP5) and shifted into place.

    ``a`` and ``b`` are *functions of a command* (a :data:`Command` view) returning the factor: the
    checker evaluates them on the command as it arrives (``s_axis_cmd.tdata``), so the blocks' input
    registers take the factors at the edge that takes the command (stage 1, while ``load`` is high, then
    they hold) and the products are registers one edge later (stage 2). Build every intermediate of a
    factor inside the function (e.g. the element size from the dtype field of its argument), never from
    the held command. Give the list to :func:`exceeds` as terms (it adds them in stages 3 and 4)."""
    if not (callable(a) and callable(b)):
        raise TypeError("stage_product: give the factors as functions of the command (they are taken "
                        "from the command as it is accepted)")
    ctx = _CONTEXT.get()
    if ctx is None:             # outside a Checker (a block test): the command is the factors' argument
        raise TypeError("stage_product: only inside Checker.elaborate (or a test's checker_context)")
    live = ctx["live"]
    fa, fb = Value.cast(a(live)), Value.cast(b(live))
    assert not fa.shape().signed and not fb.shape().signed, "stage_product: unsigned factors only"

    def pieces(v):
        if len(v) <= 18:
            return [(0, v)]
        return [(lo, v[lo:lo + 16]) for lo in range(0, len(v), 16)]

    terms = []
    for lo_a, pa in pieces(fa):
        for lo_b, pb in pieces(fb):
            k = len(terms)
            ctx["n"] += 1
            piece = product(m, pa, pb, platform=ctx["platform"], in_reg=True, in_en=ctx["load"],
                            name=f"{name or 'product'}_pp{k}_{ctx['n']}")
            lo = lo_a + lo_b
            _staged(piece, PRODUCT_CYCLES)
            terms.append(_staged(piece if lo == 0 else Cat(C(0, lo), piece), PRODUCT_CYCLES))
    return terms


@contextlib.contextmanager
def checker_context(live, load, platform=None, pipelined=False):
    """The context :func:`stage_product` needs outside :class:`Checker` (block tests): ``live``, the
    command as it arrives (a :data:`Command` view), ``load`` (high at the edges that take it);
    ``pipelined``: a command may come in every cycle (:func:`align`)."""
    token = _CONTEXT.set({"platform": platform, "n": 0, "live": live, "load": load, "pipelined": pipelined})
    try:
        yield
    finally:
        _CONTEXT.reset(token)


def uses_stage(value):
    """True when ``value`` reads a checker register (:func:`stage`, :func:`stage_product`)."""
    if getattr(value, "_checker_staged", False):
        return True
    return any(getattr(sig, "_checker_staged", False) for sig in value._rhs_signals())


def _csa(x, y, z):
    """Carry-save add of three equal-width vectors: (sum, carry) with x + y + z = sum + carry (mod 2**w)."""
    w = len(x)
    return x ^ y ^ z, Cat(C(0, 1), ((x & y) | (x & z) | (y & z))[:w - 1])


def exceeds(m, terms, limit, name=None):
    """``sum(terms) > limit`` for non-negative ``terms``, with one short carry chain in the checker's last
    stage: a term of ``2**bits`` or more (``2**bits > limit``) exceeds alone (a flag, an OR of its high
    bits); the low ``bits`` bits of every term and the constant ``2**W - limit - 1`` are reduced by
    carry-save adders (one LUT level each) to two vectors, registered with the flags' OR, whose sum has
    bit ``W`` set exactly when the low parts exceed the limit (one carry chain, then the failing
    condition's register). A term that reads no checker register, i.e. a field of the command or logic
    of it, has its low bits and its flag registered first (stage 1, with the command); a term that
    reads one (:func:`stage`, :func:`stage_product`: a selection between products, say) is used as it
    is. With the products of :func:`stage_product` the result is valid in stage 4 (``Checker.LATENCY``
    edges after the edge that takes the command)."""
    limit = int(limit)
    bits = max(1, limit.bit_length())           # 2**bits > limit
    W = bits + max(1, len(terms)).bit_length() + 1
    lows, bigs = [], []
    for i, t in enumerate(terms):
        t = Value.cast(t)
        staged = uses_stage(t)
        if staged and depth(t, f"exceeds {name or '(a range sum)'} term {i}") != PRODUCT_CYCLES:
            raise ValueError(f"exceeds {name or '(a range sum)'}: term {i} is {depth(t)} stages after the command; a registered "
                             f"term must be {PRODUCT_CYCLES} (a product's, a stage() of the command)")
        if t.shape().signed:
            t = t.as_unsigned()
        low = t[:bits]
        big = t[bits:].any() if len(t) > bits else C(0, 1)
        if not staged:
            tag = None if name is None else f"{name}_t{i}"
            low = stage(m, low, None if tag is None else f"{tag}_low")
            if len(t) > bits:
                big = stage(m, big, None if tag is None else f"{tag}_big")
        lows.append(low.as_unsigned() if len(low) == W else Cat(low, C(0, W - len(low))))
        bigs.append(big)
    vecs = lows + [C((1 << W) - limit - 1, W)]
    while len(vecs) > 2:
        nxt = []
        for j in range(0, len(vecs) - 2, 3):
            nxt.extend(_csa(*vecs[j:j + 3]))
        nxt.extend(vecs[len(vecs) - len(vecs) % 3:] if len(vecs) % 3 else [])
        vecs = nxt
    # the two vectors and the flags' OR, registered; the final add is the last stage's
    tag = "exceeds" if name is None else name
    x, y = stage(m, vecs[0], f"{tag}_x"), stage(m, vecs[1], f"{tag}_y")
    big = stage(m, Cat(bigs).any(), f"{tag}_big")
    total = Signal(W + 1, name=name)
    _staged(total, PRODUCT_CYCLES + SUM_CYCLES)
    m.d.comb += total.eq(x + y)
    return big | total[W]


def tile_checks(m, config, fail, cmd, slot, enable):
    """Checks every tile operand (``slot`` of the held ``cmd``) gets: base alignment, UB range of the
    static extent, valid <= static. Appends conditions to ``fail`` (status -> list of conditions);
    returns log2 of the element size. The static extent's multiply is a :func:`stage_product`, the
    element size shifts the product after its register."""
    tile = getattr(cmd, slot)
    esz = elem_log2(m, tile.dtype)
    size = stage_product(m, lambda c: getattr(c, slot).rows, lambda c: getattr(c, slot).cols, f"ub_size_{slot}")
    # the element size after the register: the shifted products are checker registers too
    size0, esz_p = align(m, size[0], esz)
    terms = [size0 << esz_p] + size[1:]
    fail[Status.UB_MISALIGNED].append(enable & (tile.base[:UB_ALIGN.bit_length() - 1] != 0))
    # (the enable registered too: the carry chain's result is the only logic of the last stage)
    used, beyond = align(m, stage(m, enable, f"uses_{slot}_r"), exceeds(m, [tile.base] + terms, config.ub_bytes))
    fail[Status.UB_OUT_OF_RANGE].append(used & beyond)
    fail[Status.VALID_EXCEEDS_STATIC].append(
        enable & ((tile.valid_rows > tile.rows) | (tile.valid_cols > tile.cols)))
    return esz
