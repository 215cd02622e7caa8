"""docs/architecture.md carries the encoding tables generated from rtl/: they must not drift."""

import pathlib

from sim.isa_doc import tables

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_architecture_tables_match_rtl():
    text = (ROOT / "docs" / "architecture.md").read_text()
    begin = text.index("<!-- BEGIN GENERATED: python -m sim.isa_doc -->") + len("<!-- BEGIN GENERATED: python -m sim.isa_doc -->")
    end = text.index("<!-- END GENERATED -->")
    assert text[begin:end].strip() == tables().strip(), "regenerate with: python -m sim.isa_doc"
