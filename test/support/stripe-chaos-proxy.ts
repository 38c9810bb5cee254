import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A proxy in front of the Stripe test server (test/support/stripe-server.ts) that injects
 * the faults a network and Stripe itself produce, each request drawn from a seeded generator
 * so a failing seed replays. The model behind it stays whole: every fault is a request that
 * never reached it, or an answer of it that the client never saw or saw changed.
 *
 * ```
 * pass          forwarded, answered as the model answers
 * refuse-429    answered 429 (rate limited) without reaching the model
 * refuse-5xx    answered 500 or 503 without reaching the model
 * lose          reaches the model (applied), the answer is read and the connection destroyed
 * applied-500   reaches the model (applied), answered 500 instead of the model's answer
 * hang-before   never forwarded; the connection is held until the client gives up (a timeout)
 * hang-after    reaches the model (applied); the answer is held until the client gives up
 * ```
 */
export type ChaosFault = 'pass' | 'refuse-429' | 'refuse-5xx' | 'lose' | 'applied-500' | 'hang-before' | 'hang-after';

export interface ChaosProxy {
  /** `http://127.0.0.1:<port>`: the API base of the client under test. */
  readonly url: string;
  /** Sets the chance of a fault for each request from now on (0: every request passes), drawn from `random`. */
  setFaults(rate: number, random: () => number): void;
  /** What happened to each request, in order. */
  readonly log: { method: string; path: string; fault: ChaosFault }[];
  /** Resolves once no request is in flight through the proxy (a dead sender's last calls have landed). */
  drained(): Promise<void>;
  close(): Promise<void>;
}

const FAULTS: readonly ChaosFault[] = ['refuse-429', 'refuse-5xx', 'lose', 'applied-500', 'hang-before', 'hang-after'];

function stripeError(res: ServerResponse, status: number): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { type: status === 429 ? 'invalid_request_error' : 'api_error', message: status === 429 ? 'Too many requests (chaos proxy)' : 'Internal error (chaos proxy)' } }));
}

/** Starts a chaos proxy for the server at `target` on a free port of 127.0.0.1; `hangMs`: how long a held connection is kept. */
export async function startChaosProxy(target: string, hangMs: number): Promise<ChaosProxy> {
  const upstream = new URL(target);
  let rate = 0;
  let random: () => number = () => 1;
  let inFlight = 0;
  let waiters: (() => void)[] = [];
  const log: ChaosProxy['log'] = [];
  const done = () => {
    inFlight--;
    if (inFlight === 0) {
      const woken = waiters;
      waiters = [];
      for (const wake of woken) wake();
    }
  };
  const server: Server = createServer((req: IncomingMessage, res) => {
    inFlight++;
    // Settled once the client's connection closed and the model's answer (if forwarded) ended.
    let parts = 1;
    const finish = () => {
      if (--parts === 0) done();
    };
    let clientClosed = false;
    res.on('close', () => {
      if (clientClosed) return;
      clientClosed = true;
      finish();
    });
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    const fault: ChaosFault = random() < rate ? FAULTS[Math.floor(random() * FAULTS.length)]! : 'pass';
    log.push({ method: req.method ?? 'GET', path, fault });
    if (fault === 'refuse-429' || fault === 'refuse-5xx') {
      req.resume();
      req.on('end', () => stripeError(res, fault === 'refuse-429' ? 429 : random() < 0.5 ? 500 : 503));
      return;
    }
    if (fault === 'hang-before') {
      req.resume();
      setTimeout(() => req.socket.destroy(), hangMs).unref();
      return;
    }
    parts++;
    let upstreamDone = false;
    const upstreamFinished = () => {
      if (upstreamDone) return;
      upstreamDone = true;
      finish();
    };
    const forward = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } }, (answer) => {
      answer.on('end', upstreamFinished);
      answer.on('error', upstreamFinished);
      if (fault === 'pass') {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        return;
      }
      // The model applied it and answered: read the answer, then the client never sees it.
      answer.resume();
      answer.on('end', () => {
        if (fault === 'applied-500') stripeError(res, 500);
        else if (fault === 'lose') req.socket.destroy();
        else setTimeout(() => req.socket.destroy(), hangMs).unref();
      });
    });
    forward.on('error', () => {
      upstreamFinished();
      req.socket.destroy();
    });
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    setFaults(nextRate, nextRandom) {
      rate = nextRate;
      random = nextRandom;
    },
    log,
    drained: () => (inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve))),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
