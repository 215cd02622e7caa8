"""Build the unit's Verilog and run cocotb testbenches on Icarus (default) or Verilator.

One build per (simulator, configuration, waves) under ``build/sim/``, guarded by a file lock so that
pytest-xdist workers share it; one simulator run per testcase under ``build/run/``, each with its own
directory, results XML, record file and (with waves) FST, so parallel runs never collide.

The Verilog comes from ``flow.export.cached_export`` (``build/verilog/vector_unit_<config>.v``), exported again
only when its inputs change (a stamp beside it: every ``rtl/**/*.py``, ``flow/export.py``, the configuration,
the Amaranth version).
"""

import dataclasses
import json
import os
import pathlib
import re
import shutil
import sys
import xml.etree.ElementTree as ElementTree

from flow.export import TOPLEVEL, cached_export
from flow.tools import FileLock, verilator_env
from rtl.config import parse_overrides

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
SIMULATORS = ("icarus", "verilator")

# cocotb's runner hands the simulator this process's sys.path as PYTHONPATH (replacing ours), and the
# simulator runs in the test directory: the repository root must be on sys.path by absolute name.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

__all__ = ["SIMULATORS", "config_spec", "list_testcases", "testcase_label", "cocotb_filter", "build", "run", "RunResult",
           "TestcaseResult", "parse_results"]


def config_spec(spec):
    """``(config, tag)`` of a configuration ``spec``: a preset name (``small``) or a preset with field
    overrides, ``NAME,field=value,...`` (``small,gemv_partial_sums=2``; values as
    :func:`rtl.config.parse_overrides` reads them). ``tag`` names the spec's Verilog, build and run
    directories: the spec with every ``,`` as ``-`` (a preset name is its own tag)."""
    name, *sets = [part.strip() for part in spec.split(",")]
    config, _ = parse_overrides(name, [s for s in sets if s], source=f"configuration {spec!r}")
    return config, "-".join([name, *(s for s in sets if s)])


def list_testcases(module):
    """Names of the cocotb tests in ``cocotb_tests/<module>.py``, in file order, as cocotb names them:
    a ``@cocotb.parametrize``-d test gives one name per case, ``<function>/<param>=<value>...`` (e.g.
    ``error/status=UNKNOWN_OPCODE``). The module is imported (outside a simulator; test modules must not
    touch ``cocotb.top`` at import time) and its tests generated as cocotb's regression manager does."""
    import importlib
    from cocotb._decorators import Test, TestGenerator   # what cocotb.regression discovers
    mod = importlib.import_module(f"cocotb_tests.{module}")
    names = []
    for obj in vars(mod).values():
        if isinstance(obj, Test):
            names.append(obj.name)
        elif isinstance(obj, TestGenerator):
            names += [test.name for test in obj.generate_tests()]
    return names


def testcase_label(testcase):
    """A file-name-safe label for a testcase name: each ``/<param>=<value>`` of a parametrized test
    becomes ``_<value>`` in lower case (``error/status=UNKNOWN_OPCODE`` -> ``error_unknown_opcode``);
    other characters outside ``[A-Za-z0-9_.-]`` become ``_``."""
    label = re.sub(r"/[A-Za-z_]\w*=([^/]*)", lambda m: "_" + m.group(1).lower(), testcase)
    return re.sub(r"[^A-Za-z0-9_.-]", "_", label)


def cocotb_filter(module, testcases):
    """A ``COCOTB_TEST_FILTER`` regex that selects exactly ``testcases`` (a name or a list) of
    ``cocotb_tests/<module>.py``. cocotb searches (``re.search``) the filter in each test's full name
    ``cocotb_tests.<module>.<name>``; the runner's own ``testcase=`` filter, ``\\.(.*<name>)$``, also selects
    every test whose name *ends* with ``<name>``, so this one is anchored at both ends instead."""
    names = [testcases] if isinstance(testcases, str) else list(testcases)
    return "^(" + "|".join(re.escape(f"cocotb_tests.{module}.{name}") for name in names) + ")$"


