'use strict';
// Jest runs CommonJS; a few dependencies ship ES modules only (hyparquet-writer and the
// hyparquet it builds on). esbuild turns them into CommonJS as Jest loads them.
const { transformSync } = require('esbuild');

module.exports = {
  process(source, filename) {
    const { code, map } = transformSync(source, { loader: 'js', format: 'cjs', target: 'node20', sourcemap: true, sourcefile: filename });
    return { code, map };
  },
};
