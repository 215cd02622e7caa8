"""The exceptions of the golden model.

``IsaError``        an illegal instruction: carries the ``Status`` the hardware answers with and a message
                    naming the violated constraint and the offending values.
``UndefinedResult`` a legal instruction whose result the ISA leaves undefined (MGATHER ``UNDEFINED`` mode
                    with an out-of-range index, local_gather with an out-of-range offset, a destination that
                    overlaps a source).  ``elements`` (when known) is a boolean mask over the destination tile
                    (static shape) marking the undefined elements; ``Machine.execute`` adds ``ub_mask``, a
                    boolean mask over the UB bytes whose value is unspecified.
``AmbiguousFault``  a GM fault window (``Machine.faults``) placed where the hardware's status is not
                    determined (an MGATHER with an undefined result and a read fault in its table).
"""

from rtl.isa import Status

__all__ = ["IsaError", "UndefinedResult", "AmbiguousFault"]


class IsaError(Exception):
    def __init__(self, status, message):
        if not isinstance(status, Status):
            raise TypeError(f"status must be a Status, not {status!r}")
        self.status = status
        self.message = message
        super().__init__(f"{status.name}: {message}")


class UndefinedResult(Exception):
    def __init__(self, message, elements=None):
        self.message = message
        self.elements = elements
        self.ub_mask = None
        super().__init__(message)


class AmbiguousFault(ValueError):
    """A GM fault placed where the hardware's answer is not determined (``Machine.faults``): an MGATHER
    whose result is undefined reads table rows the indices do not determine, so a read fault in its
    table may or may not be met. Raised by ``Machine.execute``; a fault generator moves the window."""
