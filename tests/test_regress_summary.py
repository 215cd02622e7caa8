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


def test_longest_first_uses_the_previous_run(tmp_path, monkeypatch):
    """``make sim`` hands the pool the longest runs first (by the last run's results file), entries never run
    before ahead of all; the table keeps the regression's order (main sorts the rows back)."""
    import sim.regress as regress
    from sim.regress import Entry, longest_first
    monkeypatch.setattr(regress, "BUILD", tmp_path)
    a, b, c = (Entry("test_errors", n) for n in ("a", "b", "c"))
    for entry, seconds in ((a, 1.5), (b, 30.0)):
        d = tmp_path / "run" / "icarus-small" / entry.name
        d.mkdir(parents=True)
        (d / "results.xml").write_text(f'<testsuites><testsuite><testcase name="{entry.name}" time="{seconds}"/>'
                                       "</testsuite></testsuites>")
    assert longest_first([a, b, c]) == [c, b, a]
    assert regress.previous_seconds(c) is None and regress.previous_seconds(b) == 30.0
