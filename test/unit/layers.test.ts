import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const ROOT = join(__dirname, '..', '..');

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|js|mjs)$/.test(entry.name) ? [path] : [];
  });
}

/** Every module a file imports or requires (static and dynamic), relative ones resolved to repo paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const specifiers = [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm)].map((match) => match[1]!);
  return specifiers.map((specifier) => (specifier.startsWith('.') ? relative(ROOT, resolve(ROOT, file, '..', specifier)) : specifier));
}

/** Files of `dir` importing a module that `forbidden` matches, as `file -> module`. */
function violations(dir: string, forbidden: (module: string) => boolean): string[] {
  return sourceFiles(dir).flatMap((file) => importsOf(file).filter(forbidden).map((module) => `${file} -> ${module}`));
}

/** The folders of `dir` (itself included) whose own files, not their subfolders', number more than `limit`. */
function crowdedFolders(dir: string, limit: number): string[] {
  const entries = readdirSync(join(ROOT, dir), { withFileTypes: true });
  const files = entries.filter((entry) => entry.isFile()).length;
  const below = entries.filter((entry) => entry.isDirectory()).flatMap((entry) => crowdedFolders(join(dir, entry.name), limit));
  return files > limit ? [`${dir}: ${files} files`, ...below] : below;
}

/** Drops a `.ts`/`.js`/`.mjs` ending, so a file and the specifiers that name it compare equal. */
function moduleOf(path: string): string {
  return path.replace(/\.(ts|js|mjs)$/, '');
}

/**
 * The import circles among the files of `dirs`, each as `a -> b -> ... -> a` (type-only
 * imports count: a circle of types still ties the modules into one that cannot be read,
 * moved or tested alone). Depth-first: each group of modules tied by circles shows at least one.
 */
function importCircles(dirs: readonly string[]): string[] {
  const files = new Map(dirs.flatMap(sourceFiles).map((file) => [moduleOf(file), file]));
  const state = new Map<string, 'open' | 'done'>();
  const circles: string[] = [];
  const visit = (module: string, path: string[]): void => {
    state.set(module, 'open');
    for (const next of new Set(importsOf(files.get(module)!).map(moduleOf))) {
      if (!files.has(next)) continue;
      if (state.get(next) === 'open') circles.push([...path.slice(path.indexOf(next)), module, next].join(' -> '));
      else if (!state.has(next)) visit(next, [...path, module]);
    }
    state.set(module, 'done');
  };
  for (const module of files.keys()) if (!state.has(module)) visit(module, []);
  return circles;
}

/**
 * Known exceptions, each with the work that removes it. When that work lands the test
 * says so (the exception no longer matches anything), so the list cannot go stale.
 */
const KNOWN = new Set<string>([]);

describe('layers', () => {
  it('keeps src/adapters free of the local demo stack (src/local)', () => {
    expect(violations('src/adapters', (module) => module === 'src/local' || module.startsWith('src/local/'))).toEqual([]);
  });

  it('keeps src/domain free of the AWS SDK and of stream, zlib and file I/O', () => {
    const io = /^(@aws-sdk\/|@smithy\/|aws-lambda$|(node:)?(stream|zlib|fs|fs\/promises|net|http|https|child_process)$)/;
    const found = violations('src/domain', (module) => io.test(module));

    expect(found.filter((entry) => !KNOWN.has(entry))).toEqual([]);
    expect([...KNOWN].filter((entry) => !found.includes(entry))).toEqual([]);
  });

  it('keeps src/domain and src/app from importing adapters, the CLI or the local stack', () => {
    const outward = (module: string) => /^src\/(adapters|cli|local)(\/|$)/.test(module);

    expect([...violations('src/domain', outward), ...violations('src/app', outward)]).toEqual([]);
  });

  it('keeps src/domain from importing src/app (ports point inwards)', () => {
    expect(violations('src/domain', (module) => /^src\/app(\/|$)/.test(module))).toEqual([]);
  });

  it('has no import circles in src or bench', () => {
    expect(importCircles(['src', 'bench'])).toEqual([]);
  });

  it('keeps every folder of src at 20 files or fewer (a capability is found by its folder: see each README.md)', () => {
    expect(crowdedFolders('src', 20)).toEqual([]);
  });

  it('keeps test-only code out of src (nothing in src imports test/)', () => {
    expect(violations('src', (module) => /^test(\/|$)/.test(module))).toEqual([]);
  });
});
