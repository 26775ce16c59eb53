"""A Python gRPC client built from Nereid's proto/ with grpc_tools, sending what Triton's gRPC example clients
send (simple_grpc_infer_client, the sequence stream client, the decoupled repeat client, the health and model
control calls, simple_grpc_shm_client with regions from multiprocessing.shared_memory) and checking what
they check. Prints one JSON object of results; exits non-zero on a failed check.

    python3 client.py <generated stubs dir> <host:port>
"""
import json
import struct
import sys
from multiprocessing import shared_memory

sys.path.insert(0, sys.argv[1])
import grpc  # noqa: E402
import grpc_service_pb2 as pb  # noqa: E402
import grpc_service_pb2_grpc as pbg  # noqa: E402
import health_pb2  # noqa: E402
import health_pb2_grpc  # noqa: E402

channel = grpc.insecure_channel(sys.argv[2])
stub = pbg.GRPCInferenceServiceStub(channel)
results = {}


def check(name, ok, detail=""):
    results[name] = bool(ok)
    if not ok:
        print(json.dumps({"failed": name, "detail": str(detail), "results": results}))
        sys.exit(1)


check("live", stub.ServerLive(pb.ServerLiveRequest()).live)
check("ready", stub.ServerReady(pb.ServerReadyRequest()).ready)
check("model_ready", stub.ModelReady(pb.ModelReadyRequest(name="simple", version="")).ready)
md = stub.ServerMetadata(pb.ServerMetadataRequest())
check("server_metadata", md.name == "triton" and "model_repository" in md.extensions, md)
mm = stub.ModelMetadata(pb.ModelMetadataRequest(name="simple"))
check("model_metadata", mm.inputs[0].name == "INPUT0" and list(mm.inputs[0].shape) == [-1, 16], mm)
cfg = stub.ModelConfig(pb.ModelConfigRequest(name="simple")).config
check("model_config", cfg.name == "simple" and cfg.max_batch_size == 8 and cfg.input[0].data_type == 8, cfg)

# simple_grpc_infer_client.py: raw contents, OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1.
in0 = list(range(16))
in1 = [1] * 16
req = pb.ModelInferRequest(model_name="simple", id="py-1")
for name in ("INPUT0", "INPUT1"):
    t = req.inputs.add()
    t.name, t.datatype = name, "INT32"
    t.shape.extend([1, 16])
for name in ("OUTPUT0", "OUTPUT1"):
    req.outputs.add().name = name
req.raw_input_contents.extend([struct.pack("<16i", *in0), struct.pack("<16i", *in1)])
res = stub.ModelInfer(req)
out0 = struct.unpack("<16i", res.raw_output_contents[0])
out1 = struct.unpack("<16i", res.raw_output_contents[1])
check("infer_raw", res.id == "py-1" and list(out0) == [a + b for a, b in zip(in0, in1)] and list(out1) == [a - b for a, b in zip(in0, in1)], res)

# The same with typed contents (simple_grpc_infer_client with contents): outputs still raw.
req = pb.ModelInferRequest(model_name="simple")
for name, data in (("INPUT0", in0), ("INPUT1", in1)):
    t = req.inputs.add()
    t.name, t.datatype = name, "INT32"
    t.shape.extend([1, 16])
    t.contents.int_contents.extend(data)
res = stub.ModelInfer(req)
check("infer_typed", list(struct.unpack("<16i", res.raw_output_contents[0])) == [a + b for a, b in zip(in0, in1)] and len(res.outputs[0].contents.int_contents) == 0, res)

try:
    stub.ModelInfer(pb.ModelInferRequest(model_name="no_such_model"))
    check("unknown_model", False)
except grpc.RpcError as e:
    check("unknown_model", e.code() == grpc.StatusCode.INVALID_ARGUMENT, e)


