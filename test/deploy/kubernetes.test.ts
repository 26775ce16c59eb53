import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { parse, parseAllDocuments } from 'yaml';
import { ROOT, FIXTURES } from '../helpers/paths.js';
import { parseServeFlags } from '../../src/cli/flags.js';
import { ServerMetrics } from '../../src/observability/metrics/server-metrics.js';

// Every kustomization under deploy/kubernetes rendered with `kubectl kustomize`, and every object it renders
// validated offline: core objects against the Kubernetes OpenAPI schemas of kubernetes-models, KEDA and the
// Prometheus Operator against their @kubernetes-models packages, KServe and the Gateway API Inference
// Extension against their CRDs' schemas (test/fixtures/schemas). Then what the schemas cannot say: the flags
// parse, the grace period covers the shutdown, the probes and ports are Nereid's, the metrics the autoscalers
// read are ones Nereid exports.

const DEPLOY = join(ROOT, 'deploy', 'kubernetes');
const SCHEMAS = join(FIXTURES, 'schemas');

type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string> }; [k: string]: any };

function kubectlMissing(): string | undefined {
  try {
    execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'kubectl is not installed (it renders the manifests with `kubectl kustomize`)';
  }
}

const missing = kubectlMissing();
const skip = missing && process.env.CI !== 'true' ? missing : false;

/** Every folder below deploy/kubernetes with a kustomization.yaml. */
function kustomizations(dir = DEPLOY, out: string[] = []): string[] {
  if (existsSync(join(dir, 'kustomization.yaml'))) out.push(dir);
  for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) kustomizations(join(dir, e.name), out);
  return out.sort();
}

function render(dir: string): K8sObject[] {
  const text = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
  return parseAllDocuments(text).map((d) => d.toJS() as K8sObject).filter((o) => o !== null);
}

// ---------------------------------------------------------------------------------------------------------
// Schema validation

/** The kubernetes-models module of a kind, by API group. */
function modelModule(apiVersion: string, kind: string): string | undefined {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  if (group === 'keda.sh') return `@kubernetes-models/keda/${apiVersion}/${kind}`;
  if (group === 'monitoring.coreos.com') return `@kubernetes-models/prometheus-operator/${apiVersion}/${kind}`;
  if (group === '') return `kubernetes-models/${version}/${kind}`;
  if (!group!.includes('.') || group!.endsWith('.k8s.io') && !group!.startsWith('inference.')) return `kubernetes-models/${apiVersion}/${kind}`;
  return undefined;
}

const CRD_FILES: Record<string, string> = {
  'serving.kserve.io/ClusterServingRuntime': 'serving.kserve.io_clusterservingruntimes.yaml',
  'serving.kserve.io/InferenceService': 'serving.kserve.io_inferenceservices.yaml',
  'inference.networking.k8s.io/InferencePool': 'inference.networking.k8s.io_inferencepools.yaml',
};

/**
 * A CRD's structural schema as JSON Schema for Ajv. Kubernetes drops fields a schema does not declare (and
 * `kubectl apply --validate=strict` refuses them), so an object with declared properties gets
 * additionalProperties false unless it preserves unknown fields; int-or-string becomes its two types. CEL
 * rules (x-kubernetes-validations) are not evaluated here.
 */
function structural(s: any): any {
  if (Array.isArray(s)) return s.map(structural);
  if (!s || typeof s !== 'object') return s;
  const out: any = {};
  for (const [k, v] of Object.entries(s)) {
    if (k.startsWith('x-kubernetes-')) continue;
    out[k] = k === 'properties' ? Object.fromEntries(Object.entries(v as object).map(([p, ps]) => [p, structural(ps)])) : structural(v);
  }
  if (s['x-kubernetes-int-or-string']) return { anyOf: [{ type: 'integer' }, { type: 'string' }] };
  if (s.properties && s.additionalProperties === undefined && !s['x-kubernetes-preserve-unknown-fields']) out.additionalProperties = false;
  return out;
}

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
const crdValidators = new Map<string, ValidateFunction>();

function crdValidator(apiVersion: string, kind: string): ValidateFunction | undefined {
  const [group, version] = apiVersion.split('/');
  const file = CRD_FILES[`${group}/${kind}`];
  if (!file) return undefined;
  const key = `${apiVersion}/${kind}`;
  let v = crdValidators.get(key);
  if (!v) {
    const crd = parse(readFileSync(join(SCHEMAS, file), 'utf8'));
    const served = crd.spec.versions.find((x: any) => x.name === version);
    assert.ok(served, `the ${kind} CRD has no version ${version}`);
    v = ajv.compile(structural(served.schema.openAPIV3Schema));
    crdValidators.set(key, v);
  }
  return v;
}

