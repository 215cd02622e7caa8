"""The GEMV-family cocotb runs (TGEMV, TGEMV_ACC, TGEMV_BIAS) on Icarus, and checks of their command and
data generator (``cocotb_tests.gemv_commands``) against the golden model alone.

``make test``: the regression's GEMV runs on ``small`` (P = 8, the adder keeps up) and two on
``small,gemv_partial_sums=2`` (P below the adder's 6 stages: the MAC array's dummy-step path; the
benchmark's P = 2 rows use the same build). ``make test-slow``: P = 1, 2, 4 and 8 with every variant and
large command, other lane counts, the ``default`` unit (K and N up to 4095, the seed's example at its
addresses) and the ``a2a3`` preset (its type rules and errors)."""

import random

import numpy as np
import pytest

from sim.regress import REGRESSION, Entry, run_entry
from tests.normal_set import grouped, run_entries

G = "test_gemv"


def _run(entry, config):
    result = run_entry(entry, config=config)
    assert result.passed, f"{entry.name} ({config}) failed: see {result.results_xml.parent / 'sim.log'}"


@pytest.mark.cocotb
@pytest.mark.parametrize("entries", grouped(e for e in REGRESSION if e.module == G))
def test_gemv(entries):
    run_entries(entries, "small")


#: P = 2 in the normal set (shared with ``sim.bench``'s P = 2 rows under tests/test_bench.py).
P2 = "small,gemv_partial_sums=2"
P2_ENTRIES = [Entry(G, "gemv_specials", (("scenarios", "random,ties,cancel,neg_zero,specials"),)),
              Entry(G, "gemv_accumulate")]


@pytest.mark.cocotb
@pytest.mark.parametrize("entries", grouped(P2_ENTRIES))
def test_gemv_p2(entries):
    run_entries(entries, P2)


def _slow():
    every = (("large_k", "all"), ("large_n", "one"))
    out = []
    for P in (1, 2, 4, 8):
        config = "small" if P == 8 else f"small,gemv_partial_sums={P}"
        out += [(config, Entry(G, "gemv_triples", every, "gemv_triples_every")),
                (config, Entry(G, "gemv_specials", (("all_ops", 1),), "gemv_specials_all_ops"))]
        if P != 8:
            out.append((config, Entry(G, "gemv_accumulate")))
    for lanes in (16, 1):           # int8 / fp8 16 lanes, fp16 8, fp32 4 (W = 16); one lane for every type
        config = f"small,gemv_lanes={lanes}"
        out += [(config, Entry(G, "gemv_triples", (("large_n", "one" if lanes > 1 else "none"),))),
                (config, Entry(G, "gemv_specials"))]
    out += [("default", Entry(G, "gemv_triples", every, "gemv_triples_every")),
            ("default", Entry(G, "gemv_accumulate")),
            ("default", Entry(G, "gemv_backpressure", (("rounds", 30),)))]
    out += [("a2a3", Entry(G, t)) for t in ("gemv_types", "gemv_error/group=types", "gemv_error/group=shapes")]
    out.append(("a2a3", Entry(G, "gemv_triples", (("large_k", "none"), ("large_n", "none")))))
    return out


@pytest.mark.slow           # extra Icarus builds (P = 1, 2, 4; 16 and 1 lanes; default; a2a3): make test-slow
@pytest.mark.cocotb
@pytest.mark.parametrize("config,entry", _slow(), ids=lambda x: x if isinstance(x, str) else x.name)
def test_gemv_slow(config, entry):
    _run(entry, config)


# ---- the generator against the golden model (no simulator) -----------------------------------------------

def _configs():
    from sim.runner import config_spec
    return [config_spec(s)[0] for s in ("small", "default", "a2a3", P2, "small,gemv_lanes=16")]


@pytest.mark.parametrize("config", _configs(), ids=["small", "default", "a2a3", "p2", "lanes16"])
def test_error_cases(config):
    """Every error case answers its status in the golden's check, the legal command it came from is legal,
    and ``gemv_error``'s groups cover exactly the statuses of the cases."""
    from cocotb_tests.gemv_commands import error_cases
    from cocotb_tests.test_gemv import ERROR_GROUPS
    from golden.check import check
    from rtl.isa import Status
    cases = error_cases(config)
    assert set(cases) == {s for g in ERROR_GROUPS.values() for s in g}
    for status, items in cases.items():
        for what, bad, good in items:
            assert check(bad, config) == status, what
            assert check(good, config) == Status.OK, what


