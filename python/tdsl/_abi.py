"""tdsl/runtime.h's C ABI as ctypes sees it: the status codes, the 16-bit
scalars and tdsl_launch_info. Standard library only, so that
test/gpu/gpu_check.py (which runs without torch or the package's other
needs) takes them from here too."""
import ctypes

# tdsl_status, by number.
STATUS_NAMES = ("TDSL_SUCCESS", "TDSL_ERROR_NULL_POINTER", "TDSL_ERROR_MISALIGNED_POINTER",
                "TDSL_ERROR_INVALID_SIZE", "TDSL_ERROR_SIZE_MISMATCH", "TDSL_ERROR_TOO_LARGE",
                "TDSL_ERROR_OUT_OF_MEMORY", "TDSL_ERROR_DEVICE", "TDSL_ERROR_LAUNCH",
                "TDSL_ERROR_CUDA", "TDSL_ERROR_WORKSPACE_TOO_SMALL")
# The statuses behind which tdsl_last_cuda_error() holds the CUDA error.
CUDA_STATUSES = (6, 8, 9)


def status_name(status):
    """The TDSL_ name of a status number; None for one runtime.h does not
    define."""
    return STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else None


class Half(ctypes.Structure):
    """tdsl_f16 / tdsl_bf16: one uint16_t, passed by value."""
    _fields_ = [("bits", ctypes.c_uint16)]


class LaunchInfo(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared_bytes", ctypes.c_size_t)]