async function validate(o: K8sObject): Promise<void> {
  const where = `${o.kind} ${o.metadata?.name}`;
  const crd = crdValidator(o.apiVersion, o.kind);
  if (crd) {
    assert.ok(crd(o), `${where}: ${ajv.errorsText(crd.errors, { separator: '; ' })}`);
    return;
  }
  const mod = modelModule(o.apiVersion, o.kind);
  assert.ok(mod, `${where}: no schema known for ${o.apiVersion}`);
  const Model = (await import(mod))[o.kind];
  assert.ok(Model, `${where}: ${mod} has no ${o.kind}`);
  try {
    new Model(o).validate();
  } catch (e) {
    assert.fail(`${where}: ${(e as Error).message}`);
  }
}

// ---------------------------------------------------------------------------------------------------------
// What the schemas cannot check

/** The container's arguments with $(VAR) expanded from its env and the ConfigMaps it reads, as the kubelet does. */
function expandedArgs(container: any, objects: K8sObject[]): string[] {
  const vars: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    const cm = from.configMapRef && objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === from.configMapRef.name);
    if (from.configMapRef) assert.ok(cm, `ConfigMap ${from.configMapRef.name} is not rendered`);
    Object.assign(vars, cm?.data ?? {});
  }
  for (const e of container.env ?? []) if (typeof e.value === 'string') vars[e.name] = e.value;
  return (container.args ?? []).map((a: string) => a.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, name: string) => {
    assert.ok(name in vars, `${a}: $(${name}) is not set`);
    return vars[name]!;
  }));
}

/** A flag's value from expanded args (`--name=value`), else undefined. */
function flagValue(args: string[], name: string): string | undefined {
  return args.filter((a) => a.startsWith(`--${name}=`)).map((a) => a.slice(name.length + 3)).at(-1);
}

function preStopSleepSecs(container: any): number {
  const h = container.lifecycle?.preStop;
  if (!h) return 0;
  if (h.sleep) return Number(h.sleep.seconds);
  const cmd: string[] = h.exec?.command ?? [];
  assert.equal(cmd[0], 'sleep', `a preStop hook other than a sleep: ${JSON.stringify(h)}`);
  return Number(cmd[1]);
}

/** Seconds a process may take to exit once its last request is answered, on top of the configured waits. */
const EXIT_MARGIN_SECS = 5;

function checkNereidDeployment(d: K8sObject, objects: K8sObject[], where: string): void {
  const pod = d.spec.template.spec;
  const c = pod.containers.find((x: any) => x.name === 'nereid');
  assert.ok(c, `${where}: no container named nereid`);
  assert.deepEqual(c.command, ['nereid', 'serve']);
  const args = expandedArgs(c, objects);
  assert.doesNotThrow(() => parseServeFlags(args), `${where}: Nereid refuses its flags ${JSON.stringify(args)}`);

  // SIGTERM comes after the preStop hook; the drain delay is part of --exit-timeout-secs (the server refuses
  // a drain that is not shorter), so the grace period covers the sleep, the exit timeout and a margin.
  const exitTimeout = Math.max(0, Number(flagValue(args, 'exit-timeout-secs') ?? 30));
  const drain = Number(flagValue(args, 'exit-drain-secs') ?? 0);
  assert.ok(drain === 0 || drain < exitTimeout, `${where}: --exit-drain-secs ${drain} is not shorter than --exit-timeout-secs ${exitTimeout}`);
  const needed = preStopSleepSecs(c) + exitTimeout + EXIT_MARGIN_SECS;
  assert.ok(pod.terminationGracePeriodSeconds >= needed,
    `${where}: terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} < preStop ${preStopSleepSecs(c)} + exit timeout ${exitTimeout} + ${EXIT_MARGIN_SECS}`);

  assert.equal(c.startupProbe?.httpGet?.path, '/v2/health/live');
  assert.ok(c.startupProbe.periodSeconds * c.startupProbe.failureThreshold >= 120, `${where}: the startup probe gives model loads under 2 minutes`);
  assert.equal(c.readinessProbe?.httpGet?.path, '/v2/health/ready');
  assert.equal(c.livenessProbe?.httpGet?.path, '/v2/health/live');
  const ports = new Map<string, number>(c.ports.map((p: any) => [p.name, p.containerPort]));
  assert.equal(ports.get('http'), Number(flagValue(args, 'http-port')));
  assert.equal(ports.get('grpc'), Number(flagValue(args, 'grpc-port')));
  assert.equal(ports.get('metrics'), Number(flagValue(args, 'metrics-port')));
  if (flagValue(args, 'openai-port') !== undefined) assert.equal(ports.get('openai'), Number(flagValue(args, 'openai-port')));
  assert.ok(c.resources?.requests && c.resources?.limits, `${where}: resources`);
  assert.equal(c.securityContext?.readOnlyRootFilesystem, true);
  assert.equal(pod.securityContext?.runAsNonRoot, true);
}

