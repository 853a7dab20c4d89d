"""A stand-in for PyTorch with the few calls gpudiag_torch_history makes, to
test the hook where no CUDA PyTorch is installed."""
from . import _C  # noqa: F401
from . import cuda  # noqa: F401


class OutOfMemoryError(RuntimeError):
    pass