# The sequence stream client: two sequences interleaved on one stream, request ids, sequence_id as int and string.
def seq_request(seq, value, start, end):
    r = pb.ModelInferRequest(model_name="sequence_accumulator", id="%s-%d" % (seq, value))
    t = r.inputs.add()
    t.name, t.datatype = "INPUT", "INT32"
    t.shape.extend([1, 1])
    r.raw_input_contents.append(struct.pack("<i", value))
    if isinstance(seq, int):
        r.parameters["sequence_id"].int64_param = seq
    else:
        r.parameters["sequence_id"].string_param = seq
    r.parameters["sequence_start"].bool_param = start
    r.parameters["sequence_end"].bool_param = end
    return r


steps = [(1000, 0, True, False), ("abc", 100, True, False), (1000, 1, False, False), ("abc", 1, False, False), (1000, 2, False, True), ("abc", 2, False, True)]
got = {}
for r in stub.ModelStreamInfer(iter([seq_request(*s) for s in steps])):
    check("stream_no_error", r.error_message == "", r.error_message)
    got[r.infer_response.id] = struct.unpack("<i", r.infer_response.raw_output_contents[0])[0]
check("stream_sequence", got == {"1000-0": 0, "1000-1": 1, "1000-2": 3, "abc-100": 100, "abc-1": 101, "abc-2": 103}, got)

# The decoupled repeat client: n responses, then the empty final response it asks for.
r = pb.ModelInferRequest(model_name="repeat_int32", id="rep")
for name, dt, data, fmt in (("IN", "INT32", [4, 5, 6], "<3i"), ("DELAY", "UINT32", [1, 1, 1], "<3I"), ("WAIT", "UINT32", [0], "<1I")):
    t = r.inputs.add()
    t.name, t.datatype = name, dt
    t.shape.append(len(data))
    r.raw_input_contents.append(struct.pack(fmt, *data))
r.parameters["triton_enable_empty_final_response"].bool_param = True
values, finals = [], []
for resp in stub.ModelStreamInfer(iter([r])):
    ir = resp.infer_response
    finals.append(ir.parameters["triton_final_response"].bool_param)
    for i, o in enumerate(ir.outputs):
        if o.name == "OUT":
            values.append(struct.unpack("<i", ir.raw_output_contents[i])[0])
check("stream_decoupled", values == [4, 5, 6] and finals == [False, False, False, True], (values, finals))

health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""))
check("health", health.status == health_pb2.HealthCheckResponse.SERVING, health)
index = stub.RepositoryIndex(pb.RepositoryIndexRequest(ready=True))
check("repository_index", "simple" in [m.name for m in index.models], index)
stats = stub.ModelStatistics(pb.ModelStatisticsRequest(name="simple"))
check("statistics", stats.model_stats[0].inference_stats.success.count >= 2, stats)
logs = stub.LogSettings(pb.LogSettingsRequest())
check("log_settings", logs.settings["log_format"].string_param == "default", logs)
check("shm_status", len(stub.SystemSharedMemoryStatus(pb.SystemSharedMemoryStatusRequest()).regions) == 0)

