/**
 * A candidate served by its own `nereid serve` process, on free loopback ports, loading only that candidate, so
 * that no measurement shares a process, a JIT or a thread pool with another.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { whenAborted } from '../abort.js';

const NEREID_BIN = fileURLToPath(new URL('../../../../bin/nereid.js', import.meta.url));

export interface ServeProcess {
  readonly httpUrl: string;
  readonly grpcUrl: string | undefined;
  stop(): Promise<void>;
}

export class CandidateFailed extends Error {}

/** The first error line of a server's log, without its prefix, for a reason a person can act on. */
function reasonFrom(log: string): string {
  const lines = log.split('\n').map((l) => l.replace(/^[IWE]\d{4} [\d:.]+ \d+ [^\]]+\] /, '').replace(/^"(.*)"$/, '$1'));
  const error = lines.find((l) => /error|failed/i.test(l)) ?? lines.filter((l) => l.trim() !== '').at(-1) ?? 'no output';
  return error.slice(0, 400);
}

export async function startServer(repository: string, model: string, grpc: boolean, signal?: AbortSignal): Promise<ServeProcess> {
  const args = [
    NEREID_BIN, 'serve', '--model-repository', repository, '--model-control-mode', 'explicit', '--load-model', model,
    '--http-port', '0', '--http-address', '127.0.0.1', '--allow-metrics', 'false',
    ...(grpc ? ['--grpc-port', '0', '--grpc-address', '127.0.0.1'] : ['--allow-grpc', 'false']),
  ];
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: false });
  let log = '';
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(t);
  };
  const aborted = whenAborted(signal);
  try {
    const ports = await new Promise<{ http: number; grpc: number | undefined }>((resolve, reject) => {
      let http: number | undefined;
      let g: number | undefined;
      const onData = (b: Buffer): void => {
        log += b.toString();
        http ??= Number(/Started HTTPService at [^\s:]+:(\d+)/.exec(log)?.[1]) || undefined;
        g ??= Number(/Started GRPCInferenceService at [^\s:]+:(\d+)/.exec(log)?.[1]) || undefined;
        if (http !== undefined && (!grpc || g !== undefined)) resolve({ http, grpc: g });
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      void exited.then((code) => reject(new CandidateFailed(`the server exited (${code}) before serving: ${reasonFrom(log)}`)));
      void aborted.promise.then(() => reject(new CandidateFailed('interrupted')));
    });
    aborted.dispose();
    const httpUrl = `127.0.0.1:${ports.http}`;
    const ready = await fetch(`http://${httpUrl}/v2/models/${encodeURIComponent(model)}/ready`).then((r) => r.status, () => 0);
    if (ready !== 200) throw new CandidateFailed(`model '${model}' is not ready: ${reasonFrom(log)}`);
    return { httpUrl, grpcUrl: ports.grpc === undefined ? undefined : `127.0.0.1:${ports.grpc}`, stop };
  } catch (e) {
    aborted.dispose();
    await stop();
    throw e;
  }
}
