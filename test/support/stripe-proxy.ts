import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A proxy in front of a Stripe test server that loses answers: a request matching the rule
 * reaches Stripe and is applied there, Stripe's whole answer is read, and then the client's
 * connection is destroyed, so the SDK sees no answer (a lost answer after Stripe applied it).
 * Every other request passes through unchanged.
 */
export interface LosingProxy {
  /** `http://127.0.0.1:<port>`: give it as TALLY_STRIPE_API_BASE. */
  readonly url: string;
  /** Loses the answers of the next `count` requests with this method and path. */
  loseAnswers(method: string, path: string, count: number): void;
  /** Answers lost so far (applied by Stripe, never seen by the client). */
  lost(): number;
  close(): Promise<void>;
}

/** Starts a losing proxy for the server at `target` on a free port of 127.0.0.1. */
export async function startLosingProxy(target: string): Promise<LosingProxy> {
  const upstream = new URL(target);
  const rules: { method: string; path: string; left: number }[] = [];
  let lost = 0;
  const server: Server = createServer((req: IncomingMessage, res) => {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    const rule = rules.find((r) => r.left > 0 && r.method === req.method && r.path === path);
    if (rule !== undefined) rule.left--;
    const forward = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } },
      (answer) => {
        if (rule !== undefined) {
          // Stripe applied it and answered: read the answer, then lose it.
          answer.resume();
          answer.on('end', () => {
            lost++;
            req.socket.destroy();
          });
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => req.socket.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    loseAnswers(method, path, count) {
      rules.push({ method, path, left: count });
    },
    lost: () => lost,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
