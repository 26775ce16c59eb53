"""The process behind one instance of a Python model (or, in auto-complete mode, a short-lived one that runs the
model's ``auto_complete_config``). Nereid starts it with two extra pipes: it reads control messages on fd 3 and
writes its own on fd 4, so whatever the model prints on stdout and stderr goes to the server's log and never
into the protocol.

A message is a frame: uint32 LE length of what follows, uint32 LE length of a JSON header, the header, then an
optional binary tail (used only by BLS calls and model loads with files). Tensors of executions travel in POSIX
shared memory instead (see ``shm.py``): inputs in regions the server writes and this process maps, so
``as_numpy()`` is a view of them; outputs in regions this process owns and the server maps, each block freed
when the server says it has read it.

Threads: the main thread runs the model (initialize, execute, finalize) and, between executions, reads fd 3
itself. While it runs the model, messages are read only when something needs them: a thread about to wait for
the server's answer (BLS, model management, metrics; an ``async def execute`` awaited) hands the pipe to a
reader thread until the execution ends, and ``is_cancelled()`` and each response sent take what has arrived
without waiting (cancellations; output blocks the server has read, so a streaming execute reuses them). Waking
a reader thread for every execution would cost more than the work of most. An asyncio loop in a third thread
runs ``async def execute`` coroutines, as Triton's stub does.

Waiting for the next execution, the main thread first polls fd 3 for a short while (``spinUs`` of the init
message: NEREID_STUB_SPIN_US in the model's config, 200 by default) before it sleeps in select(): a request that
follows its predecessor closely then finds the stub awake, which saves the server's write the cost of waking a
sleeping thread and the stub the cost of waking up (70-90 us a request on the two-core virtual machine the
benchmarks ran on).
"""

import asyncio
import importlib
import inspect
import json
import os
import queue
import select
import struct
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import triton_python_backend_utils as pb_utils  # noqa: E402
from nereid_shm import InputRegions, OutputRegions, tensor_bytes  # noqa: E402

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
IN_FD = 3
OUT_FD = 4
HELD = ("resp", "done")
_ENCODER = json.JSONEncoder(separators=(",", ":"))


# ---- framing ---------------------------------------------------------------------------------------------


