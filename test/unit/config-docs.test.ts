import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { readConfig } from '../../src/adapters/config';
import { readUsageApiConfig } from '../../src/adapters/wiring/usage-api-config';
import { readStripeConfig } from '../../src/adapters/stripe/stripe-config';
import { readLocalSettings } from '../../src/local/lifecycle/local-settings';

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

  const stripeRows = documented('Stripe');
  const STRIPE = { TALLY_STRIPE_API_KEY: 'sk_test_abcdefgh12345678', TALLY_STRIPE_METERS: '{"requests":"cdn_requests"}' };

  it.each(stripeRows.filter((row) => literal(row.defaultCell) !== undefined).map((row) => [row.variable, literal(row.defaultCell)!]))(
    'shows the default readStripeConfig applies: %s=%s changes nothing',
    (variable, value) => {
      const base = readStripeConfig(STRIPE);
      expect(readStripeConfig({ ...STRIPE, [variable]: value })).toEqual(base);
      const other = /^\d+$/.test(value) ? String(Number(value) + 1) : value === 'webhook' ? 'invoice-item' : value === 'day' ? 'hour' : 'http://127.0.0.1:12111';
      expect(readStripeConfig({ ...STRIPE, [variable]: other })).not.toEqual(base);
    },
  );

  it('lists every variable the Stripe settings read, in its own section', () => {
    const read = new Set([...readFileSync(path.join(root, 'src/adapters/stripe/stripe-config.ts'), 'utf8').matchAll(/\b(TALLY_[A-Z0-9_]+)\b/g)].map((m) => m[1]!));
    const listed = new Set(stripeRows.map((row) => row.variable));
    expect([...read].sort()).toEqual([...listed].sort());
  });

  const localRows = documented('Local stack');

  it.each(localRows.filter((row) => literal(row.defaultCell) !== undefined).map((row) => [row.variable, literal(row.defaultCell)!]))(
    'shows the default the local stack applies: %s=%s changes nothing',
    (variable, value) => {
      expect(readLocalSettings({ [variable]: value })).toEqual(readLocalSettings({}));
    },
  );

  it("lists every variable the local stack's own settings read, in its own section", () => {
    const read = new Set(
      ['src/local/lifecycle/local-settings.ts', 'src/local/services/dynamodb-local.ts'].flatMap((file) => [...readFileSync(path.join(root, file), 'utf8').matchAll(/\b(TALLY_[A-Z0-9_]+)\b/g)].map((m) => m[1]!)),
    );
    const elsewhere = new Set([...ingestRows, ...apiRows, ...stripeRows].map((row) => row.variable));
    const listed = new Set(localRows.map((row) => row.variable));
    expect([...read].filter((variable) => !elsewhere.has(variable)).sort()).toEqual([...listed].sort());
  });

  it('lists every variable the configuration code reads', () => {
    const read = new Set(
      ['src/adapters/config.ts', 'src/adapters/wiring/usage-api-config.ts'].flatMap((file) =>
        [...readFileSync(path.join(root, file), 'utf8').matchAll(/\b(TALLY_[A-Z0-9_]+|LOG_LEVEL)\b/g)].map((m) => m[1]!),
      ),
    );
    const listed = new Set([...ingestRows, ...apiRows].map((row) => row.variable));
    expect([...read].filter((variable) => !listed.has(variable)).sort()).toEqual([]);
    expect(listed.size).toBeGreaterThan(15);
  });
});

describe('README.md and docs/', () => {
  const pages = ['README.md', ...readdirRecursive(path.join(root, 'docs')).map((file) => path.join('docs', file))];
  const slug = (heading: string) =>
    heading
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s-]/gu, '')
      .replace(/\s/g, '-');
  // A page's anchors: its headings, and the `<a id="...">` it sets by hand on a list item or a paragraph.
  const anchorsOf = (file: string) => {
    const text = readFileSync(path.join(root, file), 'utf8').replace(/```[\s\S]*?```/g, '');
    return new Set([...[...text.matchAll(/^#+ (.*)$/gm)].map((m) => slug(m[1]!)), ...[...text.matchAll(/<a id="([^"]+)"><\/a>/g)].map((m) => m[1]!)]);
  };

  it.each(pages)('%s links only to files and headings that exist', (page) => {
    const text = readFileSync(path.join(root, page), 'utf8').replace(/```[\s\S]*?```/g, '');
    const broken: string[] = [];
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      const [file, anchor] = target!.split('#') as [string, string | undefined];
      const resolved = file === '' ? page : path.normalize(path.join(path.dirname(page), file));
      if (!existsSync(path.join(root, resolved))) broken.push(target!);
      else if (anchor !== undefined && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor)) broken.push(target!);
    }
    expect(broken).toEqual([]);
  });

  it("uses files of the repository in the README's put and count examples, so that a reader can run them", () => {
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
    // The files an example names: its words before any comment that are no flag.
    const files = [...readme.matchAll(/^\$ npx tally (?:put|count) ([^#\n]*)/gm)].flatMap((m) => m[1]!.trim().split(/\s+/).filter((word) => !word.startsWith('-')));

    expect(files.length).toBeGreaterThanOrEqual(2);
    for (const file of files) expect([file, existsSync(path.join(root, file)) && !path.isAbsolute(file)]).toEqual([file, true]);
  });

  it('keeps the README short, linking every docs page', () => {
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
    expect(readme.trimEnd().split('\n').length).toBeLessThanOrEqual(250);
    expect(readme).toMatch(/^npm start\b/m);
    expect(readme).toMatch(/^npm test\b/m);
    const linked = pages.filter((page) => page.startsWith('docs') && !page.includes('runbooks'));
    for (const page of linked) expect(readme).toContain(`](${page})`);
  });
});

function readdirRecursive(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? readdirRecursive(path.join(directory, entry.name)).map((file) => path.join(entry.name, file)) : [entry.name],
  );
}