function checkSelections(objects: K8sObject[], where: string): void {
  const deployment = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'nereid');
  const podLabels = deployment?.spec.template.metadata.labels ?? {};
  const selects = (sel: Record<string, string>): boolean => Object.entries(sel).every(([k, v]) => podLabels[k] === v);
  for (const o of objects) {
    if (o.kind === 'Service' && o.metadata.name === 'nereid') assert.ok(selects(o.spec.selector), `${where}: the Service misses the pods`);
    if (o.kind === 'PodDisruptionBudget') assert.ok(selects(o.spec.selector.matchLabels), `${where}: the PDB misses the pods`);
    if (o.kind === 'InferencePool') {
      assert.ok(selects(o.spec.selector.matchLabels), `${where}: the InferencePool misses the pods`);
      const ports = deployment!.spec.template.spec.containers[0].ports.map((p: any) => p.containerPort);
      for (const p of o.spec.targetPorts) assert.ok(ports.includes(p.number), `${where}: the InferencePool targets port ${p.number}, which the pods do not open`);
    }
    if (o.kind === 'ServiceMonitor') {
      const svc = objects.find((s) => s.kind === 'Service' && Object.entries(o.spec.selector.matchLabels).every(([k, v]) => s.metadata.labels?.[k] === v));
      assert.ok(svc, `${where}: the ServiceMonitor selects no Service`);
      for (const e of o.spec.endpoints) assert.ok(svc.spec.ports.some((p: any) => p.name === e.port), `${where}: no Service port named ${e.port}`);
    }
    if (o.kind === 'HorizontalPodAutoscaler' || o.kind === 'ScaledObject') {
      assert.equal(o.spec.scaleTargetRef.name, 'nereid');
    }
  }
}

/** Names of the metric families Nereid's metrics endpoint serves. */
function exportedMetricNames(): Set<string> {
  const m = new ServerMetrics(() => [], { cpu: false, settings: undefined });
  try {
    return new Set(m.registry.getMetricsAsArray().map((x) => x.name));
  } finally {
    m.close();
  }
}

/** nv_* and nereid_* names a PromQL text reads. */
const metricNamesIn = (promql: string): string[] => [...promql.matchAll(/\b(nv_[a-z_]+|nereid_[a-z_]+)\b(?=\s*[{[)]|\s*$)/g)].map((m) => m[1]!);

// ---------------------------------------------------------------------------------------------------------

test('every kustomization renders and every object validates against its schema', { skip, timeout: 120_000 }, async () => {
  assert.equal(missing, undefined, missing);
  const dirs = kustomizations();
  const names = dirs.map((d) => relative(DEPLOY, d));
  for (const expected of ['base', 'kserve', 'overlays/autoscaling-hpa', 'overlays/autoscaling-keda', 'overlays/inference-pool', 'overlays/multi-replica-redis', 'overlays/pvc-repository', 'overlays/s3-repository', 'overlays/servicemonitor']) {
    assert.ok(names.includes(expected), `deploy/kubernetes/${expected} is missing`);
  }
  const kinds = new Set<string>();
  for (const dir of dirs) {
    const objects = render(dir);
    assert.ok(objects.length > 0, `${relative(ROOT, dir)} renders nothing`);
    for (const o of objects) {
      await validate(o);
      kinds.add(`${o.apiVersion} ${o.kind}`);
    }
  }
  console.log(`validated kinds: ${[...kinds].sort().join(', ')}`);
  for (const k of ['apps/v1 Deployment', 'v1 Service', 'v1 ConfigMap', 'policy/v1 PodDisruptionBudget', 'v1 PersistentVolumeClaim', 'autoscaling/v2 HorizontalPodAutoscaler', 'keda.sh/v1alpha1 ScaledObject', 'monitoring.coreos.com/v1 ServiceMonitor', 'serving.kserve.io/v1alpha1 ClusterServingRuntime', 'serving.kserve.io/v1beta1 InferenceService', 'inference.networking.k8s.io/v1 InferencePool']) {
    assert.ok(kinds.has(k), `no ${k} was validated`);
  }
});

test('a schema violation is caught, in a core object and in a CRD object', { skip }, async () => {
  assert.equal(missing, undefined, missing);
  const [pool] = render(join(DEPLOY, 'overlays', 'inference-pool')).filter((o) => o.kind === 'InferencePool');
  await assert.rejects(validate({ ...pool!, spec: { ...pool!.spec, targetPorts: [{ number: 70000 }] } }), /maximum|<= 65535/);
  await assert.rejects(validate({ ...pool!, spec: { ...pool!.spec, targetPort: 9000 } }), /additional properties/);
  const [svc] = render(join(DEPLOY, 'base')).filter((o) => o.kind === 'Service');
  await assert.rejects(validate({ ...svc!, spec: { ...svc!.spec, ports: [{ name: 'http', port: 'eighty' }] } }), /integer/);
});

test("the manifests' flags parse, grace periods cover the shutdown, probes, ports and selectors fit", { skip }, () => {
  assert.equal(missing, undefined, missing);
  for (const dir of kustomizations().filter((d) => !d.endsWith('kserve'))) {
    const where = relative(DEPLOY, dir);
    const objects = render(dir);
    const d = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'nereid');
    assert.ok(d, `${where}: no Deployment nereid`);
    checkNereidDeployment(d, objects, where);
    checkSelections(objects, where);
  }
});

