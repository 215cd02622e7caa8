"""TLOADs back to back in the GM -> UB half (``GmToUbEngine(overlap=True)``: rtl/engines/transfer/load_overlap.py)
against the golden machine (``EngineBench.execute_overlapped``: each command started at ``release`` unless it
conflicts with one in flight, an MGATHER only once nothing is in flight; ``done`` once per command in start
order with the golden status; every command's UB bytes in place at its ``done``; the whole UB equal to the
commands run one at a time at the end), with the AXI protocol monitor, random stalls and read faults."""

import random

import numpy as np
import pytest

from rtl.config import preset
from rtl.engines.transfer.pipes import GmToUbEngine
from rtl.isa import DType, Opcode

from test_rtl_mgather import _case
from test_rtl_transfer import ProtocolBench, random_stream, wide_stream

GM_BYTES = 1 << 20
#: GM of the TLOADs (random bytes); MGATHER's tables sit at test_rtl_mgather.TABLE (0x40000), above.
LOAD_GM = 0x1000


def _loads(rng, cfg, n, empty=0.0, gathers=0):
    """``n`` random TLOADs from GM at ``LOAD_GM`` and above (``empty``: the share with an empty region), and
    ``gathers`` MGATHERs among them (``(cmd, idx, t_idx)``: their index tiles are written into the UB first)."""
    cmds = random_stream(rng, cfg, Opcode.TLOAD, n, LOAD_GM, empty)
    for _ in range(gathers):
        idx, t_idx, cmd = _case(rng, cfg, rng.choice([DType.FP16, DType.INT8, DType.FP32]))
        cmds.insert(rng.randrange(1, len(cmds)), (cmd, idx, t_idx))
    return cmds


def _faults(rng, cmds):
    """Read faults on the first or last line of every fifth TLOAD, but not of one whose destination an MGATHER
    reads as its index tile: the failed TLOAD leaves its destination undefined, and so the gather's result
    (the golden machine keeps the bytes, the engine writes the words before the error)."""
    from golden.access import access
    index_reads = [r for c in cmds if isinstance(c, tuple) for r in access(c[0]).ub_reads]
    faults = []
    for c in [c for c in cmds if isinstance(c, dict)][::5]:
        if any(lo < hi2 and lo2 < hi for lo, hi in access(c).ub_writes for lo2, hi2 in index_reads):
            continue
        g = c["gm"]
        line = rng.choice([0, g["rows"] - 1]) if g["rows"] else 0
        a = g["base"] + line * g["row_stride"]
        faults.append((a, a + 1))
    return faults


def _load_stream(cfg, cmds, seed, *, stall=0.3, faults=(), in_flight=None, images=None, write_stalls=False):
    """``cmds`` back to back on ``GmToUbEngine(overlap=True)`` (module docstring), read ``faults`` (GM windows
    answered SLVERR), the UB write port refusing words at random with ``write_stalls`` (``EngineBench``).
    Returns ``(cycles, overlapped, trace)``; ``images`` (a dict) gets the UB before (``ub0``) and after
    (``ub``) and GM (``gm``), as numpy bytes, and the golden statuses (``status``)."""
    from golden.faults import GmFaults
    rng = random.Random(seed)
    bench = ProtocolBench(cfg, GmToUbEngine(cfg, overlap=True), seed=seed, stall=stall, gm_windows=[],
                          write_stalls=write_stalls)
    bench.axi.read_faults = list(faults)
    bench.golden.faults = GmFaults(read=tuple(faults))
    ub0, gm = rng.randbytes(cfg.ub_bytes), rng.randbytes(GM_BYTES)
    bench.ub_write(0, ub0)
    bench.gm_write(0, gm)
    plain = []
    for c in cmds:
        if isinstance(c, tuple):                    # an MGATHER: its index tile into the UB (backdoor)
            cmd, idx, t_idx = c
            rows, cols = idx.shape
            pitch = t_idx["cols"] * 4
            for r in range(rows):
                bench.ub_write(t_idx["base"] + r * pitch, idx[r].astype(np.uint32).tobytes())
            c = cmd
        plain.append(c)
    out, trace = {}, []
    if images is not None:
        import copy
        golden = copy.deepcopy(bench.golden)
        images["status"] = [golden.execute(c, on_undefined="mask") for c in plain]

    async def stimulus(b):
        out["cycles"], out["overlapped"] = await b.execute_overlapped(plain, trace=trace, in_flight=in_flight)
        out["ub"] = b.ub_read().copy()
    bench.run(stimulus)
    if images is not None:
        images.update(ub0=np.frombuffer(ub0, np.uint8), ub=out["ub"], gm=np.frombuffer(gm, np.uint8))
    return out["cycles"], out["overlapped"], trace


