"""Checks of the stub's response sender rules without a server: which send() calls are refused, in which
order, and with python_backend's words (response_sender.cc). Run by sender-rules.test.ts with fds 3 and 4
open, as the stub expects; prints "ok" at the end, raises on the first failure."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "python"))

import numpy as np  # noqa: E402

import nereid_stub  # noqa: E402
import triton_python_backend_utils as pb_utils  # noqa: E402

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


class Stub:
    def __init__(self, decoupled):
        self.decoupled = decoupled
        self.channels = {}
        self.sent = []

    def send_response(self, ch, response, final):
        self.sent.append(final)


def channel(decoupled):
    stub = Stub(decoupled)
    ch = nereid_stub.Channel(stub, 1, {"OUT"})
    stub.channels[1] = ch
    return stub, ch


def refused(ch, response, flags, message):
    try:
        ch.send(response, flags)
    except pb_utils.TritonModelException as e:
        assert str(e) == message, f"{e!s} != {message}"
        return
    raise AssertionError(f"send({response}, {flags}) was not refused")


def response():
    return pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUT", np.array([1], np.int32))])


NO_RESPONSE = "Inference Response object must be provided when the response flags is set to zero."
BAD_FLAG = "Unable to send response. Unsupported flag provided."
FINAL_FIRST = "Unable to send response. Non-decoupled model cannot send complete final before sending a response."
SECOND = "Unable to send response. Non-decoupled model cannot send more than one response."
CLOSED = "Unable to send response. Response sender has been closed."

for decoupled in (False, True):
    _, ch = channel(decoupled)
    refused(ch, None, 0, NO_RESPONSE)
    refused(ch, response(), 2, BAD_FLAG)

# Not decoupled: FINAL alone needs a response before it; one response only; then the sender is closed.
stub, ch = channel(False)
refused(ch, None, FINAL, FINAL_FIRST)
ch.send(response(), 0)
refused(ch, response(), 0, SECOND)
refused(ch, response(), FINAL, SECOND)
ch.send(None, FINAL)
assert stub.sent == [True], stub.sent
refused(ch, None, FINAL, CLOSED)

# Decoupled: any number of responses, FINAL alone at any time, nothing after it.
stub, ch = channel(True)
ch.send(response(), 0)
ch.send(response(), 0)
ch.send(response(), FINAL)
assert stub.sent == [False, False, True], stub.sent
refused(ch, response(), 0, CLOSED)
refused(ch, None, FINAL, CLOSED)

print("ok")
