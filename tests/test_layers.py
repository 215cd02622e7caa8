"""The folders' layering (docs/architecture.md, "Folders"): imports point down, never in a cycle.

Every ``import`` / ``from ... import`` of the project's own packages, at module level or inside a function,
is read from the source (no import is executed). ``rtl`` imports only ``rtl``, Amaranth and the standard
library; each top-level package imports only the packages below it (:data:`MAY_IMPORT`); and the graph of
imports between top-level packages has no cycle.
"""

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: What each top-level package may import of the project, and why (docs/architecture.md, "Folders").
#: ``rtl.isa`` is the bottom: the encodings and the instruction table, which the models and tools share.
MAY_IMPORT = {
    "rtl": {"rtl"},                                                   # the hardware: itself only
    "golden": {"golden", "rtl.isa"},                                  # the reference: the ISA only
    "pto": {"pto", "rtl.isa", "rtl.config", "golden"},                # the assembler: ISA, sizes, checks
    "flow": {"flow", "rtl", "golden", "pto"},                         # export, lint, synthesis, generated docs
    "sim": {"sim", "rtl", "golden", "pto", "flow"},                   # simulation and its tools
    "cocotb_tests": {"cocotb_tests", "rtl", "golden", "pto", "sim"},  # testbenches
    "examples": {"examples", "rtl", "golden", "pto", "sim"},
}
PACKAGES = set(MAY_IMPORT) | {"tests"}

#: Outside the project, ``rtl`` may import Amaranth and the standard library only.
RTL_THIRD_PARTY = {"amaranth"}


def _modules(package):
    for path in sorted((ROOT / package).rglob("*.py")):
        if "__pycache__" not in path.parts:
            yield path


def _imports(path):
    """Absolute names of every module ``path`` imports (relative imports resolved)."""
    tree = ast.parse(path.read_text(), str(path))
    parts = path.relative_to(ROOT).with_suffix("").parts
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[:len(package) - (node.level - 1)])
                name = ".".join(base + ([node.module] if node.module else []))
                if node.module is None:             # from . import x: the submodules x
                    for alias in node.names:
                        yield node.lineno, f"{name}.{alias.name}"
                    continue
                yield node.lineno, name
            else:
                yield node.lineno, node.module


def _allowed(name, allowed):
    return any(name == a or name.startswith(a + ".") for a in allowed)


def _edges():
    """``(package, line, importer path, imported name)`` of every import of a project package."""
    for package in MAY_IMPORT:
        for path in _modules(package):
            for line, name in _imports(path):
                top = name.split(".")[0]
                yield package, path, line, name, top


def test_rtl_imports_only_rtl_and_amaranth():
    stdlib = set(sys.stdlib_module_names)
    bad = [f"{path.relative_to(ROOT)}:{line}: {name}" for package, path, line, name, top in _edges()
           if package == "rtl" and top not in {"rtl"} | RTL_THIRD_PARTY | stdlib | {"__future__"}]
    assert not bad, "rtl/ imports beyond rtl, amaranth and the standard library:\n" + "\n".join(bad)


def test_packages_import_only_what_is_below_them():
    bad = [f"{path.relative_to(ROOT)}:{line}: {package} imports {name}" for package, path, line, name, top
           in _edges() if top in PACKAGES and not _allowed(name, MAY_IMPORT[package])]
    assert not bad, "imports that point up or sideways (docs/architecture.md, Folders):\n" + "\n".join(bad)


def test_no_cycle_between_top_level_packages():
    graph = {p: set() for p in MAY_IMPORT}
    for package, path, line, name, top in _edges():
        if top in MAY_IMPORT and top != package:
            graph[package].add(top)
    state, cycle = {}, []

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycle.extend(stack[stack.index(nxt):] + [node, nxt] if nxt in stack else [node, nxt])
                return True
            if nxt not in state and visit(nxt, stack + [node]):
                return True
        state[node] = "done"
        return False

    for node in sorted(graph):
        if node not in state and visit(node, []):
            break
    assert not cycle, "import cycle between top-level packages: " + " -> ".join(cycle)


def test_the_checks_can_fail(tmp_path, monkeypatch):
    """An rtl module that imports the simulation is caught (the rules are not vacuous)."""
    bad = tmp_path / "rtl" / "bad.py"
    bad.parent.mkdir()
    bad.write_text("from sim.runner import run\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "MAY_IMPORT", {"rtl": {"rtl"}, "sim": {"sim", "rtl"}})
    (tmp_path / "sim").mkdir()
    (tmp_path / "sim" / "runner.py").write_text("import rtl.bad\n")
    for test in (test_rtl_imports_only_rtl_and_amaranth, test_packages_import_only_what_is_below_them,
                 test_no_cycle_between_top_level_packages):
        try:
            test()
        except AssertionError:
            continue
        raise AssertionError(f"{test.__name__} passed on an rtl module that imports sim")