# (seed 2 catches a missed last AR of the older one in the start cycle, seed 4 a release before the
# address-side walker is done: docs/architecture.md, "TLOADs back to back")
@pytest.mark.parametrize("seed", [0, 1, 2, 4] + [pytest.param(s, marks=pytest.mark.slow) for s in (3, 5, 6, 7)])
def test_tload_overlap_random_stream(seed):
    """40 random TLOADs (every type and layout, strided GM lines, some empty regions, whose ``done`` must wait
    for the older one's) and 3 MGATHERs (never started while a TLOAD is in the engine) back to back with random
    AXI stalls, and from seed 1 on GM windows whose reads fail on the first or last line of every fifth TLOAD
    (each error goes to its own instruction: the older one's or the running one's; the other one's UB bytes
    must all be written): UB bytes, statuses and order equal one at a time, and at least a third started
    while the previous one was still in the engine."""
    cfg = preset("small")
    rng = random.Random(200 + seed)
    cmds = _loads(rng, cfg, 40, empty=0.1, gathers=3)
    _, overlapped, trace = _load_stream(cfg, cmds, seed, faults=_faults(rng, cmds) if seed else ())
    assert overlapped >= len(cmds) // 3, overlapped


def test_tload_overlap_keeps_r_busy():
    """A stream of independent 8 x 16 fp32 TLOADs (a 64-byte line = 4 beats on ``small``) with a slave that
    never stalls: the engine takes each next TLOAD while the previous one's last lines are still arriving, so
    its AR goes out early enough that R carries a beat in every cycle from the first TLOAD's first beat to the
    last one's last, and the stream takes the first TLOAD's cycles plus its 32 beats for each other one (the
    memory's latency and the next one's setup hidden), exactly."""
    cfg = preset("small")
    n, beats = 6, 8 * 64 // cfg.axi_data_bytes
    cmds = wide_stream(Opcode.TLOAD, n, LOAD_GM)
    one, _, _ = _load_stream(cfg, cmds[:1], 5, stall=0)
    cycles, overlapped, _ = _load_stream(cfg, cmds, 5, stall=0)
    assert overlapped == n - 1
    assert cycles == one + (n - 1) * beats, (cycles, one, beats)


def test_tload_overlap_error_is_its_own():
    """The stream of ``test_tload_overlap_keeps_r_busy`` with a read fault on the first beat of the third TLOAD
    and on the last beat of the fifth: the third's first beat is popped right behind the second's last, while
    the second's last words are still forming, and the fifth's error beat comes while the sixth's AR is out.
    Only those two answer AXI_READ_ERROR; every other TLOAD's bytes are all written (execute_overlapped
    compares them at each ``done``)."""
    cfg = preset("small")
    n = 6
    # 8 x 12 fp32 from a GM base 4 bytes into a beat: 48-byte lines over 4 beats, written to 3 UB words of
    # which the last is formed a cycle after the line's last beat is taken
    t = lambda k: {"base": 512 * k, "rows": 8, "cols": 12, "valid_rows": 8, "valid_cols": 12,
                   "dtype": DType.FP32, "layout": 0}
    cmds = [{"opcode": Opcode.TLOAD, "dst": t(k),
             "gm": {"base": LOAD_GM + 4096 * k + 4, "rows": 8, "cols": 12, "row_stride": 64, "dtype": DType.FP32}}
            for k in range(n)]
    first = cmds[2]["gm"]["base"]
    last = cmds[4]["gm"]["base"] + 7 * 64 + 47
    _, overlapped, trace = _load_stream(cfg, cmds, 6, stall=0, faults=[(first, first + 1), (last, last + 1)])
    assert overlapped == n - 1


