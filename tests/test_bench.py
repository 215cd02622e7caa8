"""The benchmark runs end to end (its results are still checked bit-exactly against golden inside).
No assertion on cycle counts: performance is reported by ``make bench``, not tested.

The normal set runs the TLOAD/TSTORE bench (the table, the CSV and the bound check end to end); every bench,
with its own builds, is ``slow`` (every engine's results are bit-exact in its cocotb regression runs)."""

import pytest

from sim import bench

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("only", ["transfer", pytest.param(None, id="all", marks=pytest.mark.slow)])
def test_bench_runs(only, tmp_path, capsys):
    assert bench.main(["--config", "small"] + (["--only", only] if only else [])) == 0
    out = capsys.readouterr().out
    assert "TLOAD" in out and "TSTORE" in out
    # A figure above 100% of its bound means the bound is wrong (the hardware cannot beat its bound).
    lines = [l for l in out.splitlines() if l.count(" | ") > 4]
    head = [c.strip() for c in lines[0].split(" | ")]
    col = head.index("of bound")
    for line in lines[2:]:
        cells = [c.strip() for c in line.split(" | ")]
        assert float(cells[col].rstrip("%")) <= 100.0, f"above its bound: {line}"
