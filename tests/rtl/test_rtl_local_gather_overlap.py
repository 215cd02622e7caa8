"""LocalGatherEngine built with ``overlap`` (the concurrent unit, ``rtl/engines/local_gather/overlap.py``) on
``EngineBench.execute_overlapped``: each command starts at ``release`` unless it conflicts with one in flight,
``done`` must come once per command in start order with its destination bytes in the UB, and the UB after
the stream must equal the golden machine's after all of them in order. Random streams of every element
type, chunks shorter than half a word, of half a word, of a word and longer, straddling offsets, chunk
counts that are no multiple of 16, destination rows that are not word-aligned (spilled words), empty
destinations, with and without write stalls; the stream's cycles against the model (each instruction after
the first costs its issue's cycles, not its pipeline's fill)."""

import random

import numpy as np
import pytest

from golden.check import check
from golden.machine import Machine
from golden.errors import UndefinedResult
from rtl.config import preset
from rtl.engines.local_gather.engine import LocalGatherEngine
from rtl.isa import Command, DType, DTYPE_BYTES, Opcode, Status, UB_ALIGN, decode, encode

from rtl_engine_bench import EngineBench, most_in_flight

E = LocalGatherEngine


def _tile(base, rows, cols, dtype, valid):
    return {"base": base, "rows": rows, "cols": cols, "valid_rows": valid[0], "valid_cols": valid[1],
            "dtype": dtype, "layout": 0}


