"""torch.cuda.memory's allocator history: PyTorch 2.1's keywords, or 1.13's
(STUB_HISTORY=old), which refuses them."""
import os

recorded = []


def _record_memory_history(enabled=None, context=None, stacks=None, max_entries=None, device=None):
    if os.environ.get("STUB_HISTORY") == "old" and context is not None:
        raise TypeError("_record_memory_history() got an unexpected keyword argument 'context'")
    recorded.append({"enabled": enabled, "context": context, "stacks": stacks, "max_entries": max_entries})


def _snapshot():
    return {
        "segments": [],
        "device_traces": [
            [{"action": "alloc", "addr": 4096, "size": 512, "stream": 0, "time_us": 7, "frames": []}]
        ],
    }
