import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

// A real redis-server from Debian for the tests that need one, started on a free loopback port.

const missing = spawnSync('redis-server', ['--version']).error ? 'redis-server is not installed (Debian package redis-server)' : undefined;

/** A test's `skip` option: the reason outside CI when redis-server is missing; under CI false, so the test fails. */
export const REDIS_SKIP: string | false = missing && process.env.CI !== 'true' ? missing : false;

/** A loopback port nothing listens on now. */
export function freeRedisPort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** redis-server on `port` with nothing persisted, once it answers PING (NOAUTH counts, for a server with a password). */
export async function startRedis(port: number, extra: string[] = []): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extra], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    if (/PONG|NOAUTH/.test(spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).stdout)) return child;
    await sleep(50);
  }
  child.kill();
  throw new Error('redis-server did not start');
}
