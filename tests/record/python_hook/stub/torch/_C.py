"""torch._C's out-of-memory observers, which the caching allocator calls
before it raises (STUB_OOM_OBSERVER=missing: a build without them)."""
import os

observers = []

if os.environ.get("STUB_OOM_OBSERVER") != "missing":

    def _cuda_attach_out_of_memory_observer(observer):
        observers.append(observer)
