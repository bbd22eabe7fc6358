"""How the grader and a submission's process talk: framed messages of plain data only.

Used by the grader (``grading.session``, the trusted side) and by a submission's process
(``grading.learner``). Not taught. A message is a JSON header plus raw byte blobs::

    [8 bytes: header length][4 bytes: number of blobs][header][8 bytes: length][blob]...

Values travel as JSON (None, bool, int, float — NaN and ±inf included —, str, list), with
tagged dicts for the rest: ``{"$t": i, "dtype", "shape"}`` a tensor whose bytes are blob i,
``{"$bytes": i}``, ``{"$tuple": [...]}``, ``{"$dict": [[key, value], ...]}`` (``"$tdict"`` when
every key is a tuple of str and every value an int or str: GPT-2's merge ranks), ``{"$opaque":
kind}`` (something that is not plain data, named by its type). :func:`decode` rebuilds only
these: no pickle, no object of the sender's choosing, so a rigged ``__eq__`` cannot cross. It
checks every tag, dtype, shape and size, and raises :class:`ProtocolError` on anything else.
Extra tags (models, cached inputs) are the business of ``session`` and ``learner``, through
the ``special`` hooks.
"""
from __future__ import annotations

import json
import math
import select
import socket
import struct
import time

import torch

from ..exercises.guard import Opaque, opaque

DTYPES = {str(d): d for d in (torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32,
                              torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128)}
MAX_MESSAGE = 1 << 30          # 1 GiB: a GPT-2-sized table (154 MB) fits, a runaway reply does not


class ProtocolError(Exception):
    """A message that is not what the protocol allows (or a peer that went away)."""


class Timeout(Exception):
    """No complete message before the deadline."""


def send(sock: socket.socket, header: dict, blobs=()) -> None:
    head = json.dumps(header, allow_nan=True).encode("utf-8")
    sock.sendall(struct.pack("<QI", len(head), len(blobs)) + head)
    for blob in blobs:
        sock.sendall(struct.pack("<Q", len(blob)))
        sock.sendall(blob)


class Reader:
    """One message, reassembled from what the socket holds as it arrives: the grader reads a
    reply a piece at a time while it keeps watching the submission's clocks, so a message that
    has begun never pauses them."""

    def __init__(self, limit: int = MAX_MESSAGE):
        self.limit, self.header, self.blobs, self.total = limit, None, [], 0
        self._expect(12, self._prefix)

    def _expect(self, n: int, then) -> None:
        self.buffer, self.filled, self.then = bytearray(n), 0, then

    def read_from(self, sock: socket.socket):
        """Read what ``sock`` holds now, without waiting: (header, blobs) once the message is
        whole, else None. ProtocolError when the peer went away or sent what is not allowed."""
        while True:
            if self.filled == len(self.buffer):
                message = self.then(self.buffer)
                if message is not None:
                    return message
                continue
            if not select.select([sock], [], [], 0)[0]:
                return None
            try:
                count = sock.recv_into(memoryview(self.buffer)[self.filled:], min(len(self.buffer) - self.filled, 1 << 24))
            except OSError as error:
                raise ProtocolError(f"the connection failed ({error})") from None
            if not count:
                raise ProtocolError("the process ended")
            self.filled += count

    def _prefix(self, data: bytearray):
        n_head, self.n_blobs = struct.unpack("<QI", data)
        if n_head > self.limit or self.n_blobs > 100_000:
            raise ProtocolError("a message larger than allowed")
        self.total = n_head
        self._expect(n_head, self._header)

    def _header(self, data: bytearray):
        try:
            header = json.loads(bytes(data).decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):           # RecursionError: JSON nested 10,000 deep
            raise ProtocolError("a message that is not JSON") from None
        if not isinstance(header, dict):
            raise ProtocolError("a message that is not a JSON object")
        self.header = header
        return self._next_blob()

    def _next_blob(self):
        if len(self.blobs) == self.n_blobs:
            return self.header, self.blobs
        self._expect(8, self._size)

    def _size(self, data: bytearray):
        (size,) = struct.unpack("<Q", data)
        self.total += size
        if self.total > self.limit:
            raise ProtocolError("a message larger than allowed")
        self._expect(size, self._blob)

    def _blob(self, data: bytearray):
        self.blobs.append(data)
        return self._next_blob()


