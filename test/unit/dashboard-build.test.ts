import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = path.join(__dirname, '..', '..');

/** Every file under `dir`, relative to it, with `/` separators. */
function filesUnder(dir: string, prefix = ''): string[] {
  return readdirSync(path.join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const relative = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    return entry.isDirectory() ? filesUnder(dir, relative) : [relative];
  });
}

/** The relative module specifiers of an ES module (`import ... from './x.js'`, `import './x.js'`). */
function relativeImports(source: string): string[] {
  return [...source.matchAll(/\b(?:from|import)\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map((match) => match[1]!);
}

describe('dashboard build (scripts/build-dashboard.mjs)', () => {
  let built: string;

  beforeAll(() => {
    built = mkdtempSync(path.join(tmpdir(), 'tally-dashboard-build-'));
    execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build-dashboard.mjs'), built]);
  });

  afterAll(() => rmSync(built, { recursive: true, force: true }));

  it('ships the page, its modules, the compiled lib and uPlot, and no TypeScript', () => {
    const files = filesUnder(built);

    expect(files).toEqual(expect.arrayContaining(['index.html', 'main.js', 'config.js', 'styles.css', 'lib/selection.js', 'lib/format.js', 'vendor/uPlot.iife.min.js', 'vendor/uPlot.LICENSE']));
    expect(files.filter((file) => file.endsWith('.ts'))).toEqual([]);
  });

  it('resolves every script, style and module import the page loads', () => {
    const html = readFileSync(path.join(built, 'index.html'), 'utf8');
    const referenced = [...html.matchAll(/\b(?:src|href)="([^"#:]+)"/g)].map((match) => match[1]!);
    const missing: string[] = referenced.filter((file) => !existsSync(path.join(built, file)));
    for (const file of filesUnder(built).filter((name) => name.endsWith('.js') && !name.startsWith('vendor/'))) {
      for (const specifier of relativeImports(readFileSync(path.join(built, file), 'utf8'))) {
        const target = path.join(built, path.dirname(file), specifier);
        if (!existsSync(target)) missing.push(`${file} -> ${specifier}`);
      }
    }

    expect(referenced).toEqual(expect.arrayContaining(['main.js', 'config.js', 'vendor/uPlot.iife.min.js']));
    expect(html).toContain('<script type="module" src="main.js"></script>');
    expect(missing).toEqual([]);
  });

  it('compiles the domain rules into browser modules that run as they are', () => {
    const selection = pathToFileURL(path.join(built, 'lib', 'selection.js')).href;
    const script = `
      import { checkSelection, MAX_RANGE_DAYS } from ${JSON.stringify(selection)};
      const base = { preset: '30d', from: '', to: '', granularity: 'day', today: '2026-03-15' };
      console.log(JSON.stringify({
        dots: checkSelection({ ...base, account: 'a..b' }).ok,
        plain: checkSelection({ ...base, account: 'acme' }).ok,
        max: MAX_RANGE_DAYS,
      }));`;

    const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });

    expect(JSON.parse(output)).toEqual({ dots: false, plain: true, max: 366 });
    expect(readFileSync(path.join(built, 'lib', 'selection.js'), 'utf8')).toContain('// src/domain/account-id.ts');
  });
});
