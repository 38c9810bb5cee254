import { readFileSync } from 'node:fs';
import path from 'node:path';
import { readConfig } from '../../src/adapters/config';
import { readUsageApiConfig } from '../../src/adapters/usage-api-config';

// docs/configuration.md is checked against the code it describes: the code is the
// source of every default, the page must say the same and name every variable read.

const root = path.join(__dirname, '../..');
const page = readFileSync(path.join(root, 'docs/configuration.md'), 'utf8');

/** Rows `| \`VARIABLE\` | default | meaning |` of the page's section `## <title>`. */
function documented(title: string): { variable: string; defaultCell: string }[] {
  const section = page.split(/^## /m).find((part) => part.startsWith(title));
  if (section === undefined) throw new Error(`docs/configuration.md has no section "${title}"`);
  return [...section.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \| ([^|]*) \|/gm)].map((m) => ({ variable: m[1]!, defaultCell: m[2]!.trim() }));
}

/** The value of a default cell written as `value`; undefined for "(required)", "(none)" and the like. */
const literal = (cell: string): string | undefined => /^`([^`]*)`$/.exec(cell)?.[1];

const INGEST = { TALLY_TABLE: 'usage' };
const API = { TALLY_TABLE: 'usage', TALLY_JWT_SECRET: 'a-local-secret-of-at-least-32-bytes!!' };

describe('docs/configuration.md', () => {
  const ingestRows = documented('Ingest and the table');
  const apiRows = documented('Usage API');

  it.each(ingestRows.filter((row) => literal(row.defaultCell) !== undefined).map((row) => [row.variable, literal(row.defaultCell)!]))(
    'shows the default readConfig applies: %s=%s changes nothing',
    (variable, value) => {
      expect(readConfig({ ...INGEST, [variable]: value })).toEqual(readConfig(INGEST));
    },
  );

  it.each(ingestRows.filter((row) => /^`\d+`$/.test(row.defaultCell)).map((row) => [row.variable, Number(literal(row.defaultCell))]))(
    'shows a variable readConfig reads: %s other than %d changes the configuration',
    (variable, value) => {
      expect(readConfig({ ...INGEST, [variable]: String(value + 1) })).not.toEqual(readConfig(INGEST));
    },
  );

  it.each(apiRows.filter((row) => literal(row.defaultCell) !== undefined).map((row) => [row.variable, literal(row.defaultCell)!]))(
    'shows the default readUsageApiConfig applies: %s=%s changes nothing',
    (variable, value) => {
      const base = readUsageApiConfig(API);
      expect(readUsageApiConfig({ ...API, [variable]: value })).toEqual(base);
      expect(readUsageApiConfig({ ...API, [variable]: `not-${value}` })).not.toEqual(base);
    },
  );

  it('lists every variable the configuration code reads', () => {
    const read = new Set(
      ['src/adapters/config.ts', 'src/adapters/usage-api-config.ts'].flatMap((file) =>
        [...readFileSync(path.join(root, file), 'utf8').matchAll(/\b(TALLY_[A-Z0-9_]+|LOG_LEVEL)\b/g)].map((m) => m[1]!),
      ),
    );
    const listed = new Set([...ingestRows, ...apiRows].map((row) => row.variable));
    expect([...read].filter((variable) => !listed.has(variable)).sort()).toEqual([]);
    expect(listed.size).toBeGreaterThan(15);
  });
});
