"""The transfer engine cut in two (rtl/engines/transfer/pipes.py): :class:`GmToUbEngine` runs TLOAD and
MGATHER, :class:`UbToGmEngine` runs TSTORE, each against the golden machine over the whole UB and a GM window
(rtl_engine_bench, AXI protocol monitor, random stalls), in exactly the cycles :class:`TransferEngine` takes
for the same commands on the same memory model, using only its own AXI channels."""

import random

import pytest

from rtl.config import preset
from rtl.engines.transfer import store_overlap
from rtl.engines.transfer.engine import TransferEngine
from rtl.engines.transfer.pipes import GmToUbEngine, UbToGmEngine
from rtl.isa import DType, DTYPE_BYTES, Opcode, Status

from test_rtl_mgather import OUT, _case, _load_and_gather
from test_rtl_transfer import ProtocolBench, random_stream, random_transfer, wide_stream
from rtl_engine_bench import most_in_flight

GM_BYTES = 1 << 20


def _transfers(rng, cfg, n):
    """``n`` random TLOAD geometries (tile, GM region at a random ``src``) as in test_rtl_transfer."""
    out = []
    for _ in range(n):
        t, gm = random_transfer(rng, cfg)
        out.append((t, gm(DTYPE_BYTES[t["dtype"]] * rng.randrange(0, 20000))))
    return out


def _run(cls, cfg, seed, commands, gm_init, ub_init=None, windows=(), stall=0.3):
    """``commands`` on a bench of ``cls`` (every one compared with the golden); returns each command's
    cycles and the AXI address channels it used (the slave model logs every AR and AW burst). The slave's
    random stalls come from one generator that its read and write processes share, so which stall lands
    where depends on the simulator's process order: cycles are compared with ``stall=0``."""
    bench = ProtocolBench(cfg, cls, seed=seed, stall=stall, gm_windows=list(windows))
    bench.gm_write(0, gm_init)
    if ub_init is not None:
        bench.ub_write(0, ub_init)

    async def stimulus(b):
        for c in commands:
            if isinstance(c, tuple):                    # an MGATHER case: (idx, t_idx, cmd)
                await _load_and_gather(b, cfg, 0, *c)
            else:
                assert (await b.execute(c)).status == Status.OK

    bench.run(stimulus)
    used = {n for n, log in (("AR", bench.axi.ar), ("AW", bench.axi.aw)) if log}
    return [r.cycles for r in bench.results], used


@pytest.mark.parametrize("seed", [1, 2])
def test_gm_to_ub_engine_equals_transfer_engine(seed):
    cfg = preset("small")
    rng = random.Random(seed)
    gm = bytes(rng.randrange(256) for _ in range(GM_BYTES))
    loads = [{"opcode": Opcode.TLOAD, "dst": t, "gm": g} for t, g in _transfers(rng, cfg, 4)]
    gathers = [_case(rng, cfg, dt) for dt in (DType.FP16, DType.INT8, DType.FP32)]
    commands = loads[:2] + gathers + loads[2:]
    _, used = _run(GmToUbEngine, cfg, seed, commands, gm)             # with random stalls
    split, _ = _run(GmToUbEngine, cfg, seed, commands, gm, stall=0)
    whole, _ = _run(TransferEngine, cfg, seed, commands, gm, stall=0)
    assert split == whole and len(split) == 4 + 2 * 3
    assert used == {"AR"}


@pytest.mark.parametrize("seed", [3, 4])
def test_ub_to_gm_engine_equals_transfer_engine(seed):
    cfg = preset("small")
    rng = random.Random(seed)
    ub = bytes(rng.randrange(256) for _ in range(cfg.ub_bytes))
    stores = [{"opcode": Opcode.TSTORE, "src0": t, "gm": dict(g, base=OUT + g["base"] % 0x40000)}
              for t, g in _transfers(rng, cfg, 5)]
    window = [(OUT, GM_BYTES - OUT)]
    _, used = _run(UbToGmEngine, cfg, seed, stores, bytes(GM_BYTES), ub, window)      # with random stalls
    split, _ = _run(UbToGmEngine, cfg, seed, stores, bytes(GM_BYTES), ub, window, stall=0)
    whole, _ = _run(TransferEngine, cfg, seed, stores, bytes(GM_BYTES), ub, window, stall=0)
    assert split == whole and len(split) == 5
    assert used == {"AW"}


