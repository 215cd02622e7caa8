"""Tests of the float units (rtl/fp)."""
