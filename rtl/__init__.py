"""Amaranth HDL for the tile vector unit. ``isa`` and ``status`` hold every encoding; ``config`` the parameters.

:data:`SOURCE_DIGEST` is a hash of every ``rtl/**/*.py`` as they were when this package was first imported:
what a process that elaborates the unit actually runs (``flow.export.export_stamp`` stamps exported Verilog
with it, so that a long-running process exporting after ``rtl/`` was edited does not label its old netlist
with the new sources' stamp)."""

import hashlib as _hashlib
import pathlib as _pathlib


def source_digest():
    """SHA-256 over the paths and contents of ``rtl/**/*.py`` on disk now."""
    root = _pathlib.Path(__file__).parent
    h = _hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(f"rtl/{path.relative_to(root).as_posix()}\n".encode())
        h.update(_hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


#: :func:`source_digest` at the package's first import.
SOURCE_DIGEST = source_digest()