def test_tload_overlap_error_suppresses_its_own_later_words():
    """What the engine documents beyond the golden machine (which calls a failed TLOAD's destination
    undefined): an R error suppresses the UB writes of its beat and every later one *of its own TLOAD*, back
    to back too. In a stream of wide TLOADs, a fault on the first beat of the third one's line 3: its lines 0-2
    are written, lines 3-7 keep the UB's old bytes, and the TLOADs before and after it (in the engine with it)
    are written whole."""
    cfg = preset("small")
    cmds = wide_stream(Opcode.TLOAD, 5, LOAD_GM)
    bad = cmds[2]["gm"]["base"] + 3 * 64
    img = {}
    _, overlapped, _ = _load_stream(cfg, cmds, 8, stall=0, faults=[(bad, bad + 1)], images=img)
    assert overlapped == 4
    for k, c in enumerate(cmds):
        for line in range(8):
            ub = c["dst"]["base"] + 64 * line
            gm = c["gm"]["base"] + 64 * line
            want = img["ub0"] if (k == 2 and line >= 3) else img["gm"]
            at = ub if want is img["ub0"] else gm
            assert (img["ub"][ub:ub + 64] == want[at:at + 64]).all(), (k, line)


def test_mgather_between_tloads_overlaps_both():
    """An MGATHER between two TLOADs that share no byte with it starts while the first TLOAD is still in the
    engine, and the second TLOAD while the MGATHER is (the engine releases an MGATHER once IndexLines has
    queued its last line): both start before the previous one's ``done``, and every byte is as one at a time."""
    from golden.access import access, hazards
    cfg = preset("small")
    rng = random.Random(7)
    idx, t_idx, g = _case(rng, cfg, DType.FP16)
    # two TLOADs of 4 x 8 fp32 whose tiles conflict with nothing of the gather's
    taken = access(g).ub_reads + access(g).ub_writes
    free = [b for b in range(0, cfg.ub_bytes - 128, 128) if not any(lo < b + 128 and b < hi for lo, hi in taken)]
    tile = lambda b: {"base": b, "rows": 4, "cols": 8, "valid_rows": 4, "valid_cols": 8, "dtype": DType.FP32,
                      "layout": 0}
    loads = [{"opcode": Opcode.TLOAD, "dst": tile(free[k]),
              "gm": {"base": LOAD_GM + 4096 * k, "rows": 4, "cols": 8, "row_stride": 32, "dtype": DType.FP32}}
             for k in range(2)]
    cmds = [loads[0], (g, idx, t_idx), loads[1]]
    assert not any(hazards(access(a), access(b)) for a, b in [(loads[0], g), (g, loads[1]), (loads[0], loads[1])])
    _, overlapped, trace = _load_stream(cfg, cmds, 3, stall=0)
    assert overlapped == 2
    ev = {(kind, k): c for kind, k, c in trace}
    assert ev["start", 1] < ev["done", 0] and ev["start", 2] < ev["done", 1], trace


#: The UB bytes at the top that hold the index tiles of :func:`_mixed`'s MGATHERs (nothing writes them).
INDEX_AREA = 1024


