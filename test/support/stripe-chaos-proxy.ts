import { createHash } from 'node:crypto';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A proxy in front of the Stripe test server (test/support/stripe-server.ts) that injects
 * the faults a network and Stripe itself produce. The model behind it stays whole: every fault
 * is a request that never reached it, or an answer of it that the client never saw or saw changed.
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
 *
 * **Deterministic per seed.** A request's fault is decided by its identity alone, never by the
 * order requests arrive in nor by the wall clock: a hash of the seed, the rate, the method and
 * path, the client's channel, what makes the request itself (a meter event's `identifier`, an invoice item's
 * `Idempotency-Key`, a read's query) and how many times that same request came before on that
 * channel. Two
 * senders at once, a timeout that lets another request overtake, or a slow machine do not
 * move a fault onto another request, so a failing seed replays the same faults on the same
 * requests (before, one stream of draws was taken in arrival order: a timeout reordered them).
 */
export type ChaosFault = 'pass' | 'refuse-429' | 'refuse-5xx' | 'lose' | 'applied-500' | 'hang-before' | 'hang-after';

export interface ChaosProxy {
  /** `http://127.0.0.1:<port>`: the API base of the client under test. */
  readonly url: string;
  /**
   * The API base of one client among several at once (a sender run of the test's timeline): a
   * port of its own, whose requests are counted apart, so that what one run sends never moves
   * the faults of another (two senders at once, a run retrying more or less than last time);
   * `rate`: its own chance of a fault (else the one of setFaults); `paths`: only requests whose
   * path matches are faulted (a test that breaks one kind of read).
   */
  channel(name: string, rate?: number, paths?: RegExp): Promise<string>;
  /** Sets the chance of a fault for each request from now on (0: every request passes); `seed` names the run's faults. */
  setFaults(rate: number, seed: number): void;
  /** What happened to each request, in arrival order, with the identity its fault was decided by. */
  readonly log: { channel: string; method: string; path: string; fault: ChaosFault; identity: string }[];
  /** Resolves once no request is in flight through the proxy (a dead sender's last calls have landed). */
  drained(): Promise<void>;
  close(): Promise<void>;
}

const FAULTS: readonly ChaosFault[] = ['refuse-429', 'refuse-5xx', 'lose', 'applied-500', 'hang-before', 'hang-after'];

function stripeError(res: ServerResponse, status: number): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { type: status === 429 ? 'invalid_request_error' : 'api_error', message: status === 429 ? 'Too many requests (chaos proxy)' : 'Internal error (chaos proxy)' } }));
}

/**
 * What makes a request itself, whoever sends it and whenever: a meter event by its identifier
 * (and value: a re-split sends another value under another identifier), an invoice item by its
 * Idempotency-Key, anything else by its method, path and query (reads with the same question).
 */
export function requestIdentity(method: string, url: string, headers: IncomingMessage['headers'], body: string): string {
  const form = new URLSearchParams(body);
  const key = headers['idempotency-key'];
  if (method === 'POST' && form.has('identifier')) return `${method} ${url} identifier=${form.get('identifier')}`;
  if (method === 'POST' && typeof key === 'string' && !key.startsWith('stripe-node-retry-')) return `${method} ${url} key=${key}`;
  return method === 'POST' ? `${method} ${url} ${[...form].sort().map(([k, v]) => `${k}=${v}`).join('&')}` : `${method} ${url}`;
}

/** Two numbers in [0, 1) drawn from a hash of `text`: the same text, the same draws. */
export function drawsOf(text: string): [number, number] {
  const digest = createHash('sha256').update(text).digest();
  return [digest.readUInt32BE(0) / 4_294_967_296, digest.readUInt32BE(4) / 4_294_967_296];
}

/**
 * Starts a chaos proxy for the server at `target` on a free port of 127.0.0.1; `hangMs`: how long
 * a held connection is kept; `stable` rewrites what differs from one run of a seed to the next
 * (a test's unique account and customer ids, the identifiers' digests of them) out of a
 * request's identity.
 */
export async function startChaosProxy(target: string, hangMs: number, stable: (identity: string) => string = (identity) => identity): Promise<ChaosProxy> {
  const upstream = new URL(target);
  let rate = 0;
  let seed = 0;
  let inFlight = 0;
  let waiters: (() => void)[] = [];
  const seen = new Map<string, number>();
  const log: ChaosProxy['log'] = [];
  const done = () => {
    inFlight--;
    if (inFlight === 0) {
      const woken = waiters;
      waiters = [];
      for (const wake of woken) wake();
    }
  };
  const handle = (channel: string) => (req: IncomingMessage, res: ServerResponse) => {
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
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const method = req.method ?? 'GET';
      const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
      const identity = stable(requestIdentity(method, req.url ?? '/', req.headers, body.toString('utf8')));
      const counted = `${channel}|${identity}`;
      const occurrence = (seen.get(counted) ?? 0) + 1;
      seen.set(counted, occurrence);
      const only = onlyPaths.get(channel);
      const chance = only !== undefined && !only.test(path) ? 0 : (rates.get(channel) ?? rate);
      const [faulted, which] = drawsOf(`${seed}|${chance}|${counted}|${occurrence}`);
      const fault: ChaosFault = faulted < chance ? FAULTS[Math.floor(which * FAULTS.length)]! : 'pass';
      log.push({ channel, method, path, fault, identity: `${identity} #${occurrence}` });
      if (fault === 'refuse-429' || fault === 'refuse-5xx') {
        stripeError(res, fault === 'refuse-429' ? 429 : which * FAULTS.length - Math.floor(which * FAULTS.length) < 0.5 ? 500 : 503);
        return;
      }
      if (fault === 'hang-before') {
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
      forward.end(body);
    });
  };
  const servers = new Map<string, { server: Server; url: string }>();
  const rates = new Map<string, number>();
  const onlyPaths = new Map<string, RegExp>();
  const open = async (channel: string, channelRate?: number, paths?: RegExp): Promise<string> => {
    if (channelRate !== undefined) rates.set(channel, channelRate);
    if (paths !== undefined) onlyPaths.set(channel, paths);
    const known = servers.get(channel);
    if (known !== undefined) return known.url;
    const server = createServer(handle(channel));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    servers.set(channel, { server, url });
    return url;
  };
  const url = await open('');
  return {
    url,
    channel: open,
    setFaults(nextRate, nextSeed) {
      rate = nextRate;
      seed = nextSeed;
    },
    log,
    drained: () => (inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve))),
    close: async () => {
      await Promise.all(
        [...servers.values()].map(
          ({ server }) =>
            new Promise<void>((resolve) => {
              server.closeAllConnections();
              server.close(() => resolve());
            }),
        ),
      );
    },
  };
}
