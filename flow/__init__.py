"""Hardware flows around the RTL, none of which the RTL imports: ECP5 synthesis, place and route and their
reports (:mod:`flow.synth`, :mod:`flow.area`, :mod:`flow.paths`, :mod:`flow.sweep`, :mod:`flow.tools`,
:mod:`flow.floorplan`), the fp units' own synthesis table (:mod:`flow.fp`)."""
