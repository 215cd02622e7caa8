"""The benchmark runs end to end (its results are still checked bit-exactly against golden inside).
No assertion on cycle counts: performance is reported by ``make bench``, not tested."""

import pytest

from sim import bench

pytestmark = pytest.mark.cocotb


def test_bench_runs(tmp_path, capsys):
    assert bench.main(["--config", "small"]) == 0
    out = capsys.readouterr().out
    assert "TLOAD" in out and "TSTORE" in out
