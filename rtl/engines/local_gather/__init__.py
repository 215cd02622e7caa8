"""LOCAL_GATHER: AWS NKI's ``local_gather`` inside the UB (:class:`LocalGatherEngine`)."""

from rtl.engines.local_gather.engine import LocalGatherEngine

__all__ = ["LocalGatherEngine"]
