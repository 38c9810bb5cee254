/**
 * Two projects: `unit` needs no emulator; `stack` (integration, deploy, browser, chaos)
 * shares one DynamoDB Local and SQS/S3 emulator, started by its global setup. Jest runs
 * a project's global setup only when a test of that project is selected, so
 * `npm run test:unit` (or `npx jest test/unit/x.test.ts`) starts nothing.
 */
const shared = {
  testEnvironment: 'node',
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
    // ES-module-only dependencies (the Parquet writer), turned into CommonJS for Jest.
    '/node_modules/(hyparquet|hyparquet-writer|hyparquet-compressors|hysnappy)/.+\\.js$': '<rootDir>/test/support/esm-transform.js',
  },
  transformIgnorePatterns: ['/node_modules/(?!(hyparquet|hyparquet-writer|hyparquet-compressors|hysnappy)/)'],
  setupFilesAfterEnv: ['<rootDir>/test/support/after-tests.ts'],
};

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    { ...shared, displayName: 'unit', roots: ['<rootDir>/test/unit'] },
    {
      ...shared,
      displayName: 'stack',
      roots: ['<rootDir>/test/integration', '<rootDir>/test/deploy', '<rootDir>/test/browser', '<rootDir>/test/chaos'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
  ],
  // DEFAULT_LIMIT_MS in test/support/time-limits.ts, which says where it comes from
  // (test-projects.test.ts checks they agree): ten times what a test without a limit of its
  // own takes, so a busy machine slows it down without failing it. The slow hooks and tests
  // take their limits from there too.
  testTimeout: 120_000,
  // The 2 cores: most stack tests wait on DynamoDB Local, queues and child processes, so two
  // workers overlap those waits (the files take about 1,200 s one after another, 618 s on
  // two workers in the lead's run); more would only add CPU-bound work to a full machine.
  maxWorkers: 2,
  verbose: false,
};