def _pad(nbytes):
    return -(-nbytes // UB_ALIGN) * UB_ALIGN


#: Chunk sizes ``B`` against the word ``W``: shorter than half a word, half a word, a word, longer.
CHUNK_KINDS = ("short", "half", "word", "long")


def _chunk(rng, W, kind):
    """A chunk size ``B`` of ``kind`` (:data:`CHUNK_KINDS`) and an element type whose ``nepi = B / size`` is
    legal (a power of two up to 32), or None."""
    B = {"short": rng.choice([1, 2, 4, W // 4]), "half": W // 2, "word": W,
         "long": rng.choice([2 * W, 4 * W, 8 * W])}[kind]
    dtypes = [t for t in DType if B % DTYPE_BYTES[t] == 0 and B // DTYPE_BYTES[t] <= 32]
    if not dtypes:
        return None
    dtype = rng.choice(dtypes)
    return B, dtype


def region_command(rng, config, base, size, *, kind=None, empty=False):
    """A legal LOCAL_GATHER whose three tiles lie in ``[base, base + size)`` and do not overlap one another,
    with its index array (offsets in range, many of
    them straddling a source word). ``kind``: the chunk size (:data:`CHUNK_KINDS`, random by default);
    ``empty``: no rows or no indices. Returns ``(cmd, idx)`` or None when it does not fit."""
    W = config.ub_word_bytes
    kind = kind or rng.choice(CHUNK_KINDS)
    got = _chunk(rng, W, kind)
    if got is None:
        return None
    B, dtype = got
    esz = DTYPE_BYTES[dtype]
    nepi = B // esz
    R = 16 * rng.choice([1, 1, 1, 2])
    X = rng.choice([1, 1, 2, 3])
    nv = rng.choice([0, rng.randrange(1, 16 * X + 1), rng.randrange(1, 16 * X + 1), rng.randrange(1, 4)])
    n = nv or 16 * X
    C = nepi + rng.choice([0, 1, 3, 8, 20, 40])
    src_cols = C + rng.choice([0, 0, 1, 3])
    # (pads of a few elements: destination rows that are not word-aligned, a spilled word at each row's end)
    dst_cols = n * nepi + rng.choice([0, 0, 1, 3, 5])
    idx_cols = X + rng.choice([0, 1])
    valid_rows, valid_x, valid_n = R, X, n
    if empty:
        if rng.random() < 0.5:
            valid_rows = 0
        else:
            nv, valid_x, valid_n = 0, 0, 0
    tiles = [(R, dst_cols, esz), (R, src_cols, esz), (R, idx_cols, 2)]
    need = sum(_pad(r * c * s) for r, c, s in tiles)
    if need > size:
        return None
    slack = (size - need) // UB_ALIGN
    cuts = sorted(rng.randrange(slack + 1) for _ in range(3))
    order = rng.sample(range(3), 3)
    bases, pos, prev = [0] * 3, base, 0
    for which, cut in zip(order, cuts):
        pos += (cut - prev) * UB_ALIGN
        prev = cut
        bases[which] = pos
        r, c, s = tiles[which]
        pos += _pad(r * c * s)
    idx = np.array([[rng.randrange(C - nepi + 1) for _ in range(idx_cols)] for _ in range(R)], np.uint16)
    cmd = {"opcode": Opcode.LOCAL_GATHER, "nepi_log2": nepi.bit_length() - 1, "num_valid": nv,
           "dst": _tile(bases[0], R, dst_cols, dtype, (valid_rows, valid_n * nepi)),
           "src0": _tile(bases[1], R, src_cols, dtype, (valid_rows, C)),
           "src1": _tile(bases[2], R, idx_cols, DType.UINT16, (valid_rows, valid_x))}
    if check(cmd, config) != Status.OK:
        return None
    return cmd, idx


def _span(tile):
    size = DTYPE_BYTES[DType(tile["dtype"])]
    return tile["base"], tile["base"] + tile["rows"] * tile["cols"] * size


def _defined(config, ub0, cmds):
    """True when the golden machine, from ``ub0`` with every index array of ``cmds`` [(cmd, idx)] written
    (as the stream's bench does before the first start), runs every command to a defined result: an index
    tile that an earlier command's destination, or a later command's index array, overwrites must still
    hold offsets in range."""
    machine = Machine(config)
    machine.ub[:] = np.frombuffer(ub0, np.uint8)
    for cmd, idx in cmds:
        base = cmd["src1"]["base"]
        machine.ub[base:base + idx.nbytes] = np.frombuffer(idx.tobytes(), np.uint8)
    try:
        for cmd, _ in cmds:
            assert machine.execute(cmd) == Status.OK
    except UndefinedResult:
        return False
    return True


def random_stream(config, rng, n, ub0, regions=3, *, empty=0.1, same_region=0.1, kinds=CHUNK_KINDS):
    """``n`` commands [(cmd, idx)], command ``k`` in UB region ``k mod regions`` (or, with probability
    ``same_region``, the previous one's: a hazard the bench waits for), an empty destination with
    probability ``empty`` (and, unless it is 0, as every tenth command from the sixth); later commands in a region read and overwrite earlier ones' bytes. Every
    command's result is defined when the stream runs from ``ub0`` (:func:`_defined`)."""
    size = config.ub_bytes // regions // UB_ALIGN * UB_ALIGN
    cmds = []
    region = 0
    while len(cmds) < n:
        region = region if cmds and rng.random() < same_region else len(cmds) % regions
        # (the kind drawn first and kept while shapes are drawn: the kinds that fit a small region seldom
        # would be rare otherwise)
        kind, void = rng.choice(kinds), empty and (rng.random() < empty or len(cmds) % 10 == 5)
        for _ in range(500):
            got = region_command(rng, config, region * size, size, kind=kind, empty=void)
            if got is not None and _defined(config, ub0, cmds + [got]):
                cmds.append(got)
                break
    return cmds


def run_stream(config, cmds, ub0, *, write_stalls=False, in_flight=None, scarce=False):
    """Run ``cmds`` [(cmd, idx)] back to back on ``LocalGatherEngine(config, overlap=True)`` from the UB
    ``ub0`` (every index array written first); returns ``(cycles, overlapped, trace)``. Also holds the engine
    to ``IN_FLIGHT``: never more commands started and not done. ``scarce``: the write port takes a word in a
    quarter of the cycles (``EngineBench(write_stalls="scarce")``: the write queue stays nearly full, so the
    issue waits for its ``room`` most of the time, a last row's flush among them)."""
    bench = EngineBench(config, E(config, overlap=True), timeout=100_000,
                        write_stalls="scarce" if scarce else write_stalls)
    bench.ub_write(0, ub0)
    out, trace = {}, []

    async def stimulus(b):
        for cmd, idx in cmds:
            b.ub_write(cmd["src1"]["base"], idx.tobytes())
        out["cycles"], out["overlapped"] = await b.execute_overlapped([c for c, _ in cmds], trace=trace,
                                                                      in_flight=in_flight)
    bench.run(stimulus)
    most = most_in_flight(trace)
    assert most <= E.IN_FLIGHT, (most, trace)
    return out["cycles"], out["overlapped"], trace


def decoded(cmd):
    """``cmd`` as the cycle model takes it: the nested dict ``rtl.isa.decode`` gives for its word."""
    return decode(Command, encode(Command, cmd))


def is_empty(cmd):
    """No rows, or no indices: nothing to gather."""
    return cmd["src0"]["valid_rows"] == 0 or (cmd["num_valid"] == 0 and cmd["src1"]["valid_cols"] == 0)


def chunk_bytes(cmd):
    """``B = nepi * size``."""
    return (1 << cmd["nepi_log2"]) * DTYPE_BYTES[DType(cmd["dst"]["dtype"])]


#: (preset, its changes, write stalls, seed, regions) of the random streams: ``small`` (16-byte words,
#: 4 KiB: short rows), ``small`` with 16 KiB (blocks of 16 chunks, two groups), ``default`` (32-byte words).
STREAMS = [("small", {}, False, 0, 3), ("small", {}, True, 1, 3), ("small", {"ub_bytes": 16384}, False, 2, 3),
           ("small", {"ub_bytes": 16384}, True, 3, 3), ("default", {}, False, 4, 3), ("default", {}, True, 5, 3)]
#: More seeds of each, ``slow``.
STREAMS_SLOW = [(n, kw, st, seed + 10 * r, g) for r in range(1, 4) for n, kw, st, seed, g in STREAMS]


@pytest.mark.parametrize("name, changes, stalls, seed, regions",
                         STREAMS + [pytest.param(*c, marks=pytest.mark.slow) for c in STREAMS_SLOW])
def test_overlap_random_stream(name, changes, stalls, seed, regions):
    """30 random LOCAL_GATHERs (every element type; chunks shorter than half a word, of half a word, of a word,
    longer; straddling offsets; chunk counts no multiple of 16; destination rows that spill into the next
    word; empty destinations; a command now and then in the previous one's region, which waits) back to
    back: bit-exact against the golden machine, dones in order, at most ``IN_FLIGHT`` in the engine, and
    most of them started while another was in flight. ``stalls``: the write port refuses words."""
    config = preset(name, ub_write_queues=True, **changes)
    rng = random.Random(seed)
    ub0 = rng.randbytes(config.ub_bytes)
    cmds = random_stream(config, rng, 30, ub0, regions)
    W = config.ub_word_bytes
    chunks = {chunk_bytes(c) for c, _ in cmds if not is_empty(c)}
    assert any(b < W // 2 for b in chunks) and {W // 2, W} <= chunks and any(b > W for b in chunks), chunks
    assert any(is_empty(c) for c, _ in cmds)
    assert any((c["dst"]["cols"] * DTYPE_BYTES[DType(c["dst"]["dtype"])]) % W for c, _ in cmds)
    _, overlapped, _ = run_stream(config, cmds, ub0, write_stalls=stalls)
    assert overlapped >= len(cmds) // 2, (overlapped, len(cmds))


@pytest.mark.parametrize("name, seed", [("small", 6), ("default", 7)])
def test_overlap_scarce_write_port(name, seed):
    """A random stream on a write port that takes a word in a quarter of the cycles only: the write queue
    stays nearly full and the issue (a last row's flush included) waits for its ``room`` most of the time,
    dones come long after the last slots. Bit-exact, dones in order, at most ``IN_FLIGHT`` in the engine."""
    config = preset(name, ub_write_queues=True)
    rng = random.Random(seed)
    ub0 = rng.randbytes(config.ub_bytes)
    cmds = random_stream(config, rng, 24, ub0, 3)
    _, overlapped, _ = run_stream(config, cmds, ub0, scarce=True)
    assert overlapped >= len(cmds) // 2, (overlapped, len(cmds))


def stream_cycles(config, cmds):
    """The model of a stream of independent non-empty LOCAL_GATHERs each started at ``release``, with a write
    port that is always ready: the first one's :meth:`LocalGatherEngine.cycles`; each later one starts
    ``RELEASE_CYCLES`` after the previous one's last slot, so it adds its own cycles less the pipeline behind
    its last slot (``PIPELINE`` cycles to its last write, hidden behind the next one's slots) plus
    ``RELEASE_CYCLES``: ``cycles - PIPELINE + RELEASE_CYCLES``; the last one's ``done`` comes ``PIPELINE``
    after its last slot, as alone."""
    total = E.cycles(config, decoded(cmds[0]))
    for c in cmds[1:]:
        total += E.cycles(config, decoded(c)) - E.PIPELINE + E.RELEASE_CYCLES
    return total


@pytest.mark.parametrize("name, changes", [("small", {"ub_bytes": 16384}), ("default", {})])
def test_overlap_stream_cycles(name, changes):
    """A stream of 12 independent LOCAL_GATHERs of every chunk kind (spilling rows among them): from the
    first ``start`` to the last ``done`` exactly :func:`stream_cycles`, each later one costing
    ``PIPELINE - RELEASE_CYCLES`` (7) cycles fewer than alone; every one started while the previous one was
    in flight."""
    config = preset(name, ub_write_queues=True, **changes)
    rng = random.Random(21)
    ub0 = rng.randbytes(config.ub_bytes)
    cmds = random_stream(config, rng, 12, ub0, 3, empty=0, same_region=0)
    assert any((c["dst"]["cols"] * DTYPE_BYTES[DType(c["dst"]["dtype"])]) % config.ub_word_bytes
               for c, _ in cmds)
    cycles, overlapped, trace = run_stream(config, cmds, ub0)
    plain = [c for c, _ in cmds]
    assert overlapped == len(cmds) - 1, trace
    assert cycles == stream_cycles(config, plain), (cycles, stream_cycles(config, plain), trace)
    alone = sum(E.cycles(config, decoded(c)) for c in plain)
    assert alone - cycles == (len(cmds) - 1) * (E.PIPELINE - E.RELEASE_CYCLES)
    # each start comes RELEASE_CYCLES after the previous one's last slot: its cycles less the pipeline
    starts = [cy for ev, _, cy in trace if ev == "start"]
    for k in range(1, len(plain)):
        issue = E.cycles(config, decoded(plain[k - 1])) - E.PIPELINE + 1
        assert starts[k] - starts[k - 1] == issue - 1 + E.RELEASE_CYCLES, (k, starts)


def test_overlap_empty_waits():
    """Empty destinations (no rows, no indices) right behind gathers still in flight, and two in a row: each
    is done after the older ones, in start order; alone one is done ``EMPTY_CYCLES`` after its start."""
    config = preset("small", ub_write_queues=True)
    rng = random.Random(5)
    ub0 = rng.randbytes(config.ub_bytes)
    size = config.ub_bytes // 3 // UB_ALIGN * UB_ALIGN
    plan = [k % 4 in (1, 2) for k in range(12)]
    cmds = []
    while len(cmds) < len(plan):
        k = len(cmds)
        got = region_command(rng, config, k % 3 * size, size, kind="word", empty=plan[k])
        if got is not None and _defined(config, ub0, cmds + [got]):
            cmds.append(got)
    assert [is_empty(c) for c, _ in cmds] == plan
    _, overlapped, trace = run_stream(config, cmds, ub0)
    assert overlapped >= 6, trace
    events = {(ev, k): cy for ev, k, cy in trace}
    starts = [events[("start", k)] for k in range(len(cmds))]
    for k in range(1, len(cmds)):
        if plan[k] and not plan[k - 1]:
            # started while the gather before it was in flight, done after it
            assert starts[k] < events[("done", k - 1)] < events[("done", k)], (k, trace)
    (cmd, idx), = [cmds[1]]
    single, _, trace1 = run_stream(config, [(cmd, idx)], ub0)
    assert single == E.EMPTY_CYCLES, trace1


@pytest.mark.parametrize("limit", [1, None])
def test_overlap_in_flight_gate(monkeypatch, limit):
    """The ``IN_FLIGHT`` gate of ``release``: 16 short gathers (no empty destination: an empty one is not
    counted, its ``done`` waits instead) on a write port that takes a word in a quarter of the cycles, so
    that words wait in the write queue behind every last slot. With ``IN_FLIGHT`` = 1 the engine never
    holds two, nothing overlaps, and the stream is still bit-exact; as built (3), the write queue's room
    keeps it at two (``LocalGatherEngine.IN_FLIGHT``'s comment), which the stream reaches."""
    if limit is not None:
        monkeypatch.setattr(E, "IN_FLIGHT", limit)
    config = preset("small", ub_write_queues=True)
    rng = random.Random(8)
    ub0 = rng.randbytes(config.ub_bytes)
    cmds = random_stream(config, rng, 16, ub0, 4, empty=0, same_region=0, kinds=("short", "half"))
    _, overlapped, trace = run_stream(config, cmds, ub0, scarce=True)
    if limit == 1:
        assert most_in_flight(trace) == 1 and overlapped == 0, trace
    else:
        assert most_in_flight(trace) == 2 and overlapped == len(cmds) - 1, trace
