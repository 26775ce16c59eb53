import { createRequire } from 'node:module';
import * as ort from 'onnxruntime-node';

/**
 * An ONNX Runtime session with a synchronous run.
 *
 * onnxruntime-node's public `InferenceSession.run()` defers its (synchronous, native) run to `setImmediate`,
 * so every run costs an event-loop turn. For an inline instance that caps a model at one run per instance per
 * turn: at 8 concurrent clients a model that takes 10 µs spends most of its time waiting for the loop, and the
 * server needs twice the CPU per request of a plain node:http + onnxruntime-node server (measured in bench/).
 * The package's native binding (`dist/binding.js`; the package has no exports map) runs synchronously, so
 * Nereid uses it directly, feature-checked at load; when its shape is not the expected one (another
 * onnxruntime-node version), the public API serves instead, correct but slower.
 */
export interface OrtSession {
  /** run() returns its results, not a promise. */
  readonly synchronous: boolean;
  readonly inputMetadata: readonly ort.InferenceSession.ValueMetadata[];
  readonly outputMetadata: readonly ort.InferenceSession.ValueMetadata[];
  /** Runs on the calling thread; returns the fetched outputs or a promise of them (public-API fallback). */
  run(feeds: OrtFeeds, fetches: readonly string[]): OrtResults | Promise<OrtResults>;
  release(): Promise<void>;
}

/**
 * One input as the native binding reads it: its four fields, no more. onnxruntime-node's Tensor class checks
 * and copies its arguments into a dozen fields per construction, a cost paid per input per request for
 * nothing the binding looks at; the public-API fallback builds Tensors from these.
 */
export interface OrtFeed {
  readonly location: 'cpu';
  readonly type: ort.Tensor.Type;
  readonly dims: readonly number[];
  readonly data: ort.Tensor.DataType;
}

export type OrtFeeds = Record<string, OrtFeed>;

export interface OrtOutput {
  readonly dims: readonly number[];
  readonly data: unknown;
}

export type OrtResults = Record<string, OrtOutput>;

interface RawMetadata {
  name: string;
  isTensor: boolean;
  type: number;
  shape: number[];
  symbolicDimensions: string[];
}

interface NativeSession {
  loadModel(path: string, options: ort.InferenceSession.SessionOptions): void;
  run(feeds: OrtFeeds, fetches: Record<string, null>, options: object): OrtResults;
  dispose(): void;
  readonly inputMetadata: RawMetadata[];
  readonly outputMetadata: RawMetadata[];
}

interface NativeBinding {
  binding: { InferenceSession: new () => NativeSession };
  initOrt(): void;
}

// ONNX element type numbers (onnx.TensorProto.DataType) → onnxruntime-node's type names.
const ORT_TYPES: Record<number, ort.Tensor.Type | undefined> = {
  1: 'float32', 2: 'uint8', 3: 'int8', 4: 'uint16', 5: 'int16', 6: 'int32', 7: 'int64', 8: 'string', 9: 'bool',
  10: 'float16', 11: 'float64', 12: 'uint32', 13: 'uint64', 21: 'uint4', 22: 'int4',
};

let native: NativeBinding | null | undefined;

function nativeBinding(): NativeBinding | null {
  if (native !== undefined) return native;
  try {
    const b = createRequire(import.meta.url)('onnxruntime-node/dist/binding') as Partial<NativeBinding>;
    const proto = b.binding?.InferenceSession?.prototype as Partial<NativeSession> | undefined;
    const ok = typeof b.initOrt === 'function' && typeof proto?.loadModel === 'function' && typeof proto.run === 'function' && typeof proto.dispose === 'function';
    native = ok ? (b as NativeBinding) : null;
  } catch {
    native = null;
  }
  return native;
}

export async function openSession(path: string, options: ort.InferenceSession.SessionOptions): Promise<OrtSession> {
  const b = nativeBinding();
  if (!b) return publicSession(await ort.InferenceSession.create(path, options));
  b.initOrt();
  const s = new b.binding.InferenceSession();
  s.loadModel(path, options);
  return new SyncSession(s);
}

/** Run options: none, the same (empty, frozen) object for every run. */
const NO_RUN_OPTIONS = Object.freeze({});

class SyncSession implements OrtSession {
  readonly synchronous = true;
  readonly inputMetadata: readonly ort.InferenceSession.ValueMetadata[];
  readonly outputMetadata: readonly ort.InferenceSession.ValueMetadata[];
  // The fetches object is rebuilt only when the requested outputs change (almost never).
  private lastFetches: readonly string[] = [];
  private fetchObject: Record<string, null> = {};

  constructor(private readonly s: NativeSession) {
    this.inputMetadata = s.inputMetadata.map(metadata);
    this.outputMetadata = s.outputMetadata.map(metadata);
  }

  run(feeds: OrtFeeds, fetches: readonly string[]): OrtResults {
    // Requests that list their outputs bring a new array each time, with the same names as the last one.
    if (fetches !== this.lastFetches && !sameNames(fetches, this.lastFetches)) {
      const f: Record<string, null> = {};
      for (const name of fetches) f[name] = null;
      this.fetchObject = f;
      this.lastFetches = fetches;
    }
    return this.s.run(feeds, this.fetchObject, NO_RUN_OPTIONS);
  }

  release(): Promise<void> {
    this.s.dispose();
    return Promise.resolve();
  }
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function metadata(m: RawMetadata): ort.InferenceSession.ValueMetadata {
  if (!m.isTensor) return { name: m.name, isTensor: false };
  const type = ORT_TYPES[m.type];
  if (type === undefined) throw new Error(`unsupported ONNX element type ${m.type} for '${m.name}'`);
  const shape = m.shape.map((d, i) => (d === -1 ? m.symbolicDimensions[i] ?? '' : d));
  return { name: m.name, isTensor: true, type, shape } as ort.InferenceSession.ValueMetadata;
}

function publicSession(s: ort.InferenceSession): OrtSession {
  return {
    synchronous: false,
    inputMetadata: s.inputMetadata,
    outputMetadata: s.outputMetadata,
    run: (feeds, fetches) => s.run(tensors(feeds), fetches as string[]) as unknown as Promise<OrtResults>,
    release: () => s.release(),
  };
}

function tensors(feeds: OrtFeeds): Record<string, ort.Tensor> {
  const out: Record<string, ort.Tensor> = {};
  for (const name in feeds) {
    const f = feeds[name]!;
    out[name] = new ort.Tensor(f.type as 'float32', f.data as Float32Array, f.dims);
  }
  return out;
}
