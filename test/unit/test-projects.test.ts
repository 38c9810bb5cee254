import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_LIMIT_MS } from '../support/time-limits';

const ROOT = join(__dirname, '..', '..');
// jest.config.js is CommonJS: it is read as data here, the way jest reads it.
const config = require(join(ROOT, 'jest.config.js')) as { projects: { displayName: string; roots: string[]; globalSetup?: string }[] };
const packageJson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };

describe('tests you can pick', () => {
  const unit = config.projects.find((project) => project.displayName === 'unit')!;

  it('runs test/unit with no global setup, so no emulator starts for a unit run', () => {
    expect(unit.roots).toEqual(['<rootDir>/test/unit']);
    expect(unit.globalSetup).toBeUndefined();
    expect(packageJson.scripts['test:unit']).toMatch(/jest --selectProjects unit$/);
  });

  it('keeps every test folder in exactly one project, so npm test still runs them all', () => {
    const folders = readdirSync(join(ROOT, 'test'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && entry.name !== 'support')
      .map((entry) => `<rootDir>/test/${entry.name}`);

    expect(config.projects.flatMap((project) => project.roots).sort()).toEqual(folders.sort());
    expect(packageJson.scripts.test).toMatch(/&& jest$/);
  });

  it('limits every test and hook not named in time-limits.ts to its default', () => {
    const { testTimeout } = require(join(ROOT, 'jest.config.js')) as { testTimeout: number };
    expect(testTimeout).toBe(DEFAULT_LIMIT_MS);
  });

  it('uses nothing from the running stack in a unit test', () => {
    const files = readdirSync(join(ROOT, 'test', 'unit')).filter((name) => name.endsWith('.ts') && name !== 'test-projects.test.ts');
    const needsStack = files.filter((name) => /testStackInfo|testClients|testIngestDeps|TALLY_TEST_STACK/.test(readFileSync(join(ROOT, 'test', 'unit', name), 'utf8')));

    expect(needsStack).toEqual([]);
  });
});
