import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { startDynamoDbLocal } from '../../src/local/services/dynamodb-local';

// A DynamoDB Local that is slow to start (Java on a CPU-starved machine) is stood in for
// by a `java` on PATH that never answers (a shell script that sleeps). On its port either
// nothing listens, or this test listens and never replies. The start must give up at the
// deadline it was given, stop the process and say what it waited for.

const folders: string[] = [];
afterAll(() => folders.forEach((folder) => rmSync(folder, { recursive: true, force: true })));

/** A folder holding an executable `java` that records its pid and sleeps. */
function fakeJava(): { bin: string; pidFile: string } {
  const bin = mkdtempSync(join(tmpdir(), 'tally-fake-java-'));
  folders.push(bin);
  const pidFile = join(bin, 'pid');
  writeFileSync(join(bin, 'java'), `#!/bin/sh\necho $$ > '${pidFile}'\nexec sleep 600\n`);
  chmodSync(join(bin, 'java'), 0o755);
  return { bin, pidFile };
}

/** A port where connections are accepted and never answered. */
async function silentPort(): Promise<{ port: number; close(): void }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      sockets.forEach((socket) => socket.destroy());
      server.close();
    },
  };
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('starting DynamoDB Local', () => {
  const path = process.env.PATH;
  afterEach(() => {
    process.env.PATH = path;
  });

  it.each(['nothing listens', 'a listener never answers'] as const)(
    'gives up at its deadline when DynamoDB Local does not answer (%s), stops Java and names what it waited for',
    async (behaviour) => {
      const java = fakeJava();
      process.env.PATH = `${java.bin}${delimiter}${path}`;
      const silent = behaviour === 'a listener never answers' ? await silentPort() : undefined;

      const started = Date.now();
      const failure = await startDynamoDbLocal({ startSeconds: 3, ...(silent === undefined ? {} : { port: silent.port }) }).then(
        () => new Error('started'),
        (error: Error) => error,
      );
      const took = Date.now() - started;
      silent?.close();

      expect(failure.message).toMatch(/^DynamoDB Local did not answer within 3 s: \d+ ListTables request\(s\) \(Limit 1\) to http:\/\/127\.0\.0\.1:\d+ over \d+\.\d s, none answered; /);
      // Where nothing listens, each request is refused; on a busy machine the last may still be on its way at the deadline.
      expect(failure.message).toMatch(
        silent === undefined ? /none answered; (the last was still unanswered at the deadline; )?the last to fail: .*connect ECONNREFUSED/ : /none answered; the last was still unanswered at the deadline\.$/m,
      );
      // The stand-in ran, not the real DynamoDB Local (whose banner would name its port).
      expect(failure.message).toContain('Java printed nothing.');
      expect(failure.message).toContain('set TALLY_DYNAMODB_START_SECONDS (seconds, now 3) to wait longer');
      // The deadline holds even while a request hangs; past it, only stopping Java.
      expect(took).toBeGreaterThanOrEqual(3_000);
      expect(took).toBeLessThan(30_000);
      // On a starved machine the start can give up before the watchdog even ran `java`.
      const pid = existsSync(java.pidFile) ? Number(readFileSync(java.pidFile, 'utf8')) : undefined;
      expect(pid === undefined ? 'never started' : isRunning(pid)).not.toBe(true);
    },
    60_000,
  );
});
