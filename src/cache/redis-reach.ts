/** What reachRedis needs of an ioredis client made with `lazyConnect: true`. */
export interface LazyRedis {
  connect(): Promise<void>;
  ping(): Promise<unknown>;
  disconnect(): void;
  on(event: 'error', listener: (e: Error) => void): unknown;
}

/**
 * Connects a client made with lazyConnect and checks that Redis answers. Resolves to undefined when it does; else
 * disconnects the client and resolves to why: connect() only rejects with "Connection is closed.", and the reason
 * (refused, WRONGPASS, …) comes as an 'error' event. That listener stays, so a connection lost later cannot end the
 * process with an unhandled 'error'.
 */
export async function reachRedis(client: LazyRedis): Promise<string | undefined> {
  let reason: string | undefined;
  client.on('error', (e: Error) => void (reason ??= e.message));
  try {
    await client.connect();
    await client.ping();
    return undefined;
  } catch (e) {
    client.disconnect();
    return reason ?? (e as Error).message;
  }
}
