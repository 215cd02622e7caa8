"""TransferEngine + UnifiedBuffer in Amaranth's simulator against a Python AXI slave (rtl_engine_bench):
random 2-D transfers (both layouts, odd strides and bases), GM bytes compared, AXI rules checked on every
burst (and valid / payload held until ready on AR, AW, W); every command also checked against the golden
machine (whole UB, whole 1 MiB of GM)."""

import random

import numpy as np
import pytest

from rtl.config import preset
from rtl.engines.transfer.engine import TransferEngine
from rtl.engines.transfer.mgather import IndexLines
from rtl.engines.transfer.pipes import GmToUbEngine
from rtl.engines.transfer.placer import ElementPlacer
from rtl.engines.transfer.realign import Realigner
from rtl.isa import DType, DTYPE_BYTES, Layout, OobMode, Opcode, Status, decode, encode, Command
from rtl.lib.contract import ContractError
from rtl.top import VectorUnit

from rtl_engine_bench import EngineBench

GM_BYTES = 1 << 20      # the AXI slave model's memory


class ProtocolBench(EngineBench):
    """:class:`rtl_engine_bench.EngineBench` plus a monitor of the engine's AXI master outputs: once
    ``arvalid`` / ``awvalid`` / ``wvalid`` is high without its ``ready``, it stays high and its payload
    holds until the handshake (AXI4 A3.2.1). A violation fails the simulation at once."""

    async def monitor(self, ctx):
        axi = self.engine.axi
        channels = {
            "AR": (axi.arvalid, axi.arready, [axi.araddr, axi.arlen, axi.arsize, axi.arburst, axi.arid]),
            "AW": (axi.awvalid, axi.awready, [axi.awaddr, axi.awlen, axi.awsize, axi.awburst, axi.awid]),
            "W": (axi.wvalid, axi.wready, [axi.wdata, axi.wstrb, axi.wlast]),
        }
        held = {}
        signals = [x for valid, ready, payload in channels.values() for x in (valid, ready, *payload)]
        cycle = 0
        while True:
            values = iter((await ctx.tick().sample(*signals))[2:])
            cycle += 1
            for name, (_, _, payload) in channels.items():
                valid, ready = next(values), next(values)
                now = tuple(int(next(values)) for _ in payload)
                if name in held:
                    assert valid, f"{name}VALID dropped without a handshake (cycle {cycle})"
                    assert now == held[name], f"{name} payload changed while waiting for READY (cycle {cycle})"
                held.pop(name, None)
                if valid and not ready:
                    held[name] = now