def test_split_engines_signatures():
    """What each half needs of the unit: the load half the UB write port and one read port (MGATHER's
    indices), the store half one read port and no write port; both the AXI master (different channels)."""
    cfg = preset("small")
    load, store = GmToUbEngine(cfg), UbToGmEngine(cfg)
    assert "ub_wr" in load.signature.members and "ub_wr" not in store.signature.members
    assert len(load.ub_rd) == len(store.ub_rd) == 1
    assert set(load.opcodes) | set(store.opcodes) == set(TransferEngine.opcodes)
    assert not set(load.opcodes) & set(store.opcodes)


# ---- TSTOREs back to back (``UbToGmEngine(overlap=True)``: rtl/engines/transfer/store_overlap.py) ----------

def _stores(rng, cfg, n, empty=0.0):
    """``n`` random TSTOREs into GM at ``OUT`` and above (``empty``: the share with an empty region)."""
    return random_stream(rng, cfg, Opcode.TSTORE, n, OUT, empty)


def _store_stream(cfg, cmds, seed, *, stall=0.3, faults=(), in_flight=None, b_stall=None):
    """``cmds`` back to back on ``UbToGmEngine(overlap=True)`` (``EngineBench.execute_overlapped``: each
    started at ``release`` unless its GM region overlaps one in flight; dones in order with the golden status,
    each TSTORE's GM bytes in place at its ``done``, GM and the UB equal to the commands run one at a time at
    the end), the AXI monitor on, write ``faults`` (GM windows answered SLVERR). Returns ``(cycles,
    overlapped, trace)``."""
    from golden.faults import GmFaults
    rng = random.Random(seed)
    bench = ProtocolBench(cfg, UbToGmEngine(cfg, overlap=True), seed=seed, stall=stall,
                          gm_windows=[(OUT, GM_BYTES - OUT)])
    bench.axi.write_faults = list(faults)
    bench.axi.b_stall = stall if b_stall is None else b_stall   # (B responses late too: a ``done`` waits)
    bench.golden.faults = GmFaults(write=tuple(faults))
    bench.ub_write(0, rng.randbytes(cfg.ub_bytes))
    bench.gm_write(0, rng.randbytes(GM_BYTES))
    out, trace = {}, []

    async def stimulus(b):
        out["cycles"], out["overlapped"] = await b.execute_overlapped(cmds, trace=trace, in_flight=in_flight)
    bench.run(stimulus)
    assert most_in_flight(trace) <= store_overlap.OLDER + 1, trace
    return out["cycles"], out["overlapped"], trace


@pytest.mark.parametrize("seed", [0, 1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)])
def test_tstore_overlap_random_stream(seed):
    """40 random TSTOREs (every type and layout, strided GM lines, some empty regions, whose ``done`` must
    wait for the older one's) back to back with random AXI stalls, and from seed 1 on GM windows whose writes
    fail (the TSTOREs that meet one answer AXI_WRITE_ERROR, the others OK: each error goes to its own
    instruction, the older one's or the running one's): the GM bytes, statuses and order equal one at a time,
    and at least a third started while the previous one waited for its B responses."""
    cfg = preset("small")
    rng = random.Random(100 + seed)
    cmds = _stores(rng, cfg, 40, empty=0.1)
    faults = []
    if seed:        # a byte of the first or the last line of every fifth TSTORE (a late B: the older one's)
        for c in cmds[::5]:
            g = c["gm"]
            line = rng.choice([0, g["rows"] - 1]) if g["rows"] else 0
            a = g["base"] + line * g["row_stride"]
            faults.append((a, a + 1))
    _, overlapped, _ = _store_stream(cfg, cmds, seed, faults=faults)
    assert overlapped >= len(cmds) // 3, overlapped


