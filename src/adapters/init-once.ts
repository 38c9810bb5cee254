/**
 * A Lambda container's dependencies, built once and started during init. A failure (an
 * SSM read, say) is not kept: the next invocation builds them again instead of leaving
 * the container broken for its whole life.
 */
export function initOnce<T>(make: () => Promise<T>): () => Promise<T> {
  let ready: Promise<T> | undefined;
  const deps = (): Promise<T> => {
    ready ??= make().catch((error: unknown) => {
      ready = undefined;
      throw error;
    });
    return ready;
  };
  deps().catch(() => undefined);
  return deps;
}
