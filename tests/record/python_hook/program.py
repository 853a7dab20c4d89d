"""Imports torch, initialises CUDA, and says what the hook did. With
`fork`, a child made after initialisation exits through atexit too; with
`oom`, an allocation fails as PyTorch's do."""
import os
import sys

if sys.argv[1:] == ["no-torch"]:
    print("no torch")
    sys.exit(0)
import torch
import torch.cuda.memory as memory

print("recording before init:", len(memory.recorded))
torch.cuda.init()
print("recording after init:", memory.recorded)
print("loader:", type(torch.__loader__).__name__)
if sys.argv[1:] == ["oom"]:
    # As the caching allocator does: its observers, then the error.
    for observer in torch._C.observers:
        observer(0, 4 << 30, 40 << 30, 100 << 20)  # under set_per_process_memory_fraction(0.5)
    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 4.00 GiB.")
if sys.argv[1:] == ["fork"]:
    child = os.fork()
    if child == 0:
        sys.exit(0)
    os.waitpid(child, 0)
