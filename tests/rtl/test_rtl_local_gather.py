"""LocalGatherEngine in Amaranth's simulator against the golden machine: random legal commands
(every type, every num_elem_per_idx, odd static shapes, out-of-range offsets), 1 or 2 read ports,
16- and 32-byte words. The engine runs on the real UB (rtl_engine_bench); the whole UB is compared after
every command, except the bytes the golden model calls undefined. Every command's cycles are checked
against the engine's cycle model (``LocalGatherEngine.cycles``); the timing contract's couplings are
checked to fail elaboration when broken."""

import random

import numpy as np
import pytest

from rtl.config import preset
from rtl.isa import Command, DType, DTYPE_BYTES, Opcode, Status, UB_ALIGN, decode, encode
from rtl.engines.local_gather import control, geometry
from rtl.engines.local_gather.engine import LocalGatherEngine
from rtl.lib.contract import ContractError

from rtl_engine_bench import EngineBench


def _tile(base, rows, cols, dtype, valid):
    return {"base": base, "rows": rows, "cols": cols, "valid_rows": valid[0], "valid_cols": valid[1],
            "dtype": dtype, "layout": 0}


def random_command(rng, ub_bytes, *, undefined=0.1):
    """A legal LOCAL_GATHER with non-overlapping tiles placed in the UB (or None if it does not fit)."""
    dtype = rng.choice(list(DType))
    size = DTYPE_BYTES[dtype]
    nepi_log2 = rng.randrange(6)
    nepi = 1 << nepi_log2
    R = 16 * rng.choice([1, 1, 2, 3])
    X = rng.choice([1, 1, 2, 3])
    nv = rng.choice([0, 0, rng.randrange(1, 16 * X + 1)])
    n = nv or 16 * X
    C = rng.randrange(nepi, nepi + rng.choice([4, 20, 60]))
    src_cols = C + rng.choice([0, 0, 1, 3])
    dst_cols = n * nepi + rng.choice([0, 0, 1, 5])
    idx_cols = X + rng.choice([0, 1])
    tiles = [(R, dst_cols, size), (R, src_cols, size), (R, idx_cols, 2)]
    need = sum(-(-(r * c * s) // UB_ALIGN) * UB_ALIGN for r, c, s in tiles)
    if need > ub_bytes:
        return None
    slack = (ub_bytes - need) // UB_ALIGN
    cuts = sorted(rng.randrange(slack + 1) for _ in range(3))
    order = rng.sample(range(3), 3)
    bases, pos, prev = [0] * 3, 0, 0
    for which, cut in zip(order, cuts):
        pos += (cut - prev) * UB_ALIGN
        prev = cut
        bases[which] = pos
        r, c, s = tiles[which]
        pos += -(-(r * c * s) // UB_ALIGN) * UB_ALIGN
    idx = np.array([[rng.randrange(C - nepi + 1) if rng.random() > undefined else rng.randrange(65536)
                     for _ in range(idx_cols)] for _ in range(R)], np.uint16)
    cmd = {"opcode": Opcode.LOCAL_GATHER, "nepi_log2": nepi_log2, "num_valid": nv,
           "dst": _tile(bases[0], R, dst_cols, dtype, (R, n * nepi)),
           "src0": _tile(bases[1], R, src_cols, dtype, (R, C)),
           "src1": _tile(bases[2], R, idx_cols, DType.UINT16, (R, X))}
    return cmd, idx


def _model(config, cmd, **kwargs):
    """The cycle model's count for a test's command (a dict as the bench takes it)."""
    return LocalGatherEngine.cycles(config, decode(Command, encode(Command, cmd)), **kwargs)


def _run_gathers(config, commands, seed, go_delay=2, write_stalls=False):
    """Run ``commands`` [(cmd, index array)] on the engine with a random UB, each index array written
    into its ``src1`` tile just before its command; compared with golden. Returns the cycles of each,
    each checked against the cycle model (and the bound). ``write_stalls``: the UB write port refuses
    a pseudo-random quarter of the cycles (``EngineBench``); the cycle model, which counts a port that
    is always ready, is then a lower bound."""
    rng = random.Random(seed)
    bench = EngineBench(config, LocalGatherEngine, timeout=100_000, on_undefined="mask", go_delay=go_delay,
                        write_stalls=write_stalls)
    bench.ub_write(0, rng.randbytes(config.ub_bytes))

    async def stimulus(b):
        for cmd, idx in commands:
            b.ub_write(cmd["src1"]["base"], idx.tobytes())
            assert (await b.execute(cmd)).status == Status.OK

    cycles = [r.cycles for r in bench.run(stimulus)]
    for (cmd, _), measured in zip(commands, cycles):
        model = _model(config, cmd, go_delay=go_delay)
        assert measured >= model if write_stalls else measured == model, (measured, model, cmd)
        assert LocalGatherEngine.bound(config, decode(Command, encode(Command, cmd))) <= measured, cmd
    return cycles


@pytest.mark.parametrize("ports", [1, 2])
@pytest.mark.parametrize("preset_name", ["small", "default"])
@pytest.mark.parametrize("seed", [1, 2])
def test_local_gather_engine_random(preset_name, ports, seed):
    config = preset(preset_name, ub_read_ports=ports)
    rng = random.Random(seed * 10 + ports)
    commands = []
    while len(commands) < 12:
        c = random_command(rng, config.ub_bytes)
        if c is not None:
            commands.append(c)
    _run_gathers(config, commands, seed, go_delay=2 if seed == 1 else 8)   # seed 2: a late verdict


@pytest.mark.parametrize("preset_name", ["small", "default"])
def test_local_gather_engine_write_stalls(preset_name):
    """The UB write port refuses a pseudo-random quarter of the cycles (``EngineBench(write_stalls=True)``):
    the engine's words wait in its write queue and the control issues only with the queue's ``room``, so
    every command stays bit-exact, a refused word is offered again unchanged (the bench checks it every
    cycle) and ``done`` comes when the last word is taken. The commands of test_local_gather_engine_random
    (seed 1, two read ports where the configuration has them), then one that writes a word per cycle
    (chunks of ``W / 2`` bytes, paired: the queue fills while the port refuses words, and the issue must
    wait)."""
    config = preset(preset_name, ub_write_queues=True)
    ports = LocalGatherEngine.read_ports(config)
    rng = random.Random(10 + ports)
    commands = []
    while len(commands) < 12:
        c = random_command(rng, config.ub_bytes)
        if c is not None:
            commands.append(c)
    commands.append(_fp32_command(config, config.ub_word_bytes // 2, "random", 5))
    cycles = _run_gathers(config, commands, 1, write_stalls=True)
    models = [_model(config, cmd, go_delay=2) for cmd, _ in commands]
    assert sum(cycles) > sum(models), (cycles, models)     # the port's refusals did cost cycles


def _fp32_command(config, B, offsets, seed):
    """16 rows of fp32 chunks of ``B`` bytes, word-aligned dst and src rows; ``offsets``: "random",
    "straddle" (every chunk crosses a source word boundary) or "inside" (none does). Returns
    (the command, its index array)."""
    W = config.ub_word_bytes
    rng = random.Random(seed)
    R, X, C = (16, 2, 200) if config.ub_bytes >= 64 * 1024 else (16, 1, 16)
    n, nepi = 16 * X, B // 4
    assert C * 4 % W == 0

    def offset():
        while True:
            o = rng.randrange(C - nepi + 1)
            inside = (o * 4) % W + B <= W
            if offsets == "random" or inside == (offsets == "inside"):
                return o
    idx = np.array([[offset() for _ in range(X)] for _ in range(R)], np.uint16)
    dst_bytes = R * n * B
    cmd = {"opcode": Opcode.LOCAL_GATHER, "nepi_log2": nepi.bit_length() - 1, "num_valid": 0,
           "dst": _tile(0, R, n * nepi, DType.FP32, (R, n * nepi)),
           "src0": _tile(dst_bytes, R, C, DType.FP32, (R, C)),
           "src1": _tile(dst_bytes + R * C * 4, R, X, DType.UINT16, (R, X))}
    return cmd, idx


def _fp32_gather(config, B, offsets, seed):
    """:func:`_fp32_command` run alone. Returns (destination words, cycles, the command)."""
    cmd, idx = _fp32_command(config, B, offsets, seed)
    (cycles,) = _run_gathers(config, [(cmd, idx)], seed)
    return cmd["dst"]["valid_rows"] * cmd["dst"]["valid_cols"] * 4 // config.ub_word_bytes, cycles, cmd


def _expected_cycles(config, ports, B, n):
    """Cycles from start to done of one group of 16 rows with word-aligned destination rows (no spill
    flushes), as LocalGatherEngine documents them for the regular cases (the cycle model must agree): per block of K chunks max(INDEX_MIN_CYCLES, ceil(K / 2))
    index cycles (max(INDEX_MIN_CYCLES, K) with one port) and 16 rows of slots (a slot: one piece, or
    two paired when 2 P <= W and two ports), then PIPELINE - 1 cycles to the last write."""
    W = config.ub_word_bytes
    P = min(B, W, 32)
    paired = ports == 2 and 2 * P <= W
    total = 0
    for first in range(0, n, 16):
        K = min(16, n - first)
        pieces = K * (B // P)
        index = -(-K // 2) if ports == 2 else K
        total += max(LocalGatherEngine.INDEX_MIN_CYCLES, index) + 16 * (-(-pieces // 2) if paired else pieces)
    return total + LocalGatherEngine.PIPELINE - 1


def test_local_gather_engine_throughput():
    """Aligned destination rows, chunks of W bytes at random offsets, 2 ports: > 90% of a word per cycle."""
    config = preset("default")
    words, cycles, cmd = _fp32_gather(config, config.ub_word_bytes, "random", 5)
    assert words / cycles > 0.9, cycles
    assert cycles == _model(config, cmd) == _expected_cycles(config, 2, config.ub_word_bytes, 32), cycles


@pytest.mark.parametrize("ports", [1, 2])
@pytest.mark.parametrize("preset_name", ["small", "default"])
def test_local_gather_engine_straddle_free(preset_name, ports):
    """Chunks of W / 2 bytes: a chunk that straddles two source words costs nothing (the read port's
    2-word window holds it), so all-straddling offsets take exactly as many cycles as offsets that keep
    every chunk inside a word; with 2 ports two chunks go per cycle (> 90% of a word per cycle once the
    pipeline is full), with 1 port one."""
    config = preset(preset_name, ub_read_ports=ports)
    B = config.ub_word_bytes // 2
    words, straddle, cmd = _fp32_gather(config, B, "straddle", 6)
    _, inside, _ = _fp32_gather(config, B, "inside", 7)
    assert straddle == inside, (straddle, inside)
    n = 32 if config.ub_bytes >= 64 * 1024 else 16          # _fp32_gather's shape: 16 rows, n chunks
    assert straddle == _model(config, cmd) == _expected_cycles(config, ports, B, n), \
        (straddle, _model(config, cmd), _expected_cycles(config, ports, B, n))
    if ports == 2 and n == 16:        # the documented example: 16 rows of 16 chunks of W / 2 bytes
        assert straddle == 8 + 128 + 7 == 143
    moving = straddle - (LocalGatherEngine.PIPELINE - 1)    # the rate, without the pipeline's fill
    if ports == 2:
        assert words / moving > 0.9, straddle
    else:
        assert 0.45 < words / moving <= 0.5, straddle


def test_local_gather_cycle_model_empty():
    """No source rows, or no indices: done the cycle after start."""
    config = preset("small")
    rng = random.Random(3)
    while (c := random_command(rng, config.ub_bytes)) is None:
        pass
    cmd, _ = c
    empty = dict(cmd, num_valid=0, src1=dict(cmd["src1"], valid_cols=0))
    assert _model(config, empty) == LocalGatherEngine.EMPTY_CYCLES == 1
    assert _model(config, dict(cmd, src0=dict(cmd["src0"], valid_rows=15))) == 1


# ---- the timing contract: each coupling fails elaboration when broken ------------------------------------

# (an elaboration that stops at a broken coupling leaves its module and memories unused)
_partial = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")


def _elaborate(config, **constants):
    """Elaborate a LocalGatherEngine whose timing constants are replaced by ``constants`` (only its own
    module: the couplings are checked there)."""
    engine = type("Broken", (LocalGatherEngine,), dict(constants))(config)
    engine.elaborate(None)


@_partial
def test_local_gather_contract_holds():
    for name in ("small", "default"):
        for ports in (1, 2):
            _elaborate(preset(name, ub_read_ports=ports))


@_partial
def test_local_gather_contract_index_min_cycles():
    """The first piece slot of a block reads its index from the bank: not before the index is there."""
    with pytest.raises(ContractError, match="only if the index is there"):
        _elaborate(preset("small"), INDEX_MIN_CYCLES=LocalGatherEngine.INDEX_MIN_CYCLES - 1)


@_partial
def test_local_gather_contract_index_banks():
    """Index reads padded to INDEX_MIN_CYCLES must not wrap around the banks' 16 entries."""
    with pytest.raises(ContractError, match="wrap onto the block's first indices"):
        _elaborate(preset("small"), INDEX_MIN_CYCLES=9)
    _elaborate(preset("small", ub_read_ports=1), INDEX_MIN_CYCLES=9)     # 9 reads of one index fit


@_partial
def test_local_gather_contract_pipeline():
    """``done`` waits PIPELINE cycles after the last slot: the write stage."""
    with pytest.raises(ContractError, match="must be PIPELINE"):
        _elaborate(preset("small"), PIPELINE=LocalGatherEngine.PIPELINE + 1)


@_partial
def test_local_gather_contract_stage_1():
    """Stage 1 reads the input registers when read_window has loaded them."""
    E = LocalGatherEngine
    with pytest.raises(ContractError, match="read_window's register"):
        _elaborate(preset("small"), STAGE_1=E.STAGE_1 + 1, PIPELINE=E.PIPELINE + 1,
                   INDEX_MIN_CYCLES=E.INDEX_MIN_CYCLES + 1)


@_partial
def test_local_gather_contract_geometry_ready():
    """The first block's first row is begun from per-block values derived from the geometry."""
    with pytest.raises(ContractError, match="per-block values"):
        _elaborate(preset("small"), GEOMETRY_DELAY=LocalGatherEngine.INDEX_MIN_CYCLES - 1)


@_partial
def test_local_gather_contract_widths(monkeypatch):
    """The geometry registers and the slot counters hold their largest legal values."""
    monkeypatch.setitem(geometry.GEOMETRY_WIDTHS, "psize", 5)       # P = 32 needs 6 bits
    with pytest.raises(ContractError, match="geometry field psize"):
        _elaborate(preset("default"))
    monkeypatch.undo()
    monkeypatch.setattr(control, "SLOT_BITS", 6)                    # 16-byte words: 128 slots
    with pytest.raises(ContractError, match="slot counters"):
        _elaborate(preset("small"))


@_partial
def test_local_gather_contract_write_queue():
    """The write queue's room gates the control's issue: its latency covers the PIPELINE cycles to stage 3."""
    with pytest.raises(ContractError, match="write queue's room"):
        _elaborate(preset("small"), WRITE_QUEUE_LATENCY=LocalGatherEngine.PIPELINE - 1)
