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
  testTimeout: 60_000,
  maxWorkers: 2,
  verbose: false,
};
