"""torch.cuda.memory's allocator history: PyTorch 2.1's keywords, or 1.13's
(STUB_HISTORY=old), which refuses them. The snapshot is a fixed one, or the
JSON file STUB_SNAPSHOT names."""
import json
import os

recorded = []


def _record_memory_history(enabled=None, context=None, stacks=None, max_entries=None, device=None):
    if os.environ.get("STUB_HISTORY") == "old" and context is not None:
        raise TypeError("_record_memory_history() got an unexpected keyword argument 'context'")
    recorded.append({"enabled": enabled, "context": context, "stacks": stacks, "max_entries": max_entries})


def _snapshot():
    if os.environ.get("STUB_SNAPSHOT"):
        with open(os.environ["STUB_SNAPSHOT"], encoding="utf-8") as f:
            return json.load(f)
    step = {"filename": "train.py", "line": 12, "name": "step"}
    main = {"filename": "train.py", "line": 90, "name": "main"}
    return {
        "segments": [],
        "device_traces": [
            [
                {"action": "segment_alloc", "addr": 0, "size": 2097152, "stream": 0, "time_us": 6, "frames": [main]},
                {"action": "alloc", "addr": 4096, "size": 512, "stream": 0, "time_us": 7, "frames": [step, main]},
                {"action": "free_completed", "addr": 4096, "size": 512, "stream": 0, "time_us": 9, "frames": []},
            ]
        ],
    }
