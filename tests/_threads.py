"""``from _threads import one_thread``: torch on one thread inside a ``with`` block, its thread
count restored after. For tests of single rows and of rows GPT-2's width: there two threads
mostly wait on each other, and on a loaded machine cost several times the CPU time."""
from contextlib import contextmanager

import torch


@contextmanager
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
