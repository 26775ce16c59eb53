import type { RequestTrace } from '../../inference/trace.js';
import type { Tensor } from '../../tensor/tensor.js';
import { LEVEL_TENSORS, LEVEL_TIMESTAMPS } from './config.js';
import type { TraceSetting } from './settings.js';
import { tensorDataText } from './tensor-text.js';

/** What a trace needs of its manager: ids, and to be told when a root trace is over. */
export interface TraceOwner {
  nextId(): number;
  finished(setting: TraceSetting, records: string | null): void;
}

/**
 * A trace in Triton mode: its records kept as the JSON text Triton writes (one object per timestamp, the trace
 * header at REQUEST_START, one object per tensor), grouped per trace id, the children's after their parent's.
 * Built only for sampled requests; written when the root trace ends.
 */
export class TritonTrace implements RequestTrace {
  readonly id: number;
  readonly tensors: boolean;
  private readonly stamps: boolean;
  private readonly records: string[] = [];
  private readonly children: TritonTrace[] = [];

  constructor(
    private readonly owner: TraceOwner,
    private readonly setting: TraceSetting,
    private readonly parentId: number,
    /** A client's traceparent, handed on unchanged to the services this request calls. */
    private readonly incoming: string,
  ) {
    this.id = owner.nextId();
    this.tensors = (setting.level & LEVEL_TENSORS) !== 0;
    this.stamps = (setting.level & LEVEL_TIMESTAMPS) !== 0;
  }

  requestStart(model: string, version: number, requestId: string, ns: bigint): void {
    // Triton writes the header with REQUEST_START's timestamp: TENSORS alone writes neither.
    if (!this.stamps) return;
    let header = `{"id":${this.id},"model_name":${JSON.stringify(model)},"model_version":${version}`;
    if (requestId !== '') header += `,"request_id":${JSON.stringify(requestId)}`;
    if (this.parentId !== 0) header += `,"parent_id":${this.parentId}`;
    this.records.push(`${header}}`);
    this.stamp('REQUEST_START', ns);
  }

  stamp(name: string, ns: bigint): void {
    if (this.stamps) this.records.push(`{"id":${this.id},"timestamps":[{"name":"${name}","ns":${ns}}]}`);
  }

  tensor(activity: string, t: Tensor): void {
    if (!this.tensors) return;
    const tensor = `{"name":${JSON.stringify(t.name)},"data":${JSON.stringify(tensorDataText(t))},"shape":"${t.shape.join(',')}","dtype":"${t.datatype}"}`;
    this.records.push(`{"id":${this.id},"activity":"${activity}","tensor":${tensor}}`);
  }

  child(): RequestTrace {
    const c = new TritonTrace(this.owner, this.setting, this.id, this.incoming);
    this.children.push(c);
    return c;
  }

  traceparent(): string {
    return this.incoming;
  }

  /** The root trace is over: its records and its children's go to the setting's file. */
  end(): void {
    const all: string[] = [];
    this.gather(all);
    this.owner.finished(this.setting, all.length === 0 ? null : all.join(','));
  }

  private gather(into: string[]): void {
    for (const r of this.records) into.push(r);
    for (const c of this.children) c.gather(into);
  }
}
