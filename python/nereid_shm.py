"""Shared memory between the server and a stub: POSIX objects under /dev/shm, mapped on both sides.

Input regions belong to the server: it creates them, writes each execution's input tensors into a block of one,
and this process maps them by name the first time it sees one, so an input's numpy array is a view of the
region. Output regions belong to this process: a response's tensors are copied into one block, the server maps
the region and copies them out, then tells us to free the block. A region that cannot hold a block makes room
by adding a bigger region (shm-default-byte-size, grown in steps of shm-growth-byte-size); regions left
entirely free by that are retired.

An output array that already lies in an input region (an identity model returning its input) is not copied
here at all: the response names the input region and offset, and the server reads it from its own mapping.
"""

import mmap
import os
import threading

import numpy as np

import triton_python_backend_utils as pb_utils

ALIGN = 64


def _align(n):
    return (n + ALIGN - 1) & ~(ALIGN - 1)


def _address(array):
    return array.__array_interface__["data"][0]


def tensor_bytes(tensor):
    """(bytes-like, BYTES element count or None) of a pb_utils.Tensor, for BLS calls."""
    array = tensor._array
    if tensor._datatype == "BYTES":
        flat = _as_bytes_array(array)
        data = pb_utils.serialize_byte_tensor(flat)
        return (data if data != () else b""), int(flat.size)
    return memoryview(np.ascontiguousarray(array)).cast("B"), None


def _as_bytes_array(array):
    if array.dtype.type == np.str_:
        return np.array([s.encode("utf-8") for s in array.reshape(-1)], dtype=np.object_).reshape(array.shape)
    return array


class _Mapped:
    def __init__(self, name, size, create):
        path = "/dev/shm/" + name
        if create:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.ftruncate(fd, size)
                self.mm = mmap.mmap(fd, size)
            finally:
                os.close(fd)
        else:
            fd = os.open(path, os.O_RDWR)
            try:
                size = os.fstat(fd).st_size
                self.mm = mmap.mmap(fd, size)
            finally:
                os.close(fd)
        self.name = name
        self.path = path
        self.size = size
        self.u8 = np.frombuffer(self.mm, dtype=np.uint8)
        self.base = _address(self.u8)

    def close(self):
        self.u8 = None
        try:
            self.mm.close()
        except BufferError:
            pass  # a model kept an array of this region: it stays mapped until that array is collected


class InputRegions:
    """The server's regions, mapped on first use."""

    def __init__(self):
        self._regions = {}

    def _get(self, name):
        r = self._regions.get(name)
        if r is None:
            r = _Mapped(name, 0, False)
            self._regions[name] = r
        return r

    def array(self, d):
        """A numpy view of one tensor (BYTES elements are decoded into an object array: a copy)."""
        r = self._get(d["r"])
        o, b = d["o"], d["b"]
        if d["d"] == "BYTES":
            return pb_utils.deserialize_bytes_tensor(r.mm[o:o + b]).reshape(d["s"])
        dtype = pb_utils._WIRE_DTYPES[d["d"]]
        if b == 0:
            return np.empty(d["s"], dtype=dtype)
        return r.u8[o:o + b].view(dtype).reshape(d["s"])

    def locate(self, array):
        """(region name, offset) when the array's bytes lie inside one of the server's regions."""
        # A freshly computed array owns its memory: only views can lie in a region.
        if array.base is None or not self._regions or not array.flags.c_contiguous:
            return None
        at = _address(array)
        for r in self._regions.values():
            if r.u8 is not None and r.base <= at and at + array.nbytes <= r.base + r.size:
                return r.name, at - r.base
        return None

    def drop(self, name):
        r = self._regions.pop(name, None)
        if r is not None:
            r.close()


class _Region(_Mapped):
    def __init__(self, name, size):
        super().__init__(name, size, True)
        self.free = [(0, size)]  # (offset, length), sorted by offset
        self.used = {}

    def alloc(self, n):
        for i, (off, length) in enumerate(self.free):
            if length >= n:
                if length == n:
                    del self.free[i]
                else:
                    self.free[i] = (off + n, length - n)
                self.used[off] = n
                return off
        return None

    def release(self, off):
        n = self.used.pop(off, None)
        if n is None:
            return
        self.free.append((off, n))
        self.free.sort()
        merged = []
        for o, length in self.free:
            if merged and merged[-1][0] + merged[-1][1] == o:
                merged[-1] = (merged[-1][0], merged[-1][1] + length)
            else:
                merged.append((o, length))
        self.free = merged

    def idle(self):
        return not self.used

    def unlink(self):
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class OutputRegions:
    def __init__(self, prefix, default_bytes, growth_bytes, inputs):
        self._prefix = prefix
        self._default = default_bytes
        self._growth = growth_bytes
        self._inputs = inputs
        self._regions = {}
        self._generation = 0
        self._lock = threading.Lock()
        self._retired = []

    def _alloc(self, n):
        with self._lock:
            for r in self._regions.values():
                off = r.alloc(n)
                if off is not None:
                    return r, off
            size = max(self._default, -(-n // self._growth) * self._growth)
            for name in [k for k, r in self._regions.items() if r.idle() and r.size < size]:
                self._regions.pop(name).unlink()
                self._retired.append(name)
            self._generation += 1
            r = _Region(f"{self._prefix}out{self._generation}", size)
            self._regions[r.name] = r
            return r, r.alloc(n)

    def take_retired(self):
        """Regions retired since the last call: the server unmaps them."""
        with self._lock:
            out, self._retired = self._retired, []
        return out

    def free(self, blocks):
        with self._lock:
            for name, off in blocks:
                r = self._regions.get(name)
                if r is not None:
                    r.release(off)

    def write(self, tensors):
        """Descriptors of the tensors and the block ([region, offset]) holding them, or None when none was needed."""
        plan = []
        total = 0
        for t in tensors:
            array = t._array
            if t._datatype == "BYTES":
                flat = _as_bytes_array(array)
                data = pb_utils.serialize_byte_tensor(flat)
                data = data if data != () else b""
                plan.append((t, None, data, len(data), int(flat.size)))
                total += _align(len(data))
                continue
            where = self._inputs.locate(array)
            if where is not None:
                plan.append((t, where, None, array.nbytes, None))
                continue
            plan.append((t, None, None, array.nbytes, None))
            total += _align(array.nbytes)
        region, base = self._alloc(total) if total > 0 else (None, 0)
        at = base
        descs = []
        for t, where, data, nbytes, count in plan:
            d = {"n": t._name, "d": t._datatype, "s": list(t._array.shape), "b": nbytes}
            if count is not None:
                d["c"] = count
            if where is not None:
                d["r"], d["o"] = where
            elif nbytes == 0:
                d["o"] = 0  # nothing to read: no region, which a response of only empty tensors does not have
            else:
                d["r"], d["o"] = region.name, at
                if data is not None:
                    region.mm[at:at + nbytes] = data
                elif nbytes > 0:
                    array = t._array
                    np.copyto(region.u8[at:at + nbytes].view(array.dtype).reshape(array.shape), array)
                at += _align(nbytes)
            descs.append(d)
        return descs, ([region.name, base] if region is not None else None)

    def close(self):
        with self._lock:
            for r in self._regions.values():
                r.unlink()
            self._regions.clear()
