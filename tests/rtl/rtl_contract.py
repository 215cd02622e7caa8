"""Helpers of the timing-contract tests: they build components only to elaborate them (up to a
``ContractError``)."""

import contextlib
import gc

import pytest
from amaranth._unused import MustUse

__all__ = ["built_not_used"]


@contextlib.contextmanager
def built_not_used():
    """Components built only to be elaborated (up to a ``ContractError``) are never used: no warning for
    them (collected before the silence ends)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(MustUse, "_MustUse__silence", True)
        yield
        gc.collect()