class Pipe:
    def __init__(self):
        self._lock = threading.Lock()
        self._buf = bytearray()
        self._holder = None
        self._held = []
        # Who reads fd 3: "main" (the main thread between executions; during one, only polls) or "reader" (the
        # reader thread, from when something waits for an answer until the execution ends). read_lock is held
        # while a frame is read and dispatched, so no two threads split one.
        self.read_lock = threading.Lock()
        self.turn = threading.Condition()
        self.role = "main"
        self._chunk = bytearray(1 << 16)
        self._view = memoryview(self._chunk)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self.spin_ns = 0

    def send(self, header, tail=None):
        body = _ENCODER.encode(header).encode()
        tail_len = len(tail) if tail is not None else 0
        head = struct.pack("<II", 4 + len(body) + tail_len, len(body))
        data = head + body if tail is None else b"".join((head, body, tail))
        if self._holder == threading.get_ident():
            if header["t"] in HELD:
                self._held.append(data)
                return
            # Anything else (a BLS call that waits for its answer, a log line) goes now, after what was held.
            held, self._held = self._held, []
            held.append(data)
            data = b"".join(held)
        self._write(data)

    def _write(self, data):
        with self._lock:
            view = memoryview(data)
            while len(view) > 0:
                n = os.write(OUT_FD, view)
                view = view[n:]

    def hold(self):
        """Messages this thread sends are kept until release(): an execution's responses and its 'done' leave in
        one write, so the server wakes once per execution rather than once per message."""
        self._holder = threading.get_ident()

    def release(self):
        self._holder = None
        held, self._held = self._held, []
        if held:
            self._write(b"".join(held))

    def _read(self, n):
        """One read of fd 3 appended to the buffer (n: the bytes still wanted, 0 if unknown); raises
        BlockingIOError when nothing is there. Reads go through one preallocated chunk: a fresh 64 KiB bytes
        object per read cost 100-130 us of CPU per execution right after a TorchScript forward pass on BLAS
        threads (3 us in a loop alone)."""
        if n > len(self._chunk):
            data = os.read(IN_FD, n)
            if not data:
                raise EOFError
            self._buf += data
            return
        got = os.readv(IN_FD, [self._chunk])
        if got == 0:
            raise EOFError
        self._buf += self._view[:got]

    def _fill(self, n):
        while len(self._buf) < n:
            try:
                self._read(n - len(self._buf))
            except BlockingIOError:
                select.select([IN_FD], [], [])

    def available(self):
        """Reads what fd 3 holds without waiting; True when a message (or the start of one) is buffered."""
        if len(self._buf) > 0:
            return True
        try:
            self._read(0)
        except BlockingIOError:
            return False
        return True

    def wait(self, spin_ns, wakeable):
        """Until fd 3 may have data: polls for spin_ns, then sleeps in select(). A wakeable wait (the reader
        thread's) also ends when the main thread takes the pipe back."""
        if spin_ns:
            deadline = time.perf_counter_ns() + spin_ns
            while time.perf_counter_ns() < deadline:
                if self.available():
                    return
        fds = [IN_FD, self._wake_r] if wakeable else [IN_FD]
        ready, _, _ = select.select(fds, [], [])
        if self._wake_r in ready:
            os.read(self._wake_r, 1 << 12)

    def need_reader(self):
        """Before a thread waits for a message: the reader thread reads until the main thread takes back."""
        if self.role == "reader":
            return
        with self.turn:
            self.role = "reader"
            self.turn.notify()

    def take_back(self):
        """The main thread reads again; a reader thread waiting in select() is woken to step aside."""
        if self.role == "main":
            return
        with self.turn:
            self.role = "main"
        try:
            os.write(self._wake_w, b"x")
        except BlockingIOError:
            pass  # wake-ups the reader has not read yet are as good

    def poll(self, dispatch):
        """Dispatches what has arrived, without waiting, unless another thread is reading."""
        if self.role == "reader" or not self.read_lock.acquire(blocking=False):
            return
        try:
            while self.available():
                dispatch(*self.receive())
        except EOFError:
            pass  # the server is gone; the thread that reads next finds out
        finally:
            self.read_lock.release()

    def receive(self):
        """(header, tail) of the next message; raises EOFError once the server has gone."""
        self._fill(8)
        total, json_len = struct.unpack_from("<II", self._buf, 0)
        self._fill(4 + total)
        header = json.loads(bytes(self._buf[8:8 + json_len]))
        tail = None
        if total > 4 + json_len:
            tail = bytearray(self._buf[8 + json_len:4 + total])
        del self._buf[:4 + total]
        return header, tail


pipe = Pipe()
send = pipe.send
os.set_blocking(IN_FD, False)


# ---- errors as the client reads them ---------------------------------------------------------------------


def describe(e):
    """``Type: message`` then the model's frames, innermost first, as Triton's stub reports a Python error."""
    text = f"{type(e).__name__}: {e}"
    frames = traceback.extract_tb(e.__traceback__)
    if frames:
        text += "\n\nAt:\n" + "\n".join(f"  {f.filename}({f.lineno}): {f.name}" for f in reversed(frames)) + "\n"
    return text


def failed(name, why):
    return f"Failed to process the request(s) for model '{name}', message: {why}"


# ---- the runtime pb_utils reaches the server through -------------------------------------------------------


class Call:
    """One request to the server that waits for answers (BLS, model management, metrics)."""

    def __init__(self, runtime, call_id):
        self.runtime = runtime
        self.id = call_id
        self.answers = queue.SimpleQueue()
        self.done = False

    def next(self):
        if self.done:
            return None
        item = self.answers.get()
        if item is None:
            self.done = True
        return item

    def cancel(self):
        send({"t": "bls-cancel", "call": self.id})