# simple_grpc_shm_client.py: unregister everything (CUDA too), inputs and outputs in regions that Python's
# multiprocessing.shared_memory made, outputs read back from the region.
stub.SystemSharedMemoryUnregister(pb.SystemSharedMemoryUnregisterRequest())
stub.CudaSharedMemoryUnregister(pb.CudaSharedMemoryUnregisterRequest())
shm_in = shared_memory.SharedMemory(create=True, size=128)
shm_out = shared_memory.SharedMemory(create=True, size=128)
try:
    struct.pack_into("<16i", shm_in.buf, 0, *range(16))
    struct.pack_into("<16i", shm_in.buf, 64, *[1] * 16)
    stub.SystemSharedMemoryRegister(pb.SystemSharedMemoryRegisterRequest(name="input_data", key="/" + shm_in.name, offset=0, byte_size=128))
    stub.SystemSharedMemoryRegister(pb.SystemSharedMemoryRegisterRequest(name="output_data", key="/" + shm_out.name, offset=0, byte_size=128))
    regions = stub.SystemSharedMemoryStatus(pb.SystemSharedMemoryStatusRequest()).regions
    check("shm_registered", sorted(regions) == ["input_data", "output_data"] and regions["input_data"].byte_size == 128, regions)
    r = pb.ModelInferRequest(model_name="simple")
    for i, name in enumerate(("INPUT0", "INPUT1")):
        t = r.inputs.add()
        t.name, t.datatype = name, "INT32"
        t.shape.extend([1, 16])
        t.parameters["shared_memory_region"].string_param = "input_data"
        t.parameters["shared_memory_byte_size"].int64_param = 64
        t.parameters["shared_memory_offset"].int64_param = 64 * i
    for i, name in enumerate(("OUTPUT0", "OUTPUT1")):
        o = r.outputs.add()
        o.name = name
        o.parameters["shared_memory_region"].string_param = "output_data"
        o.parameters["shared_memory_byte_size"].int64_param = 64
        o.parameters["shared_memory_offset"].int64_param = 64 * i
    res = stub.ModelInfer(r)
    sums = list(struct.unpack_from("<16i", shm_out.buf, 0))
    diffs = list(struct.unpack_from("<16i", shm_out.buf, 64))
    check("shm_infer", sums == [v + 1 for v in range(16)] and diffs == [v - 1 for v in range(16)], (sums, diffs))
    check("shm_outputs_not_in_message", [len(b) for b in res.raw_output_contents] == [0, 0], res.raw_output_contents)
    # An unknown region is NOT_FOUND; CUDA shared memory cannot be registered without GPUs.
    r.inputs[0].parameters["shared_memory_region"].string_param = "nope"
    try:
        stub.ModelInfer(r)
        check("shm_unknown_region", False)
    except grpc.RpcError as e:
        check("shm_unknown_region", e.code() == grpc.StatusCode.NOT_FOUND and "nope" in e.details(), e)
    try:
        stub.CudaSharedMemoryRegister(pb.CudaSharedMemoryRegisterRequest(name="gpu", raw_handle=b"\0" * 64, device_id=0, byte_size=64))
        check("cuda_register", False)
    except grpc.RpcError as e:
        check("cuda_register", e.code() == grpc.StatusCode.INVALID_ARGUMENT and "GPUs not supported" in e.details(), e)
    check("cuda_status", len(stub.CudaSharedMemoryStatus(pb.CudaSharedMemoryStatusRequest()).regions) == 0)
    stub.SystemSharedMemoryUnregister(pb.SystemSharedMemoryUnregisterRequest())
    check("shm_unregistered", len(stub.SystemSharedMemoryStatus(pb.SystemSharedMemoryStatusRequest()).regions) == 0)
finally:
    shm_in.close()
    shm_in.unlink()
    shm_out.close()
    shm_out.unlink()

# Typed contents and raw_input_contents together: Triton's exact message.
r = pb.ModelInferRequest(model_name="simple")
t0 = r.inputs.add(name="INPUT0", datatype="INT32", shape=[1, 16])
t0.contents.int_contents.extend(range(16))
r.inputs.add(name="INPUT1", datatype="INT32", shape=[1, 16])
r.raw_input_contents.append(struct.pack("<16i", *[1] * 16))
try:
    stub.ModelInfer(r)
    check("typed_and_raw", False)
except grpc.RpcError as e:
    check("typed_and_raw", e.code() == grpc.StatusCode.INVALID_ARGUMENT
          and e.details() == "contents field must not be specified when using raw_input_contents for 'INPUT0' for model 'simple'", e)
trace = stub.TraceSetting(pb.TraceSettingRequest())
check("trace", list(trace.settings["trace_level"].value) == ["OFF"] and list(trace.settings["trace_mode"].value) == ["triton"], trace)

print(json.dumps({"results": results}))