@pytest.mark.parametrize("config", _configs(), ids=["small", "default", "a2a3", "p2", "lanes16"])
def test_batches(config):
    """``test_gemv``'s batches: every command legal, the tiles of different commands of a batch disjoint, a
    TGEMV_ACC / _BIAS init either apart from C or C itself; ``fill`` writes only inside the source tiles."""
    from cocotb_tests import test_gemv as T
    from cocotb_tests.gemv_commands import GEMV_OPS, INIT, SCENARIOS, fill, triples
    from golden.check import check
    from rtl.isa import DTYPE_BYTES, Status
    rng = random.Random(1)

    def span(t):
        return t["base"], t["base"] + t["rows"] * t["cols"] * DTYPE_BYTES[t["dtype"]]

    specs = [(rng.choice(GEMV_OPS), t, rng.randint(1, 40), rng.randint(1, 40), rng.choice(SCENARIOS), None, True)
             for t in triples(config.profile) for _ in range(12)]
    batches = T._pack(rng, config, specs)
    assert sum(len(b) for b in batches) >= len(specs) // 2
    for batch in batches:
        owned = []
        for cmd, _, data in batch:
            assert check(cmd, config) == Status.OK
            tiles = {span(cmd[s]) for s in T.SLOTS if s in cmd}
            for lo, hi in tiles:
                assert all(hi <= a or b <= lo for a, b in owned), "tiles of two commands overlap"
            owned += sorted(tiles)
            srcs = [span(cmd[s]) for s in ("src0", "src1", INIT) if s in cmd]
            for address, raw in fill(rng, cmd, data):
                assert any(lo <= address and address + len(raw) <= hi for lo, hi in srcs)
            if INIT in cmd and cmd[INIT]["base"] != cmd["dst"]["base"]:
                (a, b), (c, d) = span(cmd[INIT]), span(cmd["dst"])
                assert b <= c or d <= a


def test_scenarios_reach_their_corners():
    """The data scenarios produce what they are named for (through the golden's accumulation): TGEMV of
    all-(-0) products is +0 and TGEMV_ACC with C_in = -0 is -0; inf - inf gives NaN; overflow gives inf;
    ``ties`` meets exact fp32 rounding ties."""
    from cocotb_tests.gemv_commands import scenario, triples
    from golden.numerics import from_bits, widening_product
    from golden.ops import gemv_reduce
    from rtl.isa import DType, Profile
    rng = random.Random(3)
    seen = {"acc_neg_zero": 0, "nan": 0, "inf": 0, "ties": 0}
    for triple in triples(Profile.A5):
        if triple[0] == DType.INT32:
            continue
        for name in ("neg_zero", "inf_cancel", "overflow", "ties"):
            data = scenario(rng, name, triple, 9, 6)
            if data is None:
                continue
            a, b, init = (from_bits(x, t) for x, t in zip(data, (triple[1], triple[2], triple[0])))
            prods = widening_product(a[:, None], b)
            plain = gemv_reduce(prods, np.zeros(6, np.float32), 4)
            acc = gemv_reduce(prods, init, 4)
            if name == "neg_zero":
                assert np.all((plain == 0) & ~np.signbit(plain))
                neg = (init == 0) & np.signbit(init)
                assert np.all(np.signbit(acc[neg]) & (acc[neg] == 0))
                seen["acc_neg_zero"] += int(neg.sum())
            seen["nan"] += int(np.isnan(plain).sum()) if name == "inf_cancel" else 0
            seen["inf"] += int(np.isinf(plain).sum()) if name == "overflow" else 0
            if name == "ties":
                p = prods.astype(np.float64)
                big = np.abs(p).max(axis=0)
                seen["ties"] += int(np.sum(np.abs(p) == big / 2 ** 24))
    assert all(seen.values()), seen


def test_config_spec():
    """A preset with overrides names its own build (``sim.runner.config_spec``) and the harness reads it."""
    from cocotb_tests.harness import resolve_config
    from rtl.config import preset
    from sim.runner import config_spec
    config, tag = config_spec("small,gemv_partial_sums=2")
    assert config == preset("small", gemv_partial_sums=2) and tag == "small-gemv_partial_sums=2"
    assert config_spec("a2a3") == (preset("a2a3"), "a2a3")
    assert resolve_config("small, gemv_lanes=16,profile=A2A3") == preset("small", gemv_lanes=16,
                                                                         profile=preset("a2a3").profile)
    with pytest.raises(ValueError):
        config_spec("small,gemv_partial_sums=3")
