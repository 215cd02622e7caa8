"""The timing contract (docs/architecture.md, "Timing contract"): the latencies the documentation states
are the code's, and the code's couplings hold.

Documented values: every ``Class.NAME`` = N (or, inside a class's own docstrings and comments, ``NAME`` = N)
in docs/*.md, README.md and rtl/**/*.py is compared with the constant in rtl/ (a method such as
``GemvEngine.latency`` is evaluated for the ``default`` configuration). A name the prose cites without
its class must be unique among rtl/'s constants, or the test asks for the class.
"""

import ast
import importlib
import inspect
import pathlib
import pkgutil
import re

import pytest

import rtl
from rtl.config import preset

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: ``Name.ATTR`` = N, ``ATTR`` = N, ``rtl.module.ATTR`` = N or ``Name.method()`` = N (called without
#: arguments), in one or two backticks (Markdown, reST).
CITED = re.compile(r"``?(?P<module>rtl(?:\.[a-z_]\w*)+\.)?(?:(?P<cls>[A-Z]\w*)\.)?(?P<attr>[A-Za-z_]\w*)"
                   r"(?P<call>\(\))?``?\s*=\s*(?P<value>\d+)\b")


def _rtl_modules():
    for info in pkgutil.walk_packages(rtl.__path__, "rtl."):
        yield importlib.import_module(info.name)


def _constants():
    """``(classes, constants)``: every class defined in rtl/ by name, and every UPPER_CASE int (class
    attribute or module constant) by name -> {owner: value}."""
    classes, constants = {}, {}
    for module in _rtl_modules():
        for name, value in vars(module).items():
            if isinstance(value, int) and not isinstance(value, bool) and name.isupper():
                constants.setdefault(name, {})[module.__name__] = value
            if inspect.isclass(value) and value.__module__ == module.__name__:
                classes[name] = value
                for attr, v in vars(value).items():
                    if attr.isupper() and isinstance(v, int) and not isinstance(v, bool):
                        constants.setdefault(attr, {})[name] = v
    return classes, constants


def _value(owner, attr, config, call=False):
    v = getattr(owner, attr)
    if call:
        return v()
    if callable(v):
        v = v(config)
    return v


def _class_spans(text):
    """``(start_line, end_line, class)`` of every class in a Python source, for names cited inside it."""
    return [(n.lineno, n.end_lineno, n.name) for n in ast.walk(ast.parse(text)) if isinstance(n, ast.ClassDef)]


def _sources():
    yield from sorted((ROOT / "docs").glob("*.md"))
    yield ROOT / "README.md"
    yield from sorted((ROOT / "rtl").rglob("*.py"))


def _citations():
    for path in _sources():
        text = path.read_text()
        spans = _class_spans(text) if path.suffix == ".py" else []
        for m in CITED.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            inner = [name for start, end, name in spans if start <= line <= end]
            yield path.relative_to(ROOT).as_posix(), line, m.group("module"), m.group("cls"), m.group("attr"), \
                bool(m.group("call")), int(m.group("value")), (inner[-1] if inner else None)


def test_documented_latencies_are_the_codes():
    classes, constants = _constants()
    config = preset("default")
    wrong, ambiguous, checked = [], [], 0
    for where, line, module, cls, attr, call, value, enclosing in _citations():
        if module is not None:          # rtl.<module>[.Class].ATTR: exactly that
            owner = importlib.import_module(module.rstrip("."))
            if cls is not None:
                owner = getattr(owner, cls, None)
            if owner is None or not hasattr(owner, attr):
                wrong.append(f"{where}:{line}: {module}{cls + '.' if cls else ''}{attr} does not exist")
                continue
            got = _value(owner, attr, config, call)
        elif cls is not None:
            if cls not in classes or not hasattr(classes[cls], attr):
                continue                # a name of something else (a Python API, a tool)
            got = _value(classes[cls], attr, config, call)
        elif enclosing in classes and attr.isupper() and attr in vars(classes[enclosing]):
            got = _value(classes[enclosing], attr, config)
        elif attr.isupper() and attr in constants:
            owners = constants[attr]
            if len(set(owners.values())) > 1:
                ambiguous.append(f"{where}:{line}: `{attr}` = {value}: name its owner, one of {sorted(owners)}")
                continue
            got = next(iter(owners.values()))
        else:
            continue
        checked += 1
        if not isinstance(got, int) or got != value:
            wrong.append(f"{where}:{line}: {cls + '.' if cls else ''}{attr} = {value} documented, {got} in the code")
    assert not wrong and not ambiguous, "\n".join(wrong + ambiguous)
    assert checked >= 10, f"only {checked} documented latencies found: the pattern no longer matches the docs"


def test_citation_pattern_finds_a_wrong_value(tmp_path):
    """The check can fail: a wrong documented value is reported with its place."""
    from rtl.ub.reader import UbReader
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "x.md").write_text(f"the reader takes `UbReader.LATENCY` = {UbReader.LATENCY + 1} cycles\n")
    (tmp_path / "README.md").write_text("")
    global ROOT
    old, ROOT = ROOT, tmp_path
    try:
        with pytest.raises(AssertionError, match=f"docs/x.md:1: UbReader.LATENCY = {UbReader.LATENCY + 1} "
                                                 f"documented, {UbReader.LATENCY} in the code"):
            test_documented_latencies_are_the_codes()
    finally:
        ROOT = old
