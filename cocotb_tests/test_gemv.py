"""The GEMV family (TGEMV, TGEMV_ACC, TGEMV_BIAS), bit-exact against the golden machine on the whole unit.

Every command runs on the RTL and on the golden machine (``Harness``), and the whole UB is compared with
the golden's (the UB starts as random bytes, so everything outside the C rows is a canary). A full UB
read costs one cycle per word, more than most GEMV commands, so commands run in *batches*: their tiles
take disjoint regions of the UB (random places, random order), all operands are loaded, the commands
run back to back and the whole UB is compared once. A result or a stray write of any command of the batch
stays in the UB until that comparison (no command of the batch writes where another one reads or writes).

The float accumulation order depends on ``Config.gemv_partial_sums`` (P), which the golden reads from the
configuration the unit was built with (``sim.runner.config_spec``: ``small,gemv_partial_sums=2``).

Parameters: ``TILEVEC_GROUP``, ``TILEVEC_LARGE_K``, ``TILEVEC_LARGE_N`` (``gemv_triples``),
``TILEVEC_ALL_OPS`` and ``TILEVEC_SCENARIOS`` (``gemv_specials``: every variant per scenario, not one at
random; a comma-separated subset of the scenarios),
``TILEVEC_ROUNDS`` (``gemv_backpressure``).
A failure logs the commands of its batch (bases, shapes, types, data scenario), the command and tile
that hold the first differing UB byte, and cocotb's random seed.
"""

import random

import cocotb
import numpy as np

from golden.check import check
from golden.profiles import GEMV_TRIPLES
from rtl.isa import DType, DTYPE_BYTES, Opcode, Profile, Status, tile, UB_ALIGN

from sim.failures import UbMismatch, format_command
from .ew_commands import place
from .gemv_commands import (GEMV_OPS, INIT, SCENARIOS, error_cases, fill, footprint, gemv_command, lanes,
                            largest, random_pads, scenario, triple_name, triples, values)
from .harness import Harness

#: The engines of the unit these tests simulate (``Config.engines``; sim.regress builds it): a
#: unit of only what the tests exercise simulates several times faster.
UNIT_ENGINES = ('gemv',)

F32, F16 = DType.FP32, DType.FP16
SLOTS = ("dst", "src0", "src1", INIT)


async def _fresh_ub(h):
    await h.ub_load(0, h.rng.randbytes(h.config.ub_bytes))


async def _load(h, writes):
    for address, data in writes:
        await h.ub_load(address, data)


def _label(cmd, extra=""):
    K, N = cmd["src1"]["valid_rows"], cmd["src1"]["valid_cols"]
    types = triple_name(tuple(cmd[s]["dtype"] for s in ("dst", "src0", "src1")))
    place_ = " in place" if INIT in cmd and cmd[INIT]["base"] == cmd["dst"]["base"] else ""
    return f"{cmd['opcode'].name} {types} K{K} N{N}{place_}{' ' + extra if extra else ''}"


def _owner(items, address):
    """Which command and tile of ``items`` [(cmd, label), ...] hold UB byte ``address`` (static extent)."""
    for cmd, label in items:
        for slot in SLOTS:
            t = cmd.get(slot)
            if isinstance(t, dict) and "base" in t:
                size = t["rows"] * t["cols"] * DTYPE_BYTES[t["dtype"]]
                if t["base"] <= address < t["base"] + size:
                    return f"{slot} of {label}"
    return "no tile of the batch"


def _report(items, what):
    cocotb.log.error("%s (seed %s); the batch:\n%s", what, cocotb.RANDOM_SEED,
                     "\n".join(f"  {label}: {format_command(cmd)}" for cmd, label in items))


async def _check_ub(h, items):
    """The whole UB against the golden's; on a mismatch, log ``items`` [(cmd, label), ...] (what ran since
    the last comparison) and the command and tile that hold the first differing byte."""
    try:
        await h.check_ub()
    except UbMismatch as e:
        _report(items, f"UB mismatch at 0x{e.address:x}, in {_owner(items, e.address)}")
        raise


async def _run_batch(h, items):
    """Run ``items`` = [(cmd, label), ...] back to back (each must answer OK, the golden's status), then
    compare the whole UB."""
    for cmd, label in items:
        try:
            rsp = await h.run(cmd, label=label)
            assert rsp["status"] == Status.OK, f"{label}: {rsp}"
        except AssertionError:
            _report(items, f"status of {label}")
            raise
    await _check_ub(h, items)


