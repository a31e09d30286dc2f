"""The package's exceptions."""


class TdslError(Exception):
    """Base class of the package's errors."""


class CompileError(TdslError):
    """tdslc or nvcc refused the source; the message holds their output."""


class ArgumentError(TdslError, ValueError):
    """A call's argument does not fit its parameter. Raised before anything
    is launched; `param` names the parameter (None for the call as a whole)."""

    def __init__(self, kernel, param, message):
        where = f"tdsl {kernel}: " + (f"argument '{param}': " if param else "")
        super().__init__(where + message)
        self.kernel, self.param = kernel, param


class LaunchError(TdslError, RuntimeError):
    """A launcher or query returned a tdsl_status other than TDSL_SUCCESS:
    `status` is its number, `status_name` its TDSL_ERROR_ name, and the
    message the runtime's (tdsl_status_string, and the CUDA error behind
    it where there is one)."""

    def __init__(self, kernel, status, status_name, message):
        super().__init__(f"tdsl {kernel}: {status_name}: {message}")
        self.kernel, self.status, self.status_name = kernel, status, status_name