def random_transfer(rng, cfg):
    """A random TLOAD / TSTORE geometry: the tile (any type and layout, a valid region inside a static shape
    up to 11 x 39, at a 32-byte-aligned base) and ``gm(base)``, its GM region at ``base`` (an odd row stride,
    4 KiB more for some)."""
    dtype = rng.choice(list(DType))
    size = DTYPE_BYTES[dtype]
    layout = rng.choice(list(Layout))
    rows, cols = rng.randrange(1, 12), rng.randrange(1, 40)
    vr, vc = rng.randrange(1, rows + 1), rng.randrange(1, cols + 1)
    base = 32 * rng.randrange(0, (cfg.ub_bytes - rows * cols * size) // 32)
    elems = vr if layout == Layout.COL_MAJOR else vc
    stride = elems * size + size * rng.randrange(0, 50) + rng.choice([0, 4096])
    t = {"base": base, "rows": rows, "cols": cols, "valid_rows": vr, "valid_cols": vc, "dtype": dtype,
         "layout": layout}
    return t, lambda b: {"base": b, "rows": vr, "cols": vc, "row_stride": stride, "dtype": dtype}


def random_stream(rng, cfg, opcode, n, gm_base, empty=0.0):
    """``n`` random TLOADs or TSTOREs (:func:`random_transfer`) with GM regions at ``gm_base`` and above
    (``empty``: the share with an empty region)."""
    slot = "dst" if opcode == Opcode.TLOAD else "src0"
    cmds = []
    for _ in range(n):
        t, gm = random_transfer(rng, cfg)
        g = gm(gm_base + DTYPE_BYTES[t["dtype"]] * rng.randrange(0, 40000))
        if rng.random() < empty:
            t, g = dict(t, valid_rows=0), dict(g, rows=0)
        cmds.append({"opcode": opcode, slot: t, "gm": g})
    return cmds


def wide_stream(opcode, n, gm_base):
    """``n`` independent TLOADs or TSTOREs of 8 x 16 fp32 tiles (64-byte lines: 4 beats on ``small``), tile
    ``k`` at UB ``512 k`` and GM ``gm_base + 4096 k``: a stream whose bus should stay busy."""
    slot = "dst" if opcode == Opcode.TLOAD else "src0"
    return [{"opcode": opcode,
             slot: {"base": 512 * k, "rows": 8, "cols": 16, "valid_rows": 8, "valid_cols": 16,
                    "dtype": DType.FP32, "layout": 0},
             "gm": {"base": gm_base + 4096 * k, "rows": 8, "cols": 16, "row_stride": 64, "dtype": DType.FP32}}
            for k in range(n)]


def _lines(base, stride, lines, line_bytes):
    return [(base + l * stride, line_bytes) for l in range(lines)]


@pytest.mark.parametrize("seed,go_delay", [(1, 2), (2, 2), (3, 7)])
def test_transfer_engine_block(seed, go_delay):
    """``go_delay`` 7: the checker's verdict comes late; nothing may be written or requested before it."""
    cfg = preset("small")
    rng = random.Random(seed)
    bench = ProtocolBench(cfg, TransferEngine, seed=seed, gm_windows=[(0, GM_BYTES)], go_delay=go_delay)
    bench.gm_write(0, bytes(rng.randrange(256) for _ in range(GM_BYTES)))
    slave = bench.axi
    expected = bytearray(slave.mem)

    async def stimulus(b):
        for _ in range(6):
            t, gm = random_transfer(rng, cfg)
            size = DTYPE_BYTES[t["dtype"]]
            vr, vc = t["valid_rows"], t["valid_cols"]
            lines, elems = (vc, vr) if t["layout"] == Layout.COL_MAJOR else (vr, vc)
            stride = gm(0)["row_stride"]
            src = size * rng.randrange(0, 20000)
            dst = 0x80000 + size * rng.randrange(0, 20000)
            assert (await b.execute({"opcode": Opcode.TLOAD, "dst": t, "gm": gm(src)})).status == Status.OK
            assert (await b.execute({"opcode": Opcode.TSTORE, "src0": t, "gm": gm(dst)})).status == Status.OK
            for (s, n), (d, _) in zip(_lines(src, stride, lines, elems * size), _lines(dst, stride, lines, elems * size)):
                expected[d:d + n] = expected[s:s + n]
            assert slave.errors == []
            assert slave.mem == expected, "GM differs after TLOAD/TSTORE round trip"

    bench.run(stimulus)


def test_mgather_then_tstore_block():
    """MGATHER reads its index tile through the UB port TSTORE uses: a following TSTORE must not see
    those index words (regression: they used to land in the TSTORE buffer)."""
    cfg = preset("small")
    bench = ProtocolBench(cfg, TransferEngine, seed=3, stall=0.4, gm_windows=[(0x80000, 4096)])
    slave = bench.axi
    idx = np.array([0, 5, 1023, 1024, 70000, 0xFFFFFFFF, 512, 3], np.uint32)
    bench.gm_write(0x1000, idx.tobytes())
    bench.gm_write(0x40000, bytes((k * 7) & 0xFF for k in range(0x40000, 0x40000 + 1024 * 128)))

    async def stimulus(b):
        run = b.execute
        t_idx = {"base": 0, "rows": 8, "cols": 1, "valid_rows": 8, "valid_cols": 1, "dtype": DType.INT32}
        gm_idx = {"base": 0x1000, "rows": 8, "cols": 1, "row_stride": 4, "dtype": DType.INT32}
        assert (await run({"opcode": Opcode.TLOAD, "dst": t_idx, "gm": gm_idx})).status == Status.OK
        dst = {"base": 0x400, "rows": 8, "cols": 64, "valid_rows": 8, "valid_cols": 64, "dtype": DType.FP16}
        table = {"base": 0x40000, "rows": 1024, "cols": 64, "row_stride": 128, "dtype": DType.FP16}
        assert (await run({"opcode": Opcode.MGATHER_ROW, "oob": OobMode.CLAMP, "dst": dst, "src0": t_idx,
                           "gm": table})).status == Status.OK
        whole = {"base": 0, "rows": 16, "cols": 256, "valid_rows": 16, "valid_cols": 256, "dtype": DType.UINT8}
        out = {"base": 0x80000, "rows": 16, "cols": 256, "row_stride": 256, "dtype": DType.UINT8}
        assert (await run({"opcode": Opcode.TSTORE, "src0": whole, "gm": out})).status == Status.OK
        img = bytes(slave.mem[0x80000:0x80000 + 4096])
        assert img[:32] == idx.tobytes()
        for i, u in enumerate(idx):
            r = min(int(u), 1023)
            assert img[0x400 + 128 * i:0x400 + 128 * (i + 1)] == bytes(slave.mem[0x40000 + 128 * r:0x40000 + 128 * (r + 1)])
        assert slave.errors == []

    bench.run(stimulus)


def test_transfer_long_lines_block():
    """Lines of many bursts (up to 4000 bytes, so several burst chunks and 4 KiB boundaries per line, at odd GM
    offsets) both ways; and the burst split: every burst stays inside its chunk of
    ``burst_chunk_beats`` beats, and a line has exactly one burst per chunk it touches."""
    from rtl.engines.transfer.walker import burst_chunk_beats
    cfg = preset("small")
    W, chunk = cfg.axi_data_bytes, cfg.axi_data_bytes * burst_chunk_beats(cfg)
    rng = random.Random(9)
    bench = ProtocolBench(cfg, TransferEngine, seed=9, gm_windows=[(0, GM_BYTES)])
    bench.gm_write(0, bytes(rng.randrange(256) for _ in range(GM_BYTES)))

    async def stimulus(b):
        for cols, dtype, start in ((1000, DType.FP32, 4 * 1021), (1500, DType.INT16, 2 * 3001),
                                   (64, DType.UINT8, 4095), (600, DType.FP32, 0x3F0)):
            size = DTYPE_BYTES[dtype]
            t = {"base": 0, "rows": 1, "cols": cols, "valid_rows": 1, "valid_cols": cols, "dtype": dtype}
            for op, slot, base in ((Opcode.TLOAD, "dst", start), (Opcode.TSTORE, "src0", 0x80000 + start + 4 * size)):
                g = {"base": base, "rows": 1, "cols": cols, "row_stride": cols * size, "dtype": dtype}
                r = await b.execute({"opcode": op, slot: t, "gm": g})
                assert r.status == Status.OK
                bursts = r.reads if op == Opcode.TLOAD else r.writes
                first, end = base // W * W, -(-(base + cols * size) // W) * W
                assert [a for a, _ in bursts] == sorted(a for a, _ in bursts) and bursts[0][0] == first
                assert sum(n for _, n in bursts) * W == end - first, "beats of the line, each once"
                for a, n in bursts:
                    assert a // chunk == (a + n * W - 1) // chunk, f"burst {a:#x}+{n} leaves its chunk"
                assert len(bursts) == (end - 1) // chunk - first // chunk + 1

    bench.run(stimulus)


def _decoded(cmd):
    """``cmd`` as the cycle model takes it: every field, as :func:`rtl.isa.decode` gives it."""
    return decode(Command, encode(Command, cmd))


@pytest.mark.parametrize("overlap", [False, True], ids=["transfer", "gm_to_ub_overlap"])
@pytest.mark.parametrize("go_delay", [VectorUnit.GO_DELAY, 1])
def test_transfer_cycle_model(go_delay, overlap):
    """The cycle model against the RTL, GM answering without stalls: an empty region of every opcode is
    ``done`` ``TransferEngine.cycles`` cycles after ``start`` (and no other command has an exact figure);
    a one-burst TLOAD, MGATHER_ROW (CLAMP and WRAP) and a one-element MGATHER_ELEM take
    ``fixed_overhead`` + the memory's latency + the beats - 1 (so the named latencies FIRST_BURST_CYCLES,
    GATHER_FIRST_BURST_CYCLES, IndexLines.WRAP_CYCLES, LOAD_WRITE_CYCLES and ELEM_WRITE_CYCLES hold), with
    ``go`` at the unit's delay and before the first burst is ready. In the unit the fixed overheads are
    the README's (TLOAD 7, MGATHER_ROW 15), and MGATHER's index path hides the checker's delay. The GM ->
    UB half built with ``overlap`` (the concurrent unit's: MGATHER's lines wait for a registered copy of
    ``go``) runs its opcodes in the same cycles."""
    cfg = preset("small")
    W = cfg.axi_data_bytes
    latency = 20                        # the AXI model's: a burst's first beat ``latency + 1`` cycles after its AR
    eng = GmToUbEngine(cfg, overlap=True) if overlap else TransferEngine
    bench = ProtocolBench(cfg, eng, stall=0.0, latency=latency, go_delay=go_delay,
                          gm_windows=[(0x80000, 4096)])
    rng = random.Random(4)
    bench.gm_write(0x1000, bytes(rng.randrange(256) for _ in range(1024)))
    bench.ub_write(0xC00, np.array([3, 1 << 20, 2, 0], np.uint32).tobytes())
    t = {"base": 0, "rows": 1, "cols": 8, "valid_rows": 1, "valid_cols": 8, "dtype": DType.FP32}
    gm = {"base": 0x1000, "rows": 1, "cols": 8, "row_stride": 32, "dtype": DType.FP32}
    t_idx = {"base": 0xC00, "rows": 1, "cols": 1, "valid_rows": 1, "valid_cols": 1, "dtype": DType.UINT32}
    table = {"base": 0x1000, "rows": 4, "cols": 8, "row_stride": 32, "dtype": DType.FP32}
    empty_t, empty_idx = dict(t, valid_rows=0), dict(t_idx, valid_rows=0)
    empty = [{"opcode": Opcode.TLOAD, "dst": empty_t, "gm": dict(gm, rows=0)},
             {"opcode": Opcode.TSTORE, "src0": empty_t, "gm": dict(gm, rows=0)},
             {"opcode": Opcode.MGATHER_ROW, "oob": OobMode.CLAMP, "dst": dict(t, rows=1, valid_rows=0),
              "src0": empty_idx, "gm": table},
             {"opcode": Opcode.MGATHER_ELEM, "oob": OobMode.CLAMP, "dst": dict(t, cols=1, valid_rows=0, valid_cols=1),
              "src0": empty_idx, "gm": table}]
    reads = [({"opcode": Opcode.TLOAD, "dst": t, "gm": gm}, 32 // W),
             ({"opcode": Opcode.MGATHER_ROW, "oob": OobMode.CLAMP, "dst": t, "src0": t_idx, "gm": table}, 32 // W),
             ({"opcode": Opcode.MGATHER_ROW, "oob": OobMode.WRAP, "dst": t, "src0": t_idx, "gm": table}, 32 // W),
             ({"opcode": Opcode.MGATHER_ELEM, "oob": OobMode.CLAMP, "dst": dict(t, cols=1, valid_cols=1),
               "src0": t_idx, "gm": table}, 1)]

    if overlap:                         # (the GM -> UB half has no TSTORE)
        empty = [c for c in empty if c["opcode"] != Opcode.TSTORE]

    async def stimulus(b):
        for cmd in empty:
            r = await b.execute(cmd)
            assert r.status == Status.OK and r.cycles == TransferEngine.cycles(cfg, _decoded(cmd)), cmd["opcode"]
        for cmd, beats in reads:
            r = await b.execute(cmd)
            assert TransferEngine.cycles(cfg, _decoded(cmd)) is None
            assert r.status == Status.OK and len(r.reads) == 1 and r.reads[0][1] == beats, (cmd["opcode"], r.reads)
            want = TransferEngine.fixed_overhead(cfg, _decoded(cmd), go_delay) + (latency + 1) + beats - 1
            assert r.cycles == want, (cmd["opcode"], cmd.get("oob"), r.cycles, want)

    bench.run(stimulus)
    tload, row = _decoded(reads[0][0]), _decoded(reads[1][0])
    assert TransferEngine.fixed_overhead(cfg, tload, VectorUnit.GO_DELAY) == 7          # README, "Performance"
    assert TransferEngine.fixed_overhead(cfg, row, VectorUnit.GO_DELAY) == 15
    # MGATHER's first line (and its zero lines and runs, which wait for ``go`` too) comes after ``go``
    assert IndexLines.FIRST_LINE_CYCLES >= VectorUnit.GO_DELAY


def test_gm_to_ub_go_copy_costs_no_cycle():
    """MGATHER's zero lines and runs need no AXI read, so only ``go`` holds them: in the GM -> UB half built
    with ``overlap`` they wait for the engine's registered copy of ``go`` (``LOAD_GO_COPY_CYCLES``), which has
    risen by the first line (``IndexLines.FIRST_LINE_CYCLES``). With ``go`` at the unit's delay, a ZERO-mode
    MGATHER whose index is out of bounds takes the serial engine's cycles; element mode's one run is written
    ``ElementPlacer.LATENCY`` cycles after the first line."""
    cfg = preset("small")
    t = {"base": 0, "rows": 1, "cols": 8, "valid_rows": 1, "valid_cols": 8, "dtype": DType.FP32}
    idx = {"base": 0xC20, "rows": 1, "cols": 1, "valid_rows": 1, "valid_cols": 1, "dtype": DType.UINT32}
    table = {"base": 0x1000, "rows": 4, "cols": 8, "row_stride": 32, "dtype": DType.FP32}
    zeros = [{"opcode": Opcode.MGATHER_ROW, "oob": OobMode.ZERO, "dst": t, "src0": idx, "gm": table},
             {"opcode": Opcode.MGATHER_ELEM, "oob": OobMode.ZERO, "dst": dict(t, cols=1, valid_cols=1),
              "src0": idx, "gm": table}]
    cycles = {}
    for name, eng in (("serial", TransferEngine), ("overlap", GmToUbEngine(cfg, overlap=True))):
        bench = ProtocolBench(cfg, eng, stall=0.0, go_delay=VectorUnit.GO_DELAY, gm_windows=[])
        bench.ub_write(0xC20, np.array([1 << 20], np.uint32).tobytes())      # outside the 4-row table

        async def stimulus(b):
            for cmd in zeros:
                r = await b.execute(cmd)
                assert r.status == Status.OK and r.reads == [], (name, cmd["opcode"], r.reads)
                cycles[name, cmd["opcode"]] = r.cycles

        bench.run(stimulus)
    assert cycles["overlap", Opcode.MGATHER_ROW] == cycles["serial", Opcode.MGATHER_ROW], cycles
    for name in ("serial", "overlap"):
        assert cycles[name, Opcode.MGATHER_ELEM] == IndexLines.FIRST_LINE_CYCLES + ElementPlacer.LATENCY, cycles


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_transfer_contract(monkeypatch):
    """The couplings TransferEngine checks when it is built: the realigner and the element placer read the
    beat buffer's ``last`` the cycle after a pop, as the buffer gives it; the write queue's latency covers
    both pipelines and its depth leaves room for one more word."""
    cfg = preset("small")
    TransferEngine(cfg)._MustUse__silence = True      # built only to see it build
    with monkeypatch.context() as mp:
        mp.setattr(Realigner, "TAKE_TO_WORD", 2)
        with pytest.raises(ContractError, match="TAKE_TO_WORD"):
            TransferEngine(cfg)
    with monkeypatch.context() as mp:
        mp.setattr(ElementPlacer, "BEAT_DELAY", 2)
        with pytest.raises(ContractError, match="BEAT_DELAY"):
            TransferEngine(cfg)
    with monkeypatch.context() as mp:
        mp.setattr(ElementPlacer, "LATENCY", TransferEngine.WRITE_QUEUE_LATENCY + 1)
        with pytest.raises(ContractError, match="WRITE_QUEUE_LATENCY"):
            TransferEngine(cfg)
    with monkeypatch.context() as mp:
        mp.setattr(TransferEngine, "WRITE_QUEUE_DEPTH", TransferEngine.WRITE_QUEUE_LATENCY)
        with pytest.raises(ContractError, match="WRITE_QUEUE_DEPTH"):
            TransferEngine(cfg)


@pytest.mark.parametrize("config,seed,stall", [("small", 21, 0.0), ("small", 22, 0.1), ("default", 23, 0.0)])
def test_transfer_write_stalls(config, seed, stall):
    """The UB write port refuses a pseudo-random quarter of the cycles (``write_stalls``, the handshake of
    a port shared with other pipes): random TLOADs (both layouts, lines at every offset, odd strides) must
    stay bit-exact against the golden machine, each refused word offered again unchanged, and the R beat
    buffer's backpressure must keep AXI legal. With few or no AXI stalls the beats come faster than the
    port takes words, so the write queue fills to its bound (``room`` low: measured 10 to 40 cycles a run)
    and the realigner must wait (without the gate the queue overflows and words are lost)."""
    cfg = preset(config, ub_write_queues=True)
    rng = random.Random(seed)
    bench = ProtocolBench(cfg, TransferEngine, seed=seed, stall=stall, latency=2, write_stalls=True,
                          gm_windows=[(0, 4096)])
    bench.gm_write(0, bytes(rng.randrange(256) for _ in range(GM_BYTES)))

    async def stimulus(b):
        for _ in range(8):
            dtype = rng.choice(list(DType))
            size = DTYPE_BYTES[dtype]
            layout = rng.choice(list(Layout))
            # long lines and tiles (up to 512-byte lines, a quarter of the UB): streams of words long
            # enough to fill the write queue while the port refuses words
            cols = rng.randrange(1, 512 // size + 1)
            rows = rng.randrange(1, max(2, min(16, cfg.ub_bytes // 4 // (cols * size)) + 1))
            if layout == Layout.COL_MAJOR:
                rows, cols = cols, rows
            vr, vc = rng.randrange(1, rows + 1), rng.randrange(1, cols + 1)
            base = 32 * rng.randrange(0, (cfg.ub_bytes - rows * cols * size) // 32 + 1)
            elems = vr if layout == Layout.COL_MAJOR else vc
            stride = elems * size + size * rng.randrange(0, 50) + rng.choice([0, 4096])
            t = {"base": base, "rows": rows, "cols": cols, "valid_rows": vr, "valid_cols": vc,
                 "dtype": dtype, "layout": layout}
            gm = {"base": size * rng.randrange(0, 20000), "rows": vr, "cols": vc, "row_stride": stride,
                  "dtype": dtype}
            r = await b.execute({"opcode": Opcode.TLOAD, "dst": t, "gm": gm})
            assert r.status == Status.OK
        assert b.axi.errors == []

    bench.run(stimulus)
