"""The timing contract's checks: :func:`require` states, at elaboration, a coupling between pipeline
depths that must hold (one module's latency against another's, a queue's depth against the credits
that fill it, ...). A configuration or an edit that breaks one fails when the unit is built, with the
coupling's text, instead of producing hardware that drops or duplicates data."""

__all__ = ["ContractError", "require"]


class ContractError(ValueError):
    """A latency or depth coupling of the timing contract does not hold."""


def require(condition, what):
    """Raise :class:`ContractError` with ``what`` (the coupling, in words, with its values) unless
    ``condition`` holds. Call it in ``__init__`` or ``elaborate`` beside the code that relies on it."""
    if not condition:
        raise ContractError(what)
