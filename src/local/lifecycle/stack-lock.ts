import { linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { StackAlreadyRunningError } from '../../domain/errors';

/** Where `npm start` holds its lock, relative to the project root: one stack per `.tally` folder. */
export const STACK_LOCK_FILE = join('.tally', 'lock.json');

/** What the lock file says about the stack holding it. */
export interface StackLockHolder {
  readonly pid: number;
  /** The holder's start time as the kernel counts it (Linux), so a recycled pid is not taken for the holder. */
  readonly processStart?: string;
  readonly startedAt: string;
  /** Set once the stack is ready. */
  readonly dashboard?: string;
}

export interface StackLock {
  readonly path: string;
  /** Adds what a second start should print (the dashboard URL) once the stack is ready. */
  update(details: { dashboard: string }): void;
  /** Removes the lock file if it is still this process's. */
  release(): void;
}

/**
 * Takes the lock on a `.tally` folder or throws {@link StackAlreadyRunningError} naming
 * the live holder. A lock left by a process that is gone (killed, crashed, or a pid now
 * used by another program) is taken over.
 *
 * The file appears with its whole content in one step (written aside, then hard-linked
 * into place, which fails if the file exists), so a reader never sees half a lock; a
 * stale lock is renamed away before the new one is linked, and put back if it turns out
 * another start took it over first.
 */
export function acquireStackLock(path: string, pid = process.pid): StackLock {
  mkdirSync(dirname(path), { recursive: true });
  const mine: StackLockHolder = { pid, ...optional('processStart', procStat(pid)?.start), startedAt: new Date().toISOString() };
  let holder = mine;
  const write = (target: string, content: StackLockHolder) => writeFileSync(target, `${JSON.stringify(content)}\n`);
  const aside = `${path}.${pid}`;
  for (let attempt = 0; attempt < 5; attempt++) {
    write(aside, mine);
    try {
      linkSync(aside, path);
      return {
        path,
        update(details) {
          holder = { ...holder, ...details };
          write(aside, holder);
          renameSync(aside, path);
        },
        release() {
          if (readHolder(path)?.pid === pid) unlinkSync(path);
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      unlinkQuietly(aside);
    }
    const raw = readQuietly(path);
    if (raw === undefined) continue;
    const other = parseHolder(raw);
    if (other !== undefined && isAlive(other)) throw new StackAlreadyRunningError(other.pid, other.dashboard);
    const stale = `${path}.stale.${pid}`;
    try {
      renameSync(path, stale);
    } catch {
      continue;
    }
    if (readQuietly(stale) !== raw) {
      // Another start replaced the stale lock between our read and our rename: give its lock back.
      try {
        linkSync(stale, path);
      } catch {
        // a third start holds it now; the next attempt meets that one
      }
    }
    unlinkQuietly(stale);
  }
  throw new Error(`could not take the lock ${path}: other starts keep changing it`);
}

/** The holder named by a lock file, or undefined when there is none (or it cannot be read). */
export function readHolder(path: string): StackLockHolder | undefined {
  const raw = readQuietly(path);
  return raw === undefined ? undefined : parseHolder(raw);
}

/**
 * Whether the lock's holder still runs: its pid exists and, where the kernel tells
 * (Linux's /proc), it is not a zombie (killed, not yet reaped by its parent) and
 * started when the holder did.
 */
export function isAlive(holder: StackLockHolder): boolean {
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const stat = procStat(holder.pid);
  if (stat === undefined) return true;
  if (stat.state === 'Z' || stat.state === 'X') return false;
  return holder.processStart === undefined || stat.start === holder.processStart;
}

function parseHolder(raw: string): StackLockHolder | undefined {
  try {
    const holder = JSON.parse(raw) as StackLockHolder;
    return Number.isInteger(holder.pid) && holder.pid > 0 ? holder : undefined;
  } catch {
    return undefined;
  }
}

/** Fields 3 (state) and 22 (start, in clock ticks after boot) of /proc/<pid>/stat; undefined where there is no /proc. */
function procStat(pid: number): { state: string; start: string } | undefined {
  const stat = readQuietly(`/proc/${pid}/stat`);
  if (stat === undefined) return undefined;
  // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0] ?? '', start: fields[19] ?? '' };
}

function readQuietly(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

function optional<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, V>);
}
