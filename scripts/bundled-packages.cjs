// Which packages scripts/build.mjs bundles into dist/ rather than leaving in node_modules.
//
// Every package stays external (the DynamoDB Local jar and the emulator resolve from their own
// packages) except the ES-module-only Parquet reader and its Snappy codec: Node loads an ES
// module from CommonJS through its ES module loader, which a fresh `tally count` of a Parquet
// file paid for: about a seventh of its CPU on a 100-row file (0.150 -> 0.130 s, issue 34).
// Bundled, esbuild turns them into CommonJS with the rest.
'use strict';

/** Package names (or name/subpath) bundled into dist/. */
const BUNDLED_PACKAGES = /^(hyparquet|hysnappy)(\/|$)/;

/** An esbuild plugin: every bare import external, but {@link BUNDLED_PACKAGES}. */
const externalButBundled = {
  name: 'external-but-bundled',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => (BUNDLED_PACKAGES.test(args.path) ? undefined : { path: args.path, external: true }));
  },
};

module.exports = { BUNDLED_PACKAGES, externalButBundled };
