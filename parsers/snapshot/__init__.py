"""PyTorch CUDA memory snapshots (``torch.cuda.memory._dump_snapshot`` pickles), read without
running them: :mod:`.unpickle` loads the pickle with every global and persistent id refused,
:mod:`.frames` turns the loaded snapshot into the documented frames (segments, blocks, events,
stacks, annotations)."""