def _pack(rng, config, specs):
    """Batches of commands from ``specs`` = [(op, triple, K, N, scenario, in_place, padded), ...]
    (``in_place`` None: at random for TGEMV_ACC / _BIAS; ``padded``: random extra static extents when they
    fit). Each command gets a region of its tiles' size plus random slack; the regions of a batch are
    placed at random in the UB. Returns ``[[(cmd, label, data), ...], ...]`` (``data`` for ``fill``)."""
    batches, pending, used = [], [], 0

    def close():
        regions = {i: tile(0, 1, size, DType.UINT8) for i, (_, size, _) in enumerate(pending)}
        assert place(rng, regions, config.ub_bytes)
        batch = []
        for i, ((op, triple, K, N, name, in_place), size, pads) in enumerate(pending):
            cmd = gemv_command(rng, config, op, triple, K, N, **pads, in_place=in_place,
                               region=(regions[i]["base"], size))
            assert cmd is not None and check(cmd, config) == Status.OK, (op, triple, K, N, pads)
            batch.append((cmd, _label(cmd, name), scenario(rng, name, triple, K, N)))
        batches.append(batch)
        pending.clear()

    for op, triple, K, N, name, in_place, padded in specs:
        if scenario(random.Random(0), name, triple, K, N) is None:
            continue                                    # the corner does not exist for this triple / K
        if in_place is None:
            in_place = op != Opcode.TGEMV and rng.random() < 0.25
        for pads in ((random_pads(rng) if padded else {}), {}):
            need = footprint(op, triple, K, N, **pads, in_place=in_place)
            if need <= config.ub_bytes:
                break
        else:
            raise ValueError(f"{op.name} {triple_name(triple)} K{K} N{N} does not fit the UB")
        size = min(config.ub_bytes, need + UB_ALIGN * rng.randrange(need // UB_ALIGN // 2 + 1))
        if used + size > config.ub_bytes:
            close()
            used = 0
        pending.append(((op, triple, K, N, name, in_place), size, pads))
        used += size
    if pending:
        close()
    return batches


async def _run_specs(h, rng, specs):
    ran = 0
    for batch in _pack(rng, h.config, specs):
        for cmd, _, data in batch:
            await _load(h, fill(rng, cmd, data))
        await _run_batch(h, [(cmd, label) for cmd, label, _ in batch])
        ran += len(batch)
    return ran


#: ``gemv_triples``'s groups (``TILEVEC_GROUP``): the four triples of both profiles, the fp8 ones (A5 only).
TRIPLE_GROUPS = {"a2a3": set(GEMV_TRIPLES[Profile.A2A3]), "fp8": set(GEMV_TRIPLES[Profile.A5]) - set(GEMV_TRIPLES[Profile.A2A3])}


def _pick(rng, todo, how):
    """The triples that get a large command: ``all``, ``one`` (at random) or ``none``."""
    return {"all": list(todo), "one": [rng.choice(todo)], "none": []}[how]


@cocotb.test()
async def gemv_triples(dut):
    """The triples of ``TILEVEC_GROUP`` (``a2a3``, ``fp8``; default every triple of the profile): every
    variant at (K, N) = (1, 1), (L-1, L+1), (L, L), (L+1, L-1) for L lanes; a random variant at K = P-1, P,
    P+1, 2P+1, 3P+2 and at N = 2L+1; random static padding (B rows whose pitch is not a multiple of the
    word, extra A / C rows), random bases, C_in / bias in place at random. Large: the largest K (N of 1,
    L-1 or L+1) and the largest N (K of 1, 2 or P+1) the UB holds, up to 4095, for one random triple of the
    run or, with ``TILEVEC_LARGE_K`` / ``TILEVEC_LARGE_N`` = ``all`` (or ``none``), for every (no) triple:
    each costs thousands of cycles. Data: normal values of a narrow band, 2% specials."""
    h = await Harness.start(dut)
    rng = random.Random(h.rng.random())
    group = h.params.get("group")
    todo = [t for t in triples(h.config.profile) if group is None or t in TRIPLE_GROUPS[group]]
    assert todo, f"no triple of group {group} in profile {h.config.profile.value}"
    P = h.config.gemv_partial_sums
    large_k, large_n = _pick(rng, todo, h.params.get("large_k", "one")), _pick(rng, todo, h.params.get("large_n", "one"))
    await _fresh_ub(h)
    for triple in todo:
        L = lanes(h.config, triple[2])
        core = [(1, 1), (L - 1, L + 1), (L, L), (L + 1, L - 1)]
        specs = [(op, triple, K, N, "random", None, True) for op in GEMV_OPS for K, N in core if K and N]
        specs += [(rng.choice(GEMV_OPS), triple, K, rng.randint(1, 2 * L + 1), "random", None, True)
                  for K in sorted({P - 1, P, P + 1, 2 * P + 1, 3 * P + 2} - {0})]
        specs.append((rng.choice(GEMV_OPS), triple, rng.randint(1, 2 * P + 1), 2 * L + 1, "random", None, True))
        if triple in large_k:
            op, N = rng.choice(GEMV_OPS), rng.choice([1, L - 1 or 1, L + 1])
            specs.append((op, triple, largest(h.config, op, triple, N=N), N, "random", False, False))
        if triple in large_n:
            op, K = rng.choice(GEMV_OPS), rng.choice([1, 2, P + 1])
            specs.append((op, triple, K, largest(h.config, op, triple, K=K), "random", False, False))
        assert all(s[2] and s[3] for s in specs), "the UB holds no large command"
        await _run_specs(h, rng, specs)


@cocotb.test()
async def gemv_specials(dut):
    """Every triple and data scenario (``gemv_commands.SCENARIOS``: all-(-0) products, inf - inf, NaN
    payloads, overflow to inf, subnormal operands and products, fp32 rounding ties in the partial sums and
    the tree, exact cancellation, integer wrap-around), a random variant each (every variant with
    ``TILEVEC_ALL_OPS``); K around the lanes and P."""
    h = await Harness.start(dut)
    rng = random.Random(h.rng.random())
    P = h.config.gemv_partial_sums
    every = h.params.get("all_ops", False)
    names = h.params.get("scenarios")
    await _fresh_ub(h)
    specs = []
    for triple in triples(h.config.profile):
        L = lanes(h.config, triple[2])
        for name in (names.split(",") if names else SCENARIOS):
            for op in (GEMV_OPS if every else [rng.choice(GEMV_OPS)]):
                K = rng.choice([2, L + 1, P + 1, 2 * P + 3, 17])
                specs.append((op, triple, K, rng.randint(1, 2 * L + 1), name, None, True))
    assert await _run_specs(h, rng, specs)


def _chain_tiles(rng, triple, K, N, pairs=3, padded=True):
    """Unplaced tiles for a chain: C and C2 (1 x N valid) and ``pairs`` (A, B) pairs, random padding (none
    without ``padded``)."""
    c_t, a_t, b_t = triple
    pads = random_pads(rng) if padded else {"pad_rows": 0, "pad_k": 0, "pad_n": 0}
    rows, ks, ns = 1 + pads["pad_rows"], K + pads["pad_k"], N + pads["pad_n"]
    tiles = {"C": tile(0, rows, ns, c_t, (1, N)), "C2": tile(0, rows, ns, c_t, (1, N))}
    for i in range(pairs):
        tiles[f"A{i}"] = tile(0, rows, ks, a_t, (1, K))
        tiles[f"B{i}"] = tile(0, ks, ns, b_t, (K, N))
    return tiles


def _chain(t, triple):
    """The chain's commands on the tiles ``t`` of :func:`_chain_tiles`: every result feeds the next one."""
    C, C2 = t["C"], t["C2"]
    ab = lambda i: {"src0": t[f"A{i}"], "src1": t[f"B{i}"]}
    chain = [({"opcode": Opcode.TGEMV, "dst": C, **ab(0)}, "C = A0 B0"),
             ({"opcode": Opcode.TGEMV_ACC, "dst": C, **ab(1), INIT: C}, "C += A1 B1 (in place)"),
             ({"opcode": Opcode.TGEMV_ACC, "dst": C, **ab(2), INIT: C}, "C += A2 B2 (in place)"),
             ({"opcode": Opcode.TGEMV_ACC, "dst": C2, **ab(0), INIT: C}, "C2 = C + A0 B0"),
             ({"opcode": Opcode.TGEMV_ACC, "dst": C, **ab(1), INIT: C2}, "C = C2 + A1 B1"),
             ({"opcode": Opcode.TGEMV_BIAS, "dst": C, **ab(2), INIT: C}, "C = C + A2 B2 (bias in place)"),
             ({"opcode": Opcode.TGEMV_ACC, "dst": C, **ab(0), INIT: C}, "C += A0 B0 (in place)")]
    return [(cmd, _label(cmd, what)) for cmd, what in chain]


@cocotb.test()
async def gemv_accumulate(dut):
    """The seed's example: TGEMV_ACC c1 = c0 + a b, a 1 x 16 half A, a 16 x 16 half B, 1 x 16 float
    accumulators (at the seed's TASSIGN addresses 0x1000, 0x2000, 0x3000, 0x4000 when the UB holds them,
    else packed from 0), and TGEMV / TGEMV_BIAS on the same operands. Then, per triple, a chain on one
    accumulator tile C: TGEMV, TGEMV_ACC in place twice, TGEMV_ACC into C2 and back into C (C_in and C_out
    apart), TGEMV_BIAS in place, TGEMV_ACC in place; every result feeds the next command. The chains of
    several triples share a batch when their tiles fit the UB together."""
    h = await Harness.start(dut)
    rng = random.Random(h.rng.random())
    await _fresh_ub(h)
    nrng = np.random.default_rng(h.rng.randrange(1 << 32))
    if h.config.ub_bytes >= 0x4000 + 3 * 64:
        bases = (0x1000, 0x2000, 0x3000, 0x4000, 0x4040, 0x4080)
    else:
        bases = (0x000, 0x040, 0x240, 0x280, 0x2C0, 0x300)
    a, b = tile(bases[0], 1, 16, F16), tile(bases[1], 16, 16, F16)
    c0, c1, c2, c3 = (tile(x, 1, 16, F32) for x in bases[2:])
    await h.ub_load(a["base"], nrng.standard_normal(16).astype(np.float16).tobytes())
    await h.ub_load(b["base"], nrng.standard_normal((16, 16)).astype(np.float16).tobytes())
    await h.ub_load(c0["base"], nrng.standard_normal(16).astype(np.float32).tobytes())
    await _run_batch(h, [({"opcode": Opcode.TGEMV_ACC, "dst": c1, "src0": a, "src1": b, INIT: c0},
                          "seed TGEMV_ACC(c1, c0, a, b): 1x16 half x 16x16 half + 1x16 float"),
                         ({"opcode": Opcode.TGEMV, "dst": c2, "src0": a, "src1": b}, "seed shapes TGEMV"),
                         ({"opcode": Opcode.TGEMV_BIAS, "dst": c3, "src0": a, "src1": b, INIT: c0},
                          "seed shapes TGEMV_BIAS")])
    P = h.config.gemv_partial_sums
    placed, chains = {}, []

    async def flush():
        for t in placed.values():
            await h.ub_load(t["base"], values(rng, t["dtype"], t["rows"] * t["cols"], specials_rate=0.02).tobytes())
        await _run_batch(h, [item for chain in chains for item in chain])
        placed.clear()
        chains.clear()

    for n, triple in enumerate(triples(h.config.profile)):
        L = lanes(h.config, triple[2])
        K, N = rng.choice([L + 1, P + 1, 13]), rng.choice([L - 1 or 1, L + 1, 2 * L + 1])
        # the random padding can make a chain too big for a small UB alone (K 13, N 9 of fp32 with the
        # largest pads: 4.5 KiB); draw it again then, and give up the padding after 10 draws
        for draw in range(11):
            new = {f"{n}.{k}": v for k, v in _chain_tiles(rng, triple, K, N, padded=draw < 10).items()}
            if place(rng, dict(new), h.config.ub_bytes):
                break
        if not place(rng, {**placed, **new}, h.config.ub_bytes):
            await flush()
            assert place(rng, new, h.config.ub_bytes), f"no room for a chain of {triple_name(triple)} K{K} N{N}"
        placed.update(new)
        chains.append(_chain({k.split(".")[1]: v for k, v in new.items()}, triple))
    await flush()


@cocotb.test()
async def gemv_backpressure(dut):
    """Random stalls on the command and response streams (and AXI) between back-to-back GEMV commands of
    random triples, variants, shapes and data."""
    h = await Harness.start(dut, backpressure=True)
    rng = random.Random(h.rng.random())
    await _fresh_ub(h)
    specs = [(rng.choice(GEMV_OPS), rng.choice(triples(h.config.profile)), rng.randint(1, 20), rng.randint(1, 20),
              rng.choice(["random", "random", "specials"]), None, True) for _ in range(int(h.params.get("rounds", "12")))]
    assert await _run_specs(h, rng, specs)


#: ``gemv_error``'s groups of statuses (``gemv_commands.error_cases`` has the cases of each).
ERROR_GROUPS = {
    "types": (Status.DTYPE_INVALID, Status.DTYPE_UNSUPPORTED, Status.DTYPE_MISMATCH),
    "placement": (Status.UB_MISALIGNED, Status.UB_OUT_OF_RANGE, Status.VALID_EXCEEDS_STATIC),
    "shapes": (Status.LAYOUT_UNSUPPORTED, Status.SHAPE_MISMATCH, Status.DIM_OUT_OF_RANGE),
}


@cocotb.test()
@cocotb.parametrize(group=list(ERROR_GROUPS))
async def gemv_error(dut, group):
    """Every case of every status of the group (``gemv_commands.error_cases``): the golden's status, then the
    legal command it was made from, with its C moved to a region of its own (so that a write by the illegal
    command cannot hide under it); the whole UB is compared after every four cases."""
    h = await Harness.start(dut)
    rng = random.Random(h.rng.random())
    await _fresh_ub(h)
    cases = error_cases(h.config)
    items = []
    for status in ERROR_GROUPS[group]:
        assert cases.get(status), f"no case for {status.name}"
        for what, bad, good in cases[status]:
            label = f"error {status.name}: {what}"
            rsp = await h.run(bad, label=label)
            assert rsp["status"] == status, f"{what}: {rsp['status']!r}, expected {status.name}"
            good = {**good, "dst": {**good["dst"], "base": 0x300 + 0x20 * len(items)}}
            await _load(h, fill(rng, good))
            items += [(bad, label), (good, f"after {label}")]
            rsp = await h.run(good, label=f"after {label}")
            assert rsp["status"] == Status.OK, f"after {label}: {rsp}"
            if len(items) == 8:
                await _check_ub(h, items)
                items = []
    await _check_ub(h, items)


def _type_combos():
    """(opcode, C, A, B, init) type combinations: every C and A type with B = A, every B with a (C, A) of
    a triple, every C with an (A, B) of a triple (TGEMV), and every C_in / bias type with each triple
    (TGEMV_ACC, TGEMV_BIAS); the triples of both profiles are among them."""
    every = list(DType)
    legal = sorted({t for p in GEMV_TRIPLES for t in GEMV_TRIPLES[p]}, key=lambda t: [d.value for d in t])
    out = [(Opcode.TGEMV, c, a, a, None) for c in every for a in every]
    out += [(Opcode.TGEMV, c, a, b, None) for c, a, _ in legal for b in every]
    out += [(Opcode.TGEMV, c, a, b, None) for _, a, b in legal for c in every]
    out += [(op, c, a, b, i) for op in GEMV_OPS[1:] for c, a, b in legal for i in every]
    return list(dict.fromkeys(out))


@cocotb.test()
async def gemv_types(dut):
    """The profile's type rules: every (C, A, B) and C_in / bias type combination of ``_type_combos`` at a
    legal shape; the RTL's status must be the golden's (DTYPE_UNSUPPORTED, DTYPE_MISMATCH or OK), and the
    accepted ones run bit-exactly (in batches)."""
    h = await Harness.start(dut)
    rng = random.Random(h.rng.random())
    await _fresh_ub(h)
    legal, illegal = [], 0
    for op, c, a, b, i in _type_combos():
        cmd = gemv_command(rng, h.config, op, (c, a, b), 3, 5, pad_n=1)
        if i is not None:
            cmd[INIT]["dtype"] = i
        if check(cmd, h.config) == Status.OK:
            legal.append((op, (c, a, b), 3, 5, "random", None, True))
        else:
            await h.run(cmd, label="type sweep (illegal)")     # the harness compares with the golden's
            illegal += 1
    assert legal and illegal
    assert {t for _, t, *_ in legal} == set(GEMV_TRIPLES[h.config.profile])
    assert await _run_specs(h, rng, legal)
