import { spawn, type ChildProcess } from 'node:child_process';

export interface ServeProcess {
  readonly child: ChildProcess;
  readonly httpPort: number;
  /** undefined when the gRPC service is off. */
  readonly grpcPort: number | undefined;
  readonly output: () => string;
  readonly exited: Promise<number | null>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Any command that ends in `nereid serve` (setpriv in front, exact flags), started as its own process: resolves
 * once the HTTP service (and the gRPC one when `grpc`) reports its port, rejects if the process ends first.
 */
export async function startServeCommand(command: string, args: string[], o: { env?: NodeJS.ProcessEnv; cwd?: string; grpc?: boolean } = {}): Promise<ServeProcess> {
  const child = spawn(command, args, { cwd: o.cwd, env: o.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ports = await new Promise<{ http: number; grpc: number | undefined }>((resolve, reject) => {
    const onData = (b: Buffer): void => {
      out += b.toString();
      const http = /Started HTTPService at [^\n]*:(\d+)/.exec(out);
      const grpc = /Started GRPCInferenceService at [^\n]*:(\d+)/.exec(out);
      if (http && (!o.grpc || grpc)) resolve({ http: Number(http[1]), grpc: grpc ? Number(grpc[1]) : undefined });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => reject(new Error(`${command} exited with ${code} before serving:\n${out}`)));
  });
  return {
    child,
    httpPort: ports.http,
    grpcPort: ports.grpc,
    output: () => out,
    exited,
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