test('the multi-replica overlay gives three replicas one Redis for sequences and the response cache, and drains', { skip }, () => {
  assert.equal(missing, undefined, missing);
  const objects = render(join(DEPLOY, 'overlays', 'multi-replica-redis'));
  const d = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'nereid')!;
  assert.equal(d.spec.replicas, 3);
  const args = expandedArgs(d.spec.template.spec.containers[0], objects);
  const redis = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'nereid-redis')!;
  const port = redis.spec.ports[0].port;
  assert.equal(flagValue(args, 'sequence-state-store'), `redis://nereid-redis:${port}`);
  assert.deepEqual(args.filter((a) => a.startsWith('--cache-config=')), ['--cache-config=redis,host=nereid-redis', `--cache-config=redis,port=${port}`]);
  assert.ok(Number(flagValue(args, 'exit-drain-secs')) > 0);
});

test('the autoscalers read metrics Nereid exports, and the HPA reads what the adapter rules make', { skip }, () => {
  assert.equal(missing, undefined, missing);
  const exported = exportedMetricNames();
  const rules = parse(readFileSync(join(DEPLOY, 'overlays', 'autoscaling-hpa', 'prometheus-adapter-rules.yaml'), 'utf8')).rules as any[];
  const made = new Set<string>();
  for (const r of rules) {
    for (const name of [...metricNamesIn(r.seriesQuery), ...metricNamesIn(r.metricsQuery)]) assert.ok(exported.has(name), `adapter rule reads ${name}, which Nereid does not export`);
    assert.ok(new RegExp(r.name.matches).test(metricNamesIn(r.seriesQuery)[0]!), `rule name.matches ${r.name.matches} misses its series`);
    assert.match(r.metricsQuery, /<<\.LabelMatchers>>/);
    made.add(r.name.as);
  }
  const hpa = render(join(DEPLOY, 'overlays', 'autoscaling-hpa')).find((o) => o.kind === 'HorizontalPodAutoscaler')!;
  const read = hpa.spec.metrics.map((m: any) => m.pods.metric.name);
  assert.deepEqual(read.filter((n: string) => !made.has(n)), [], 'the HPA reads metrics no adapter rule makes');
  const so = render(join(DEPLOY, 'overlays', 'autoscaling-keda')).find((o) => o.kind === 'ScaledObject')!;
  for (const t of so.spec.triggers) {
    assert.equal(t.type, 'prometheus');
    const names = metricNamesIn(t.metadata.query);
    assert.ok(names.length > 0);
    for (const n of names) assert.ok(exported.has(n), `KEDA reads ${n}, which Nereid does not export`);
  }
});

test('the KServe runtime is shaped like kserve-tritonserver and the InferenceService uses its gRPC port', { skip }, () => {
  assert.equal(missing, undefined, missing);
  const objects = render(join(DEPLOY, 'kserve'));
  const rt = objects.find((o) => o.kind === 'ClusterServingRuntime')!;
  const c = rt.spec.containers[0];
  assert.equal(c.name, 'kserve-container');
  assert.deepEqual(c.args, ['--model-store=/mnt/models', '--grpc-port=9000', '--http-port=8080', '--allow-grpc=true', '--allow-http=true']);
  assert.doesNotThrow(() => parseServeFlags(c.args));
  assert.deepEqual(rt.spec.protocolVersions, ['v2', 'grpc-v2']);
  assert.equal(rt.spec.annotations['prometheus.kserve.io/port'], '8002');
  // kserve-tritonserver declares priority 1: a different one never ties with it.
  for (const f of rt.spec.supportedModelFormats) assert.ok(f.autoSelect && f.priority !== 1, `format ${f.name} ties with Triton's runtime`);
  const isvc = objects.find((o) => o.kind === 'InferenceService')!;
  const model = isvc.spec.predictor.model;
  assert.equal(model.runtime, rt.metadata.name);
  assert.ok(rt.spec.supportedModelFormats.some((f: any) => f.name === model.modelFormat.name));
  const grpcPort = model.ports.find((p: any) => p.name === 'h2c' || p.name.includes('grpc'));
  assert.equal(grpcPort?.containerPort, 9000);
});
