/** A promise that settles when a signal aborts, and a way to stop listening when it no longer matters. */
export function whenAborted(signal: AbortSignal | undefined): { promise: Promise<void>; dispose(): void } {
  if (!signal) return { promise: new Promise(() => undefined), dispose: () => undefined };
  let dispose = (): void => undefined;
  const promise = new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const listener = (): void => resolve();
    signal.addEventListener('abort', listener, { once: true });
    dispose = () => signal.removeEventListener('abort', listener);
  });
  return { promise, dispose };
}