def _gather_at(rng, cfg, dst_lo, dst_hi, idx_lo, idx_hi, max_bytes):
    """A random MGATHER (``test_rtl_mgather._case``: row or element mode, every OOB mode but UNDEFINED) whose
    destination and index tile each fit ``max_bytes`` and lie at random 32-byte aligned places in
    ``[dst_lo, dst_hi)`` and ``[idx_lo, idx_hi)``: ``(cmd, idx, t_idx)``."""
    from rtl.isa import DTYPE_BYTES
    while True:
        dtype = rng.choice([DType.FP16, DType.INT8, DType.FP32])
        idx, t_idx, cmd = _case(rng, cfg, dtype, max_rows=rng.choice([1, 2, 3, 5]))
        d = cmd["dst"]
        nd, ni = d["rows"] * d["cols"] * DTYPE_BYTES[dtype], t_idx["rows"] * t_idx["cols"] * 4
        if nd <= max_bytes and ni <= max_bytes:
            break
    t_idx = dict(t_idx, base=idx_lo + 32 * rng.randrange((idx_hi - idx_lo - ni) // 32 + 1))
    cmd = dict(cmd, src0=t_idx, dst=dict(d, base=dst_lo + 32 * rng.randrange((dst_hi - dst_lo - nd) // 32 + 1)))
    return cmd, idx, t_idx


def _mixed(rng, cfg, n, gathers=0.6, empty=0.1):
    """``n`` commands for the GM -> UB half: MGATHER_ROW / MGATHER_ELEM (a share ``gathers``, some of them
    with an empty destination) and TLOADs (some empty), every destination below :data:`INDEX_AREA`'s bytes at
    the top of the UB and every index tile in them, in separate places (so that a failed instruction's
    undefined destination is never another's index tile)."""
    from golden.access import access
    top = cfg.ub_bytes - INDEX_AREA
    cmds, slot = [], 0
    while len(cmds) < n:
        if rng.random() < gathers:
            per = INDEX_AREA // 4
            cmd, idx, t_idx = _gather_at(rng, cfg, 0, top, top + per * (slot % 4), top + per * (slot % 4 + 1), per)
            slot += 1
            if rng.random() < empty:
                cmd = dict(cmd, dst=dict(cmd["dst"], valid_rows=0), src0=dict(cmd["src0"], valid_rows=0))
                t_idx = cmd["src0"]
            cmds.append((cmd, idx, t_idx))
        else:
            c = random_stream(rng, cfg, Opcode.TLOAD, 1, LOAD_GM, empty)[0]
            if all(hi <= top for _, hi in access(c).ub_writes):
                cmds.append(c)
    return cmds


def _table_faults(rng, seed):
    """Read faults in MGATHER's tables (``test_rtl_mgather.TABLE`` and up): from seed 1 on, two 8-byte windows
    within the first 1.5 KiB, where most tables' first rows lie."""
    from test_rtl_mgather import TABLE
    if not seed:
        return []
    return [(a, a + 8) for a in (TABLE + 8 * rng.randrange(192) for _ in range(2))]


def _gather_overlaps(trace, cmds):
    """The starts of a command while another was in flight, where either is an MGATHER."""
    flight, count = [], 0
    for kind, k, _ in trace:
        if kind == "done":
            flight.remove(k)
            continue
        is_g = lambda j: isinstance(cmds[j], tuple)
        count += bool(flight) and (is_g(k) or any(is_g(j) for j in flight))
        flight.append(k)
    return count


# (seeds whose faults the golden machine answers with AXI_READ_ERROR: small 4 three TLOADs and an
# MGATHER_ELEM, default 2 three TLOADs and eight MGATHER_ELEMs, default 3 a TLOAD, an MGATHER_ROW and an
# MGATHER_ELEM; every slow one at least one MGATHER)
@pytest.mark.parametrize("config,seed", [("small", 0), ("small", 4), ("default", 2), ("default", 3)]
                         + [pytest.param("small", s, marks=pytest.mark.slow) for s in (5, 6, 7, 8)]
                         + [pytest.param("default", s, marks=pytest.mark.slow) for s in (9, 10)])
def test_mgather_overlap_random_stream(config, seed):
    """30 commands, most of them MGATHERs (row and element mode, CLAMP / WRAP / ZERO, random, clustered and
    sorted indices, some empty destinations) and the rest TLOADs, back to back with random AXI stalls and,
    from seed 1 on, read faults in the tables and on TLOAD lines: UB bytes, statuses and order equal one at a
    time (``execute_overlapped`` checks each command's bytes at its ``done``), and MGATHERs overlap their
    neighbours (a start while an MGATHER is in the engine, or of an MGATHER while another command is)."""
    cfg = preset(config)
    rng = random.Random(300 + seed)
    cmds = _mixed(rng, cfg, 30)
    faults = (_faults(rng, cmds) + _table_faults(rng, seed)) if seed else []
    _, overlapped, trace = _load_stream(cfg, cmds, seed, faults=faults)
    assert _gather_overlaps(trace, cmds) >= 6, trace


@pytest.mark.parametrize("config,seed", [("small", 4), ("default", 2)])
def test_overlap_read_faults_under_write_stalls(config, seed):
    """Read faults while the UB write port refuses a quarter of the cycles (``write_stalls``: the port shared
    with the other pipes in the concurrent unit): the stream of :func:`test_mgather_overlap_random_stream`
    with faults in the tables and on TLOAD lines (the same seeds' streams: TLOADs and MGATHERs that fail). A
    word held in the write queue, or behind it in the realigner or the placer, when its own or the other
    instruction's error beat comes must still be written or dropped by its own instruction's flag: UB bytes
    (nothing outside a destination, every byte of a command that succeeds), statuses and order equal one at a
    time; some commands fail, and MGATHERs overlap their neighbours."""
    from rtl.isa import Status
    cfg = preset(config, ub_write_queues=True)
    rng = random.Random(300 + seed)
    cmds = _mixed(rng, cfg, 30)
    faults = _faults(rng, cmds) + _table_faults(rng, seed)
    images = {}
    _, overlapped, trace = _load_stream(cfg, cmds, seed, faults=faults, write_stalls=True, images=images)
    assert _gather_overlaps(trace, cmds) >= 6, trace
    # the faults must meet commands, or this proves nothing about errors (the bench compared each status)
    failed = [isinstance(c, tuple) for c, st in zip(cmds, images["status"]) if st == Status.AXI_READ_ERROR]
    assert True in failed and False in failed, images["status"]     # an MGATHER and a TLOAD


def _row_gathers(cfg, n, rows=8, cols=16, seed=0):
    """``n`` independent MGATHER_ROWs of ``rows`` rows of ``cols`` fp32 (64-byte rows: 4 beats on ``small``)
    from a 64-row table at ``test_rtl_mgather.TABLE``, each with its own index tile (random rows) and
    destination: ``(cmd, idx, t_idx)`` as :func:`_load_stream` takes them."""
    from test_rtl_mgather import TABLE
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        t_idx = {"base": 2048 + 64 * k, "rows": rows, "cols": 1, "valid_rows": rows, "valid_cols": 1,
                 "dtype": DType.INT32}
        dst = {"base": 512 * (k % 4), "rows": rows, "cols": cols, "valid_rows": rows, "valid_cols": cols,
               "dtype": DType.FP32}
        gm = {"base": TABLE, "rows": 64, "cols": cols, "row_stride": 4 * cols, "dtype": DType.FP32}
        idx = rng.integers(0, 64, (rows, 1)).astype(np.uint32)
        out.append(({"opcode": Opcode.MGATHER_ROW, "oob": 0, "dst": dst, "src0": t_idx, "gm": gm}, idx, t_idx))
    return out


def test_mgather_overlap_keeps_r_busy():
    """A stream of independent 8-row MGATHER_ROWs of 64-byte rows with a slave that never stalls: the engine
    takes each next one once the previous one's last line is queued, so its index reads and resolution
    (``IndexLines.FIRST_LINE_CYCLES``) run under the previous one's beats and R carries a beat in every cycle
    from the first MGATHER's first beat to the last one's last: the stream takes the first one's cycles plus
    its 32 beats for each other one, exactly. (Their destinations repeat every fourth: a write-after-write the
    bench holds back, as the unit's scoreboard does, so at most four share the stream without a wait.)"""
    cfg = preset("small")
    n, beats = 4, 8 * 64 // cfg.axi_data_bytes
    cmds = _row_gathers(cfg, n)
    one, _, _ = _load_stream(cfg, cmds[:1], 5, stall=0)
    cycles, overlapped, _ = _load_stream(cfg, cmds, 5, stall=0)
    assert overlapped == n - 1
    assert cycles == one + (n - 1) * beats, (cycles, one, beats)


@pytest.mark.parametrize("engine", ["transfer", "gm_to_ub"])
def test_serial_error_suppresses_later_words(engine):
    """The serial engines (``TransferEngine``, the unit's; ``GmToUbEngine`` without overlap) hold to the same
    documented rule one instruction at a time: an R error on the first beat of line 3 of an 8-line TLOAD
    suppresses that beat's UB writes and every later one (lines 3-7 keep the UB's old bytes), lines 0-2 are
    written, the status is AXI_READ_ERROR, and the next TLOAD is written whole."""
    from golden.faults import GmFaults
    from rtl.engines.transfer.engine import TransferEngine
    from rtl.isa import Status
    cfg = preset("small")
    eng = TransferEngine(cfg) if engine == "transfer" else GmToUbEngine(cfg)
    cmds = wide_stream(Opcode.TLOAD, 2, LOAD_GM)
    bad = cmds[0]["gm"]["base"] + 3 * 64
    bench = ProtocolBench(cfg, eng, seed=9, stall=0, gm_windows=[])
    bench.axi.read_faults = [(bad, bad + 1)]
    bench.golden.faults = GmFaults(read=((bad, bad + 1),))
    rng = random.Random(9)
    ub0, gm = rng.randbytes(cfg.ub_bytes), rng.randbytes(GM_BYTES)
    bench.ub_write(0, ub0)
    bench.gm_write(0, gm)
    out = {}

    async def stimulus(b):
        out["status"] = [(await b.execute(c)).status for c in cmds]
        out["ub"] = b.ub_read().copy()
    bench.run(stimulus)
    assert out["status"] == [Status.AXI_READ_ERROR, Status.OK], out["status"]
    for k, c in enumerate(cmds):
        for line in range(8):
            ub, g = c["dst"]["base"] + 64 * line, c["gm"]["base"] + 64 * line
            want = ub0[ub:ub + 64] if (k == 0 and line >= 3) else gm[g:g + 64]
            assert bytes(out["ub"][ub:ub + 64]) == want, (k, line)