class Runtime:
    def __init__(self, init):
        self.model_dir = init["modelDir"]
        self.model_name = init["modelName"]
        self._calls = {}
        self._next = 1
        self._lock = threading.Lock()

    def log(self, level, message):
        send({"t": "log", "level": level, "message": message})

    def _open(self):
        with self._lock:
            call = Call(self, self._next)
            self._next += 1
        self._calls[call.id] = call
        return call

    def deliver(self, header, tail):
        call = self._calls.get(header["call"])
        if call is None:
            return
        if header["t"] == "reply":
            self._calls.pop(call.id, None)
            call.answers.put(header)
            return
        if "outputs" in header or "error" in header:
            call.answers.put(bls_response(header, tail))
        if header.get("final", True):
            self._calls.pop(call.id, None)
            call.answers.put(None)

    def request(self, kind, payload, blobs=None):
        pipe.need_reader()
        call = self._open()
        tail = b"".join(bytes(b) for b in blobs) if blobs else None
        if blobs:
            payload = dict(payload, sizes=[len(b) for b in blobs])
        send(dict(payload, t=kind, call=call.id), tail)
        answer = call.answers.get()
        if "error" in answer:
            raise pb_utils.TritonModelException(answer["error"])
        return answer.get("value")

    def notify(self, kind, payload):
        send(dict(payload, t=kind))

    def bls(self, request, decoupled):
        pipe.need_reader()
        call = self._open()
        descs, parts, at = [], [], 0
        for t in request.inputs():
            data, count = tensor_bytes(t)
            descs.append({"n": t.name(), "d": t._datatype, "s": t.shape(), "o": at, "b": len(data), "c": count})
            parts.append(data)
            at += len(data)
        header = {
            "t": "bls", "call": call.id, "model": request._model_name, "version": request._model_version,
            "id": request.request_id(), "corr": request.correlation_id(), "flags": request.flags(),
            "timeout": request.timeout(), "params": request.parameters(), "outputs": request.requested_output_names(),
            "stream": bool(decoupled), "inputs": descs,
        }
        traced = request.trace()._request
        if traced is not None:
            header["trace"] = traced
        send(header, b"".join(parts) if parts else None)
        if decoupled:
            return pb_utils.ResponseIterator(call)
        response = call.next()
        return response if response is not None else pb_utils.InferenceResponse(
            error=pb_utils.TritonError("the model sent no response"))


