"""Run at the start of every Python program that `gpudiag trace` runs: its
folder comes first on PYTHONPATH.

When the program uses PyTorch on a GPU, gpudiag_torch_history records
PyTorch's caching-allocator history and writes it beside the trace at exit
(see that module). Nothing else changes: torch is not imported here and CUDA
is not initialised. Then the sitecustomize this one hides, if the program's
environment has one, runs as it would have.
"""
import importlib.machinery
import importlib.util
import os
import sys


def _run_hidden_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


import gpudiag_torch_history  # noqa: E402

gpudiag_torch_history.install()
_run_hidden_sitecustomize()
