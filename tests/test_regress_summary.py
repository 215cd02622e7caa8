"""The `make sim` summary fits a terminal: the status column is cut to whole statuses plus a count."""

from sim.regress import STATUS_WIDTH, _print_table, _short_status


def test_short_status_keeps_whole_names():
    assert _short_status("OK") == "OK"
    assert _short_status("LAYOUT_UNSUPPORTED,OK") == "LAYOUT_UNSUPPORTED,OK"
    many = "DTYPE_INVALID,DTYPE_MISMATCH,OK,SHAPE_MISMATCH,UB_MISALIGNED,VALIDITY_PATTERN"
    cell = _short_status(many)
    assert len(cell) <= STATUS_WIDTH and cell.startswith("DTYPE_INVALID") and cell.endswith(" +5")


def test_table_width(capsys):
    statuses = ",".join(["DTYPE_INVALID", "DTYPE_MISMATCH", "OK", "SHAPE_MISMATCH", "UB_MISALIGNED",
                         "UB_OUT_OF_RANGE", "VALID_EXCEEDS_STATIC", "VALIDITY_PATTERN"])
    _print_table([("error_dtype_invalid", "TROWEXPANDMUL", "16x16/16x17 col", "FP16", "3-534", statuses, "PASS")])
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) <= 120