def bls_response(header, tail):
    if "error" in header:
        return pb_utils.InferenceResponse(error=pb_utils.TritonError(header["error"]["message"], header["error"]["code"]))
    outputs = []
    for d in header.get("outputs", []):
        if d["d"] == "BYTES":
            array = pb_utils.deserialize_bytes_tensor(memoryview(tail)[d["o"]:d["o"] + d["b"]]).reshape(d["s"])
        else:
            dtype = pb_utils._WIRE_DTYPES[d["d"]]
            array = np.frombuffer(tail, dtype=dtype, count=d["b"] // dtype.itemsize, offset=d["o"]).reshape(d["s"]) \
                if d["b"] > 0 else np.empty(d["s"], dtype=dtype)
        outputs.append(pb_utils.Tensor(d["n"], array, d["d"]))
    return pb_utils.InferenceResponse(outputs, parameters=header.get("params"))


# ---- one request's way back --------------------------------------------------------------------------------


class Channel:
    def __init__(self, stub, rid, requested):
        self.stub = stub
        self.rid = rid
        self.requested = requested
        self.closed = False
        self.cancelled = False
        self.held = None  # not decoupled: a response sent without FINAL waits here for the flag
        self.sent = 0
        self.obtained = False  # get_response_sender() was called: the model may still answer after execute()

    def send(self, response, flags):
        self.count(response, flags)
        final = flags == FINAL
        if not self.stub.decoupled:
            # The one response waits for the flag here (it may come after execute() has returned), so the
            # request is answered once, with both.
            if not final:
                self.held = response
                return
            response = response if response is not None else self.held
            self.held = None
            self.close()
            self.stub.send_response(self, response, True)
            return
        if final:
            self.close()
        if response is None:
            send({"t": "resp", "rid": self.rid, "final": True})
        else:
            self.stub.send_response(self, response, final)

    def count(self, response, flags):
        """Refuses a send as Triton's response sender does, in its order and words; counts one that passes."""
        if flags != FINAL and flags != 0:
            raise pb_utils.TritonModelException("Unable to send response. Unsupported flag provided.")
        if flags == 0 and response is None:
            raise pb_utils.TritonModelException(
                "Inference Response object must be provided when the response flags is set to zero.")
        if not self.stub.decoupled:
            if response is not None and self.sent > 0:
                raise pb_utils.TritonModelException(
                    "Unable to send response. Non-decoupled model cannot send more than one response.")
            if response is None and self.sent == 0:
                raise pb_utils.TritonModelException(
                    "Unable to send response. Non-decoupled model cannot send complete final before sending a response.")
        if self.closed:
            raise pb_utils.TritonModelException("Unable to send response. Response sender has been closed.")
        self.sent += 1

    def is_cancelled(self):
        if not self.cancelled:
            pipe.poll(self.stub.dispatch)
        return self.cancelled

    def close(self):
        self.closed = True
        self.stub.channels.pop(self.rid, None)


# ---- the stub --------------------------------------------------------------------------------------------


class Stub:
    def __init__(self, init):
        self.init = init
        self.name = init["modelName"]
        self.decoupled = bool(init.get("decoupled"))
        self.channels = {}
        self.pending_cancels = set()
        self.work = queue.SimpleQueue()
        shm = init["shm"]
        self.inputs = InputRegions()
        self.outputs = OutputRegions(shm["prefix"], shm["defaultBytes"], shm["growthBytes"], self.inputs)
        self.runtime = Runtime(init)
        pb_utils._install(self.runtime)
        self.loop = None

    # -- messages in --

    def read_forever(self):
        """The reader thread: reads while the main thread runs the model."""
        try:
            parent = os.getppid()
            while True:
                with pipe.turn:
                    while pipe.role != "reader":
                        # Not reading, it would not see the server go: a server killed while a long execute() runs
                        # is noticed here, within a second, and the stub cleans up and exits as on end of input.
                        pipe.turn.wait(1.0)
                        if os.getppid() != parent:
                            raise EOFError
                pipe.wait(0, True)
                # Dispatched under the lock: once the main thread holds it, every message read so far is in place.
                with pipe.read_lock:
                    while pipe.role == "reader" and pipe.available():
                        self.dispatch(*pipe.receive())
        except EOFError:
            pass
        except Exception:  # a broken frame: nothing sensible can follow
            traceback.print_exc()
        self.server_gone()

    def next_work(self):
        """The main thread, between executions: reads messages itself until an execution (or finalize) comes."""
        try:
            while True:
                with pipe.read_lock:
                    while pipe.available():
                        self.dispatch(*pipe.receive())
                    try:
                        return self.work.get_nowait()
                    except queue.Empty:
                        pass
                    pipe.wait(pipe.spin_ns, False)
        except EOFError:
            pass
        except Exception:  # a broken frame: nothing sensible can follow
            traceback.print_exc()
        self.server_gone()

    def dispatch(self, header, tail):
        t = header["t"]
        if "release" in header:
            self.outputs.free(header["release"])
        if t == "exec" or t == "finalize":
            self.work.put(header)
        elif t == "cancel":
            rid = header["rid"]
            ch = self.channels.get(rid)
            if ch is None:
                # Its execution still waits here behind another: remembered, so that it is skipped (or, if it
                # has started meanwhile, sees the flag: the channel is looked up again after the note).
                self.pending_cancels.add(rid)
                ch = self.channels.get(rid)
            if ch is not None:
                ch.cancelled = True
        elif t == "release":
            self.outputs.free(header["blocks"])
        elif t == "drop":
            self.inputs.drop(header["r"])
        elif t in ("bls-resp", "reply"):
            self.runtime.deliver(header, tail)

    def server_gone(self):
        # The server is gone (or closed our pipe): nothing will read our answers. Remove the instance's regions,
        # the server's included, in case it went without closing them (a server being killed).
        self.outputs.close()
        prefix = self.init["shm"].get("instancePrefix")
        if prefix:
            for name in os.listdir("/dev/shm"):
                if name.startswith(prefix):
                    try:
                        os.unlink("/dev/shm/" + name)
                    except OSError:
                        pass
        os._exit(0)

    # -- responses out --

    def send_error(self, rid, code, message):
        send({"t": "resp", "rid": rid, "final": True, "error": {"code": code, "message": message}})

    def send_response(self, ch, response, final):
        pipe.poll(self.dispatch)
        error = response.error() if isinstance(response, pb_utils.InferenceResponse) else None
        if not isinstance(response, pb_utils.InferenceResponse):
            ch.close()
            self.send_error(ch.rid, pb_utils.TritonError.INTERNAL, failed(
                self.name, f"Expected an 'InferenceResponse' object, found type '{type(response)}'."))
            return
        if error is not None:
            # An error ends the request: the server answers it with this error and forgets it.
            ch.close()
            self.send_error(ch.rid, error.code(), error.message())
            return
        tensors = []
        for t in response.output_tensors():
            if not isinstance(t, pb_utils.Tensor):
                raise pb_utils.TritonModelException("an InferenceResponse holds something that is not a Tensor")
            # Outputs the request did not ask for are left out, as Triton prunes them.
            if t.name() in ch.requested:
                tensors.append(t)
        descs, block = self.outputs.write(tensors)
        header = {"t": "resp", "rid": ch.rid, "final": final, "outputs": descs}
        if block is not None:
            header["k"] = block
        drop = self.outputs.take_retired()
        if drop:
            header["drop"] = drop
        params = response.parameters()
        if params and params != "{}":
            header["params"] = params
        send(header)

    # -- executions --

    def requests_of(self, m):
        made = []
        for w in m["requests"]:
            inputs = [pb_utils.Tensor(d["n"], self.inputs.array(d), d["d"]) for d in w["inputs"]]
            request = pb_utils.InferenceRequest(
                request_id=w["id"], correlation_id=w["corr"], inputs=inputs, requested_output_names=w["outputs"],
                model_name=self.name, flags=w["flags"], timeout=w["timeout"], parameters=w["params"],
                trace=pb_utils.InferenceTrace(w["tr"] or None, w["rid"]) if "tr" in w else None)
            ch = Channel(self, w["rid"], set(w["outputs"]))
            self.channels[w["rid"]] = ch
            if w.get("cancelled") or w["rid"] in self.pending_cancels:
                self.pending_cancels.discard(w["rid"])
                ch.cancelled = True
            request._channel = ch
            made.append((request, ch))
        return made

    def execute(self, model, m):
        start = time.perf_counter_ns()
        rids = [w["rid"] for w in m["requests"]]
        if rids and all(rid in self.pending_cancels for rid in rids):
            # Every request was cancelled while the execution waited here: it never runs, as a scheduler drops
            # requests cancelled in its queue.
            self.pending_cancels.difference_update(rids)
            send({"t": "done", "batch": m["batch"], "inferNs": 0, "unanswered": rids, "cancelled": True})
            return
        made = self.requests_of(m)
        requests = [r for r, _ in made]
        error = None
        try:
            if not hasattr(model, "execute"):
                # Triton names the model file's path; the model's name says as much without showing a server path.
                raise pb_utils.TritonModelException(f"Python model '{self.name}' does not implement `execute` method.")
            result = model.execute(requests)
            if inspect.iscoroutine(result):
                future = asyncio.run_coroutine_threadsafe(result, self.async_loop())
                if self.decoupled:
                    # As Triton: the next batch may start while this one awaits.
                    send({"t": "done", "batch": m["batch"], "inferNs": time.perf_counter_ns() - start, "running": True})
                    future.add_done_callback(lambda f: self.async_ended(m["batch"], made, f))
                    return
                pipe.need_reader()
                result = future.result()
            error = self.check_result(result, made)
        except Exception as e:
            error = failed(self.name, describe(e))
        infer_ns = time.perf_counter_ns() - start
        send(self.done_message({"t": "done", "batch": m["batch"], "inferNs": infer_ns}, made, error))

    def check_result(self, result, made):
        if self.decoupled:
            if result is not None:
                return failed(self.name, "Python model '" + self.name + "' is using the decoupled mode and the "
                              "execute function must return None.")
            return None
        if not isinstance(result, list):
            return failed(self.name, f"Expected a list in the execute return, found type '{type(result)}'.")
        if len(result) != len(made):
            return failed(self.name, "Number of InferenceResponse objects do not match the number of InferenceRequest "
                          f"objects. InferenceRequest(s) size is:{len(made)}, and InferenceResponse(s) size "
                          f"is:{len(result)}")
        for r in result:
            if r is not None and not isinstance(r, pb_utils.InferenceResponse):
                return failed(self.name, "Expected an 'InferenceResponse' object in the execute function return list, "
                              f"found type '{type(r)}'.")
        for r, (_, ch) in zip(result, made):
            if r is None:
                continue  # answered through the sender, or reported as unanswered
            if ch.closed:
                # Refused as Triton's sender refuses a second response. Only this request's answer is at stake, and
                # it has been given: the batch's other requests still get theirs.
                self.runtime.log(pb_utils.Logger.ERROR, failed(self.name, "Unable to send response. Non-decoupled "
                                 "model cannot send more than one response."))
                continue
            try:
                ch.send(r, FINAL)
            except Exception as e:
                if not ch.closed:
                    ch.close()
                self.send_error(ch.rid, pb_utils.TritonError.INTERNAL, failed(self.name, describe(e)))
        return None

    def done_message(self, header, made, error):
        # Requests left without an answer: on an error all of them; otherwise, for models that are not
        # decoupled, those execute() neither answered nor took the sender of. Requests whose senders the model
        # has (all, when decoupled) stay open: as in Triton, it may answer them after execute() has returned.
        unanswered, later = [], []
        for _, ch in made:
            if ch.closed or (error is None and self.decoupled):
                continue
            if error is None and ch.obtained:
                later.append(ch.rid)
                continue
            ch.close()
            unanswered.append(ch.rid)
        if error is not None:
            header["error"] = error
        if unanswered:
            header["unanswered"] = unanswered
        if later:
            header["later"] = later
        return header

    def async_ended(self, batch, made, future):
        error = None
        try:
            result = future.result()
            if result is not None:
                error = failed(self.name, "Python model '" + self.name + "' is using the decoupled mode and the "
                               "execute function must return None.")
        except Exception as e:
            error = failed(self.name, describe(e))
        send(self.done_message({"t": "ended", "batch": batch}, made, error))

    def async_loop(self):
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
            threading.Thread(target=self.loop.run_forever, name="nereid-asyncio", daemon=True).start()
        return self.loop

    # -- lifecycle --

    def load_class(self):
        """Imports ``<version>.<stem>`` with the version and model folders on sys.path, as Triton's stub does."""
        model_file = self.init["modelFile"]
        version_dir = os.path.dirname(model_file)
        model_dir = os.path.dirname(version_dir)
        sys.path.insert(0, version_dir)
        sys.path.insert(0, model_dir)
        stem = os.path.splitext(os.path.basename(model_file))[0]
        module_name = f"{os.path.basename(version_dir)}.{stem}"
        runner = self.init.get("runner")
        if not runner and not model_file.endswith(".py"):
            raise pb_utils.TritonModelException(
                f"Model name must end with '.py'. Model name is \"{os.path.basename(model_file)}\".")
        module = importlib.import_module(runner) if runner else importlib.import_module(module_name)
        # Python's own AttributeError names the module and the class, as Triton's stub reports it.
        return getattr(module, "TritonPythonModel")

    def run_instance(self):
        pipe.need_reader()
        try:
            cls = self.load_class()
            model = cls()
            if hasattr(model, "initialize"):
                r = model.initialize(dict(self.init["args"]))
                if inspect.iscoroutine(r):
                    asyncio.run_coroutine_threadsafe(r, self.async_loop()).result()
        except Exception as e:
            send({"t": "init-error", "message": describe(e)})
            return
        pipe.take_back()
        send({"t": "ready"})
        while True:
            m = self.next_work()
            if m["t"] == "exec":
                # A decoupled model may stream from inside execute(): its responses must leave as they are sent.
                if not self.decoupled:
                    pipe.hold()
                try:
                    self.execute(model, m)
                finally:
                    pipe.release()
                    pipe.take_back()
                continue
            error = None
            pipe.need_reader()
            try:
                if hasattr(model, "finalize"):
                    r = model.finalize()
                    if inspect.iscoroutine(r):
                        asyncio.run_coroutine_threadsafe(r, self.async_loop()).result()
            except Exception as e:
                error = describe(e)
            send({"t": "finalized", "error": error} if error else {"t": "finalized"})
            return

    def run_auto_complete(self):
        pipe.need_reader()
        try:
            cls = self.load_class()
            fn = getattr(cls, "auto_complete_config", None)
            if fn is None:
                send({"t": "autocomplete"})
                return
            result = fn(pb_utils.ModelConfig(self.init["config"]))
            if not isinstance(result, pb_utils.ModelConfig):
                raise pb_utils.TritonModelException(
                    f"auto_complete_config function in model '{self.name}' must return a valid pb.ModelConfig object.")
            send({"t": "autocomplete", "config": json.dumps(result.as_dict())})
        except Exception as e:
            send({"t": "autocomplete", "error": describe(e)})


def main():
    header, _ = pipe.receive()
    pipe.spin_ns = int(header.get("spinUs", 0)) * 1000
    stub = Stub(header)
    threading.Thread(target=stub.read_forever, name="nereid-reader", daemon=True).start()
    try:
        if header["mode"] == "autocomplete":
            stub.run_auto_complete()
        else:
            stub.run_instance()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        stub.outputs.close()
        os._exit(0)


if __name__ == "__main__":
    main()
