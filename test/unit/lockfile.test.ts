import { readFileSync } from 'node:fs';
import { join } from 'node:path';

interface LockEntry {
  readonly optionalDependencies?: Record<string, string>;
}

/**
 * `npm ci` refuses a lock file that names an optional dependency it has no entry for,
 * and a lock written on one platform through a registry mirror that serves only that
 * platform's native builds drops the others: CI would then stop before any test.
 */
describe('package-lock.json', () => {
  it('has an entry for every optional dependency of every package it lists', () => {
    const lock = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
    const missing: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      for (const name of Object.keys(entry.optionalDependencies ?? {})) {
        const nested = `${path === '' ? '' : `${path}/`}node_modules/${name}`;
        if (!(nested in lock.packages) && !(`node_modules/${name}` in lock.packages)) missing.push(`${path || '(root)'} -> ${name}`);
      }
    }

    expect(missing).toEqual([]);
  });
});
