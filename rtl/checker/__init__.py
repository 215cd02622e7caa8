"""The instruction checker: :class:`rtl.checker.checker.Checker` (the pipeline that gives every command
its status before an engine may touch anything) and :mod:`rtl.checker.stages`, the helpers it and the
engines' ``add_checks`` build their checks from."""
