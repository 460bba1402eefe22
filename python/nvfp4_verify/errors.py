"""The exception of nvfp4-verify's operations (pure Python, so that workers can raise it too)."""


class Nvfp4Error(Exception):
    """An operation rejected its case: `code` is one of the registry's error codes ("E_DIM16_K", ...),
    or None. The message names the operation, the code and the offending values."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code
