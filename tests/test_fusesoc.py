"""FuseSoC core (fusesoc/, README "FuseSoC"): the core files parse with fusesoc's own CAPI2 parser, the
generator's waivers are flow.lint.WAIVED, and the lint (Verilator) and sim (Icarus) targets pass when run
through fusesoc and edalize."""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from flow.lint import WAIVED
from flow.tools import verilator_env

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORES = ROOT / "fusesoc"
VLNV = "tilevec:ip:vector_unit"


def fusesoc(tmp_path, *args, env=None, timeout=600, **config_env):
    """``fusesoc --cores-root=fusesoc ARGS`` in ``tmp_path`` with an empty config (no user libraries);
    ``config_env``: the generator's TILEVEC_FUSESOC_* variables (none unless given)."""
    conf = tmp_path / "fusesoc.conf"
    conf.touch()
    cmd = [sys.executable, "-m", "fusesoc.main", "--config", str(conf), "--cores-root", str(CORES), *args]
    env = dict(env or os.environ)
    for var in ("TILEVEC_FUSESOC_CONFIG", "TILEVEC_FUSESOC_SET"):
        env.pop(var, None)
    env.update(config_env)
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout)


def test_cores_parse():
    from fusesoc.capi2.coreparser import Core2Parser
    from fusesoc.core import Core
    parser = Core2Parser(allow_additional_properties=False)
    unit = Core(parser, str(CORES / "vector_unit.core"))
    gen = Core(parser, str(CORES / "vector_unit_generator.core"))
    assert str(unit.name) == f"{VLNV}:0.1.0"
    assert str(gen.name) == "tilevec:ip:vector_unit_generator:0.1.0"
    assert {"default", "lint", "sim"} <= set(unit.get_data({}).targets)
    generators = gen.get_generators()
    assert set(generators) == {"tilevec_vector_unit"}
    assert (CORES / generators["tilevec_vector_unit"]["command"]).is_file()
    lint = unit.get_ttptttg({"is_toplevel": True, "target": "lint"})
    assert [(t["generator"], t["config"]["config"]) for t in lint] == [("tilevec_vector_unit", "default")]
    sim = unit.get_ttptttg({"is_toplevel": True, "target": "sim"})
    assert sim[0]["config"]["testbench"] is True


def test_core_info(tmp_path):
    proc = fusesoc(tmp_path, "core-info", VLNV)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{VLNV}:0.1.0" in proc.stdout
    assert re.search(r"^lint\s*:", proc.stdout, re.M) and re.search(r"^sim\s*:", proc.stdout, re.M)


def test_generator_waivers_are_sim_lint():
    sys.path.insert(0, str(CORES))
    try:
        import vector_unit_gen
    finally:
        sys.path.remove(str(CORES))
    rules = re.findall(r"^lint_off -rule (\w+)$", vector_unit_gen.waivers(), re.M)
    assert tuple(rules) == WAIVED
    assert vector_unit_gen._sets({"ub_bytes": 8192, "ub_debug_port": False}) == ["ub_bytes=8192",
                                                                                "ub_debug_port=false"]
    assert vector_unit_gen._sets("ub_bytes=8192 profile=A2A3") == ["ub_bytes=8192", "profile=A2A3"]


@pytest.mark.slow      # exports and lints the default unit again (~15 s CPU); make test-slow
def test_lint_target(tmp_path):
    """``fusesoc run --target=lint tilevec:ip:vector_unit`` as the core ships it (configuration default).
    ``slow``: the normal set lints the same Verilog with the same waivers (tests/test_export.py,
    ``test_verilator_lint[default]``; ``test_generator_waivers_are_sim_lint``) and runs the generator and
    edalize through ``test_sim_target_small``."""
    proc = fusesoc(tmp_path, "run", "--target=lint", VLNV, env=verilator_env())
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "--lint-only" in (next(tmp_path.glob("build/*/lint/*.vc"))).read_text()
    v = next(tmp_path.glob("build/*/lint/src/*/vector_unit.v")).read_text()
    assert "//   ub_bytes = 65536\n" in v                       # the core's configuration: default


@pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog (make bootstrap installs it)")
def test_sim_target_small(tmp_path):
    """The Icarus smoke testbench, configuration chosen through the environment (small, 8 KiB UB; one UB
    read port, so no elementwise or GEMV engine: a 5x faster export and Icarus build of the same ports)."""
    proc = fusesoc(tmp_path, "run", "--target=sim", VLNV,
                   TILEVEC_FUSESOC_CONFIG="small", TILEVEC_FUSESOC_SET="ub_bytes=8192 ub_read_ports=1")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "PASS: vector_unit idle after reset" in out
    v = next(tmp_path.glob("build/*/sim/src/*/vector_unit.v")).read_text()
    assert "//   ub_bytes = 8192\n" in v and "//   ub_word_bytes = 16\n" in v