def receive(sock: socket.socket, deadline: float | None = None, limit: int = MAX_MESSAGE):
    """(header, blobs) of the next message; Timeout after ``deadline`` (time.monotonic())."""
    reader = Reader(limit)
    while True:
        message = reader.read_from(sock)
        if message is not None:
            return message
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise Timeout
        select.select([sock], [], [], left)


class Encoder:
    """Turns a value into JSON-able data plus blobs; ``special(value, encoder)`` may claim a
    value first (return a dict) or decline (return None)."""

    def __init__(self, special=None):
        self.blobs: list[bytes] = []
        self.special = special

    def blob(self, data: bytes) -> int:
        self.blobs.append(data)
        return len(self.blobs) - 1

    def tensor(self, value: torch.Tensor) -> dict:
        t = value.detach().cpu().contiguous()
        if str(t.dtype) not in DTYPES or t.is_sparse:
            return {"$opaque": f"tensor of dtype {t.dtype}"}
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        return {"$t": self.blob(raw), "dtype": str(t.dtype), "shape": list(t.shape)}

    def dict(self, value: dict) -> dict:
        if all(type(k) is tuple and all(type(p) is str for p in k) and type(v) in (int, str) for k, v in value.items()):
            return {"$tdict": [[list(k), v] for k, v in value.items()]}      # e.g. GPT-2's 50,000 merge ranks
        return {"$dict": [[self(k), self(v)] for k, v in value.items()]}

    def __call__(self, value):
        if value is None or type(value) in (bool, int, str):
            return value
        if type(value) is float:
            return value if math.isfinite(value) else {"$float": repr(value)}
        if self.special is not None:
            claimed = self.special(value, self)
            if claimed is not None:
                return claimed
        if type(value) in (torch.Tensor, torch.nn.Parameter):
            return self.tensor(value)
        if type(value) is bytes:
            return {"$bytes": self.blob(value)}
        if type(value) is list:
            return [self(v) for v in value]
        if type(value) is tuple:
            return {"$tuple": [self(v) for v in value]}
        if type(value) is dict:
            return self.dict(value)
        if isinstance(value, Opaque):
            return {"$opaque": str(value.kind)}
        return {"$opaque": type(value).__name__}


def decode(data, blobs, special=None, _depth: int = 0):
    """The value ``data`` (+ ``blobs``) stands for, built from plain types only."""
    if _depth > 60:
        raise ProtocolError("a value nested too deeply")
    if data is None or type(data) in (bool, int, float, str):
        return data
    if type(data) is list:
        return [decode(v, blobs, special, _depth + 1) for v in data]
    if type(data) is not dict or len(data) == 0:
        raise ProtocolError("an unknown value")
    tag = next(iter(data))
    try:
        if tag == "$t":
            dtype = DTYPES[data["dtype"]]
            shape = [int(n) for n in data["shape"]]
            raw = blobs[data["$t"]]
            if any(n < 0 for n in shape) or math.prod(shape) * dtype.itemsize != len(raw) or len(shape) > 16:
                raise ProtocolError("a tensor whose size does not match its shape")
            if not raw:
                return torch.empty(shape, dtype=dtype)
            raw = raw if isinstance(raw, bytearray) else bytearray(raw)      # a fresh buffer per message, owned here
            return torch.frombuffer(raw, dtype=torch.uint8).view(dtype).reshape(shape)
        if tag == "$float":
            value = float(data["$float"])
            if math.isfinite(value):
                raise ProtocolError("a tagged float that is finite")
            return value
        if tag == "$bytes":
            return bytes(blobs[data["$bytes"]])       # immutable, like what was sent
        if tag == "$tuple":
            return tuple(decode(v, blobs, special, _depth + 1) for v in data["$tuple"])
        if tag == "$dict":
            return {decode(k, blobs, special, _depth + 1): decode(v, blobs, special, _depth + 1) for k, v in data["$dict"]}
        if tag == "$tdict":
            out = {}
            for key, value in data["$tdict"]:
                if not (type(key) is list and all(type(p) is str for p in key) and type(value) in (int, str)):
                    raise ProtocolError("a malformed dict")
                out[tuple(key)] = value
            return out
        if tag == "$opaque":
            return opaque(str(data["$opaque"])[:80])
    except (KeyError, IndexError, TypeError, ValueError) as error:
        raise ProtocolError(f"a malformed value ({type(error).__name__})") from None
    if special is not None:
        return special(data, blobs, _depth)
    raise ProtocolError(f"an unknown tag {str(tag)[:40]!r}")
