import { after, before, test } from 'node:test';
import { join } from 'node:path';
import { EXAMPLES } from '../helpers/paths.js';
import { tempRepository } from '../helpers/server.js';
import { startBothFrontends } from '../helpers/frontends.js';
import { createShmObject } from '../helpers/shm.js';
import { assertDistinctRefusals, assertTritonWords } from '../helpers/triton-messages.js';
import { SHM_MESSAGES, type ShmContext } from './triton-messages.js';

// Each shared-memory refusal against real servers, as a client sees it over HTTP and over gRPC: the message
// must hold Triton's words.

let repo: { dir: string; remove(): Promise<void> };
let ctx: ShmContext;
const objects: { remove(): void }[] = [];

before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }]);
  const on = await startBothFrontends({ modelRepositories: [repo.dir], allowClientShm: true });
  const off = await startBothFrontends({ modelRepositories: [repo.dir], allowClientShm: false });
  ctx = {
    on,
    off,
    object: (bytes) => {
      const o = createShmObject(bytes);
      objects.push(o);
      return o.key;
    },
  };
});
after(async () => {
  await ctx.on.close();
  await ctx.off.close();
  await repo.remove();
  objects.forEach((o) => o.remove());
});

test('the table names each refusal once', () => assertDistinctRefusals(SHM_MESSAGES));

for (const row of SHM_MESSAGES) {
  test(row.refusal, async () => {
    if (row.http) assertTritonWords(row, `HTTP: ${await row.http(ctx)}`);
    if (row.grpc) assertTritonWords(row, `gRPC: ${await row.grpc(ctx)}`);
  });
}
