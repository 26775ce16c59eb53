import type { Tensor } from '../tensor/tensor.js';

/**
 * A sampled request's trace as the core sees it: the stages it passes through are stamped on it, with
 * hrtime nanoseconds and Triton's activity names. Present on a request only when tracing sampled it, so a
 * request that is not traced pays one undefined check per stage.
 */
export interface RequestTrace {
  /** Triton's trace id (1, 2, … per server), shown in trace files and as the span attribute triton.trace_id. */
  readonly id: number;
  /** Whether TENSORS level is on: the core hands over the inputs and outputs only then. */
  readonly tensors: boolean;
  /** The model the traced request runs on, once resolved: REQUEST_START with Triton's trace header. */
  requestStart(model: string, version: number, requestId: string, ns: bigint): void;
  /** A timestamp by Triton's name (QUEUE_START, COMPUTE_START, …, or a frontend's HTTP_RECV_START). */
  stamp(name: string, ns: bigint): void;
  /** TENSORS level: a tensor by Triton's activity name (TENSOR_QUEUE_INPUT, TENSOR_BACKEND_OUTPUT). */
  tensor(activity: string, t: Tensor): void;
  /** A trace for a request this one makes (an ensemble step, a BLS call), with this one as its parent. */
  child(): RequestTrace;
  /** The W3C traceparent a call to another service carries so that the trace goes on there ('' when none). */
  traceparent(): string;
  /** Spans of Nereid's own beyond Triton's layout (opentelemetry,nereid_stage_spans): a named phase. */
  phase?(name: string, startNs: bigint, endNs: bigint): void;
}

/** Triton's activity names (TRITONSERVER_InferenceTraceActivityString). */
export const TRACE = {
  REQUEST_START: 'REQUEST_START',
  QUEUE_START: 'QUEUE_START',
  COMPUTE_START: 'COMPUTE_START',
  COMPUTE_INPUT_END: 'COMPUTE_INPUT_END',
  COMPUTE_OUTPUT_START: 'COMPUTE_OUTPUT_START',
  COMPUTE_END: 'COMPUTE_END',
  REQUEST_END: 'REQUEST_END',
  TENSOR_QUEUE_INPUT: 'TENSOR_QUEUE_INPUT',
  TENSOR_BACKEND_OUTPUT: 'TENSOR_BACKEND_OUTPUT',
} as const;

/** A trace as the frontend that sampled it holds it: it ends the trace once its answer is sent. */
export interface RootTrace extends RequestTrace {
  end(): void;
}

/** A client's W3C trace context (traceparent and tracestate headers or gRPC metadata), unchecked. */
export interface TraceContextCarrier {
  readonly traceparent: string | undefined;
  readonly tracestate: string | undefined;
}