def test_tstore_overlap_keeps_w_busy():
    """A stream of independent 8 x 16 fp32 TSTOREs (a 64-byte line = 4 beats on ``small``) with a slave that
    never stalls: the engine takes each next TSTORE while the previous one's last lines are still on W, so W
    carries a beat in every cycle from the first TSTORE's first beat to the last one's last, and the
    stream takes the first TSTORE's cycles plus its 32 beats for each other one (the B response's wait and
    the next one's setup and fill hidden), exactly."""
    cfg = preset("small")
    n, beats = 6, 8 * 64 // cfg.axi_data_bytes
    cmds = wide_stream(Opcode.TSTORE, n, OUT)
    one, _, _ = _store_stream(cfg, cmds[:1], 5, stall=0)
    cycles, overlapped, _ = _store_stream(cfg, cmds, 5, stall=0)
    assert overlapped == n - 1
    assert cycles == one + (n - 1) * beats, (cycles, one, beats)


def _tile_stores(n, row_stride):
    """``n`` independent TSTOREs of 4 x 8 fp32 tiles (128 bytes: 4 beats on ``default``), tile ``k`` at UB
    ``512 k`` and GM ``OUT + 4096 k``, its 32-byte rows ``row_stride`` apart."""
    return [{"opcode": Opcode.TSTORE,
             "src0": {"base": 512 * k, "rows": 4, "cols": 8, "valid_rows": 4, "valid_cols": 8, "dtype": DType.FP32,
                      "layout": 0},
             "gm": {"base": OUT + 4096 * k, "rows": 4, "cols": 8, "row_stride": row_stride, "dtype": DType.FP32}}
            for k in range(n)]


def test_tstore_overlap_three_in_flight():
    """Independent 4 x 8 fp32 TSTOREs (128 bytes: 4 beats on ``default``'s 32-byte bus) with a slave that never
    stalls: shorter on the bus than the way from a ``start`` to the release, so each next one starts as soon as
    the walkers are done with the previous one, while the two before it still wait for their B responses
    (``OLDER`` = 2 behind the running one; with one, each third start waited for the first one's ``done``).
    The starts are evenly spaced, three are in flight at once, and the last one is done as many cycles after
    its start as one alone. (On ``small``'s 16-byte bus the same tiles take 8 beats: W, not the release,
    spaces them, as in :func:`test_tstore_overlap_keeps_w_busy`.)"""
    cfg = preset("default")
    n = 8
    cmds = _tile_stores(n, 32)
    one, _, _ = _store_stream(cfg, cmds[:1], 7, stall=0)
    cycles, overlapped, trace = _store_stream(cfg, cmds, 7, stall=0)
    starts = [cy for ev, _, cy in trace if ev == "start"]
    spacing = starts[1] - starts[0]
    assert overlapped == n - 1 and most_in_flight(trace) == store_overlap.OLDER + 1, trace
    assert all(b - a == spacing for a, b in zip(starts, starts[1:])), trace
    assert cycles == (n - 1) * spacing + one, (cycles, spacing, one, trace)


def test_tstore_overlap_errors_with_late_b():
    """The stream of :func:`test_tstore_overlap_three_in_flight` with B responses held back (each waits another
    cycle with probability 0.8), so that the two older TSTOREs are both owed responses while the running one
    sends its bursts, and write faults on the last line of the 2nd TSTORE and the first line of the 5th: a B
    response goes to the oldest TSTORE owed one, so exactly those two answer AXI_WRITE_ERROR (the bench
    compares every status with the golden machine's), at most three in flight."""
    cfg = preset("default")
    n = 8
    cmds = _tile_stores(n, 64)
    last, first = cmds[1]["gm"]["base"] + 3 * 64, cmds[4]["gm"]["base"]
    _, overlapped, trace = _store_stream(cfg, cmds, 8, stall=0, b_stall=0.8,
                                         faults=[(last, last + 1), (first, first + 1)])
    assert overlapped == n - 1 and most_in_flight(trace) == store_overlap.OLDER + 1, trace
