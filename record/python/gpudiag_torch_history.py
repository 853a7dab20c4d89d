"""PyTorch's caching-allocator history, beside a gpudiag trace.

PyTorch hands the blocks of its CUDA segments from tensor to tensor without a
CUDA call, so a trace of CUDA calls cannot tell when a dropped tensor's memory
became free again. The allocator's own history can: once the program has
initialised CUDA, torch.cuda.memory._record_memory_history() starts, and at
exit the history (torch.cuda.memory._snapshot()'s device_traces) is written
to <trace>.torch-memory.json, with the two clocks needed to put its times on
the trace's. `gpudiag report` reads it to judge a tensor dropped while another
stream still used it (GD004, record_stream).

When PyTorch is about to raise torch.OutOfMemoryError, before the program
unwinds and drops what held the memory, the allocator's whole snapshot (its
segments and blocks, each with the Python stack that allocated it, and the
history) is written to <trace>.torch-oom.pickle, in the format of
torch.cuda.memory._dump_snapshot, with the device's capacity added under
"gpudiag_out_of_memory". `gpudiag report` explains the out-of-memory from it
(GD008); PyTorch's memory_viz page opens it too.

It does nothing where the program does not use CUDA through PyTorch, in a
forked child, where GPUDIAG_TORCH_HISTORY=off, or with a PyTorch without that
history (before 2.1). It never imports torch itself nor initialises CUDA.
"""
import atexit
import importlib.abc
import json
import os
import pickle
import sys
import time

FORMAT = "gpudiag-torch-memory"
# Allocator events kept, the newest (a ring): thousands of training steps,
# and a history file of tens of megabytes.
MAX_ENTRIES = 250_000

_state = {"pid": None}


def _beside_trace(suffix):
    pattern = os.environ.get("GPUDIAG_TRACE", "")
    if not pattern:
        return None
    return pattern.replace("%p", str(os.getpid())) + suffix


def _history_path():
    return _beside_trace(".torch-memory.json")


# What the report reads of each entry; the snapshot's other actions
# (segments, snapshots, out-of-memory) are left out.
_ACTIONS = ("alloc", "free_requested", "free_completed")


def _compact(device_traces):
    """The entries the report reads, each stack written once: a table of
    frames, a table of stacks (frame numbers, innermost first), and entries
    that name their stack by number."""
    frames, frame_numbers, stacks, stack_numbers = [], {}, [], {}

    def frame_number(frame):
        key = (frame.get("filename", ""), frame.get("line", 0), frame.get("name", ""))
        if key not in frame_numbers:
            frame_numbers[key] = len(frames)
            frames.append(list(key))
        return frame_numbers[key]

    def stack_of(entry):
        key = tuple(frame_number(f) for f in entry.get("frames", ()))
        if key not in stack_numbers:
            stack_numbers[key] = len(stacks)
            stacks.append(list(key))
        return stack_numbers[key]

    devices = []
    for entries in device_traces:
        devices.append(
            [
                {
                    "action": e["action"],
                    "addr": e["addr"],
                    "size": e.get("size", 0),
                    "stream": e.get("stream", 0),
                    "time_us": e.get("time_us", 0),
                    "stack": stack_of(e),
                }
                for e in entries
                if e.get("action") in _ACTIONS
            ]
        )
    return frames, stacks, devices


def _write_history():
    if _state["pid"] != os.getpid():
        return  # a forked child: its parent writes the history
    path = _history_path()
    torch = sys.modules.get("torch")
    if path is None or torch is None:
        return
    # At exit, after the program's own work: a failure is said in one line,
    # never as a traceback, and leaves the exit status alone.
    try:
        snapshot = torch.cuda.memory._snapshot()
        frames, stacks, devices = _compact(snapshot.get("device_traces", []))
        document = {
            "format": FORMAT,
            "version": 1,
            "pid": os.getpid(),
            # PyTorch's time_us is on the realtime clock, the trace's on the monotonic one.
            "clock": {"realtime_ns": time.time_ns(), "monotonic_ns": time.monotonic_ns()},
            "frames": frames,  # [filename, line, function]
            "stacks": stacks,  # frame numbers, innermost first
            "device_traces": devices,
        }
        partial = path + ".partial"
        with open(partial, "w", encoding="utf-8") as out:
            json.dump(document, out, separators=(",", ":"))
        os.replace(partial, path)
    except Exception as error:  # CUDA already torn down, a PyTorch without it, a folder gone
        sys.stderr.write(f"gpudiag: PyTorch's allocator history was not written: {error}\n")


def _on_out_of_memory(device, requested, device_total, device_free):
    """PyTorch's out-of-memory observer: called by the caching allocator after
    it failed to find `requested` bytes on `device`, before it raises, while
    every tensor is still held. The snapshot of that moment is written beside
    the trace; the last out-of-memory's is the one kept (PyTorch catches some
    itself, as cuDNN's workspace fallbacks do). Silent unless it fails, and
    never raises: the program's own output and error must be what it sees."""
    if _state["pid"] != os.getpid():
        return
    path = _beside_trace(".torch-oom.pickle")
    torch = sys.modules.get("torch")
    if path is None or torch is None:
        return
    try:
        snapshot = torch.cuda.memory._snapshot()
        try:
            capacity = torch.cuda.mem_get_info(device)[1]
        except Exception:
            capacity = device_total
        snapshot["gpudiag_out_of_memory"] = {
            "device": device, "requested": requested, "free": device_free, "capacity": capacity,
            # The allocator's own limit: the device's memory, or less under set_per_process_memory_fraction.
            "limit": device_total,
        }
        partial = path + ".partial"
        with open(partial, "wb") as out:
            pickle.dump(snapshot, out, protocol=4)
        os.replace(partial, path)
    except Exception as error:
        sys.stderr.write(f"gpudiag: PyTorch's allocator at the out-of-memory was not written: {error}\n")


def _start_recording():
    # Runs inside PyTorch's CUDA initialisation, which an exception would fail.
    torch = sys.modules["torch"]
    try:
        torch.cuda.memory._record_memory_history(
            enabled="all", context="all", stacks="python", max_entries=MAX_ENTRIES
        )
    except Exception:
        return  # PyTorch before 2.1 (no history with stacks and times), or none for this build
    _state["pid"] = os.getpid()
    atexit.register(_write_history)
    try:
        torch._C._cuda_attach_out_of_memory_observer(_on_out_of_memory)
    except Exception:
        pass  # a build without the observer: the out-of-memory is explained from the trace alone


def _torch_imported(torch):
    lazy_call = getattr(getattr(torch, "cuda", None), "_lazy_call", None)
    if lazy_call is None:
        return
    try:
        lazy_call(_start_recording)  # when the program first initialises CUDA; at once if it has
    except Exception:
        pass


class _AfterTorch(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Lets `import torch` happen as usual, then calls _torch_imported."""

    def find_spec(self, name, path, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        try:
            import importlib.util

            spec = importlib.util.find_spec("torch")
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        self._loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        sys.meta_path.remove(self)
        # The module keeps torch's own loader, as without gpudiag.
        module.__spec__.loader = module.__loader__ = self._loader
        self._loader.exec_module(module)
        _torch_imported(module)


def install():
    if not os.environ.get("GPUDIAG_TRACE") or os.environ.get("GPUDIAG_TORCH_HISTORY", "on") == "off":
        return
    if "torch" in sys.modules:
        _torch_imported(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _AfterTorch())