def _runner(sim):
    from cocotb_tools.runner import get_runner
    if sim not in SIMULATORS:
        raise ValueError(f"unknown simulator {sim!r}; choose one of {SIMULATORS}")
    if sim == "icarus" and shutil.which("iverilog") is None:
        raise RuntimeError("iverilog not found: run `make bootstrap` (installs Icarus with apt-get)")
    if sim == "verilator":
        os.environ.update(verilator_env())
    runner = get_runner(sim)
    runner.log.addFilter(_quiet)
    return runner


def _quiet(record):
    """Drop cocotb's "Skipping compilation of ..." warning: a cached build is the normal case here (one build per
    configuration, then a run per test), and the line landed in the middle of the runners' tables."""
    return not record.getMessage().startswith("Skipping compilation")


def build(config_name="small", sim="icarus", waves=False):
    """Export (when the sources changed) and compile the unit for a configuration (a preset name or a
    :func:`config_spec`); returns ``(runner, build_dir)``."""
    config, config_name = config_spec(config_name)
    tag = f"{sim}-{config_name}" + ("-waves" if waves else "")
    build_dir = BUILD / "sim" / tag
    runner = _runner(sim)
    with FileLock(BUILD / "sim" / f"{tag}.lock"):
        source = cached_export(config, config_name)
        build_args = []
        if sim == "verilator":
            build_args = ["-Wno-fatal", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC", "--x-assign", "0"]
            if waves:
                build_args += ["--trace-fst", "--trace-structs"]
        runner.build(sources=[source], hdl_toplevel=TOPLEVEL, build_dir=build_dir, waves=waves,
                     timescale=("1ns", "1ps"), build_args=build_args, always=False)
    return runner, build_dir


@dataclasses.dataclass(frozen=True)
class TestcaseResult:
    """One testcase of a results XML: cocotb's ``name``, ``result`` (``"pass"``, ``"fail"`` or
    ``"skip"``; an error counts as a failure), the failure or skip ``message`` (its first line, the
    exception's message; ``""`` when it passed), the exception ``type``, the wall-clock ``time`` in s and
    the simulated time it ran, ``sim_window_ns`` = (start, stop) (cocotb's ``sim_time_start`` /
    ``sim_time_stop`` properties, in ns; ``None`` when the file has none)."""
    __test__ = False            # not a pytest test class

    name: str
    result: str
    message: str = ""
    type: str = ""
    time: float = 0.0
    sim_window_ns: tuple = None


def parse_results(results_xml):
    """The :class:`TestcaseResult` of every testcase in a JUnit results XML (as cocotb writes it), in
    file order. Raises ``FileNotFoundError`` when it does not exist."""
    cases = []
    for case in ElementTree.parse(results_xml).getroot().iter("testcase"):
        result, message, kind = "pass", "", ""
        for tag, outcome in (("failure", "fail"), ("error", "fail"), ("skipped", "skip")):
            element = case.find(tag)
            if element is not None:
                result = outcome
                message = element.get("message") or (element.text or "").strip()
                kind = element.get("type") or ""
                break
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        window = None
        if {"sim_time_start", "sim_time_stop"} <= props.keys() and props.get("sim_time_unit", "ns") == "ns":
            window = (float(props["sim_time_start"]), float(props["sim_time_stop"]))
        cases.append(TestcaseResult(case.get("name", ""), result, message, kind, float(case.get("time") or 0),
                                    window))
    return cases


class RunResult:
    """What one :func:`run` produced: ``cases`` (a :class:`TestcaseResult` per testcase), the counts
    ``tests`` and ``failed`` (as ``cocotb_tools.runner.get_results``; a run that left no results XML has
    ``tests = 0, failed = 1``), ``passed``, ``records`` (the executed commands, ``TILEVEC_RECORDS``),
    ``results_xml``, ``log_file`` and ``waves_file``."""

    def __init__(self, testcase, results_xml, records_file, waves_file):
        self.testcase = testcase
        self.results_xml = results_xml
        self.waves_file = waves_file
        self.log_file = pathlib.Path(results_xml).parent / "sim.log"
        try:
            self.cases = parse_results(results_xml)
            self.tests = len(self.cases)
            self.failed = sum(c.result == "fail" for c in self.cases)
        except (ElementTree.ParseError, FileNotFoundError, OSError):
            self.cases = []
            self.tests, self.failed = 0, 1
        self.records = []
        if records_file.exists():
            self.records = [json.loads(line) for line in records_file.read_text().splitlines() if line]

    @property
    def passed(self):
        return self.tests > 0 and self.failed == 0

    @property
    def failures(self):
        """The failed :class:`TestcaseResult` s."""
        return [c for c in self.cases if c.result == "fail"]

    def summary(self):
        """One line per testcase (``PASS name``, ``FAIL name: message``), or why there are none."""
        if not self.cases:
            return f"{self.testcase}: no results (simulation ended abnormally; see {self.log_file})"
        return "\n".join(f"{c.result.upper()} {c.name}" + (f": {c.message}" if c.message else "")
                         for c in self.cases)


def run(module, testcase, config_name="small", sim="icarus", waves=False, seed=None, params=None,
        label=None, group=None, coverage_config=None):
    """Run one cocotb testcase of ``cocotb_tests/<module>.py`` (or a list of them, one after the other in
    one simulator run: ``sim.regress.run_group``, which gives the ``label``); returns a :class:`RunResult`.

    ``testcase`` is cocotb's name of the test (``list_testcases``), selected exactly (:func:`cocotb_filter`);
    ``params`` (a dict) reaches the testcase as environment variables ``TILEVEC_<KEY>``; ``label``
    names the run directory ``build/run/<group>/<label>`` (default: :func:`testcase_label`), ``group``
    defaults to ``<sim>-<config tag>`` (the regression passes its base configuration's, so that a run on
    a unit of fewer engines lands where ``make waves`` looks); ``coverage_config``, the configuration
    whose coverage goal the run counts toward (``TILEVEC_COVERAGE_CONFIG``; default: its own).
    """
    runner, build_dir = build(config_name, sim, waves)
    label = label or testcase_label(testcase)
    test_dir = BUILD / "run" / (group or f"{sim}-{config_spec(config_name)[1]}") / label
    test_dir.parent.mkdir(parents=True, exist_ok=True)
    # Two runs of one label (two fuzz streams from one seed, say) would share the directory: the later one's
    # clean-up deleted the earlier one's files while it ran. They take turns instead.
    with FileLock(test_dir.parent / f"{label}.lock"):
        if test_dir.exists():
            shutil.rmtree(test_dir)
        test_dir.mkdir(parents=True)
        records = test_dir / "records.jsonl"
        waves_file = test_dir / f"{label}.fst"
        env = {"TILEVEC_CONFIG": config_name, "TILEVEC_RECORDS": str(records)}
        env.update({f"TILEVEC_{key.upper()}": str(value) for key, value in (params or {}).items()})
        if isinstance(testcase, str):     # several: the harness labels each from cocotb's name of the test
            env["TILEVEC_TEST"] = label
        if coverage_config:
            env["TILEVEC_COVERAGE_CONFIG"] = coverage_config
        plusargs = [f"+dumpfile_path={waves_file}"] if waves and sim == "icarus" else []
        if sim == "verilator" and waves:
            plusargs = ["--trace"]
        try:
            results_xml = runner.test(test_module=f"cocotb_tests.{module}", hdl_toplevel=TOPLEVEL,
                                      test_filter=cocotb_filter(module, testcase), test_dir=test_dir,
                                      build_dir=build_dir, extra_env=env, waves=waves, seed=seed, plusargs=plusargs,
                                      # absolute: under pytest the runner would name it after the pytest test
                                      # and, when a testcase fails, exit before returning that name
                                      results_xml=str(test_dir / "results.xml"),
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
    print(result.summary())
    print(f"{testcase}: {'PASS' if result.passed else 'FAIL'} ({result.results_xml})")
