import type { WebhookTransport } from '../../app/ports';

/** POSTs with Node's fetch, giving up after `timeoutMs` (a slow receiver is retried later, not waited on). */
export class FetchWebhookTransport implements WebhookTransport {
  constructor(private readonly timeoutMs = 10_000) {}

  async post(url: string, body: string, headers: Readonly<Record<string, string>>): Promise<{ status: number }> {
    const response = await fetch(url, { method: 'POST', body, headers, redirect: 'manual', signal: AbortSignal.timeout(this.timeoutMs) });
    // The body is not needed; reading it frees the connection.
    await response.arrayBuffer().catch(() => undefined);
    return { status: response.status };
  }
}
