import type { LocalStack } from '../../src/local/stack';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __TALLY_STACK__?: LocalStack }).__TALLY_STACK__?.stop();
}
