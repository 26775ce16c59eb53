import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { parse } from 'yaml';
import { EXAMPLES, ROOT } from '../helpers/paths.js';
import { tempRepository } from '../helpers/server.js';
import { startServeCommand } from '../helpers/serve-process.js';
import { checkSimpleOverGrpc, checkSimpleOverHttp } from '../helpers/simple-model.js';

// Nereid as KServe starts it: the ClusterServingRuntime's command and args exactly, with /mnt/models (the
// storageUri's folder, a Triton-layout repository) a local folder. KServe's port for gRPC is 9000, for HTTP
// 8080, and its Prometheus annotation points at 8002, Nereid's default metrics port.

const RUNTIME = join(ROOT, 'deploy', 'kubernetes', 'kserve', 'clusterservingruntime.yaml');

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '0.0.0.0', () => s.close(() => resolve(true)));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

test("the serving runtime's exact command and args serve /mnt/models over HTTP, gRPC and metrics", { timeout: 120_000 }, async () => {
  const runtime = parse(readFileSync(RUNTIME, 'utf8'));
  const container = runtime.spec.containers.find((c: { name: string }) => c.name === 'kserve-container');
  assert.deepEqual(container.command, ['nereid', 'serve']);
  const repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }]);
  try {
    let args: string[] = container.args.map((a: string) => a.replace('/mnt/models', repo.dir));
    let metricsPort = Number(runtime.spec.annotations['prometheus.kserve.io/port']);
    // The machine is shared: only if KServe's ports are taken do they become free ones (else the args are exact).
    const taken = !(await canListen(8080)) || !(await canListen(9000)) || !(await canListen(metricsPort));
    if (taken) {
      const [http, grpc, metrics] = [await freePort(), await freePort(), await freePort()];
      console.log(`KServe's ports are in use here: HTTP ${http}, gRPC ${grpc}, metrics ${metrics} instead`);
      args = args.map((a) => a.replace('--grpc-port=9000', `--grpc-port=${grpc}`).replace('--http-port=8080', `--http-port=${http}`));
      args.push(`--metrics-port=${metrics}`);
      metricsPort = metrics;
    }
    const s = await startServeCommand(process.execPath, [join(ROOT, 'bin', 'nereid.js'), 'serve', ...args], { grpc: true });
    try {
      if (!taken) assert.deepEqual([s.httpPort, s.grpcPort], [8080, 9000]);
      const url = `http://127.0.0.1:${s.httpPort}`;
      assert.equal((await fetch(`${url}/v2/health/ready`)).status, 200);
      await checkSimpleOverHttp(url);
      await checkSimpleOverGrpc(s.grpcPort!);
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}${runtime.spec.annotations['prometheus.kserve.io/path']}`)).text();
      assert.match(metrics, /^nv_inference_request_success\{model="simple",version="1"\} 2$/m);
    } finally {
      assert.equal(await s.stop(), 0, s.output());
    }
  } finally {
    await repo.remove();
  }
});
