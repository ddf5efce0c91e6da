export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': '<rootDir>/test/strip-types-transform.cjs' },
  moduleFileExtensions: ['ts', 'js', 'cjs', 'mjs', 'json'],
  testMatch: ['<rootDir>/db/tests/**/*.test.ts', '<rootDir>/server/**/*.test.ts', '<rootDir>/tasks/**/*.test.ts', '<rootDir>/test/**/*.test.ts'],
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
  reporters: ['default', '<rootDir>/test/summary-reporter.cjs'],
  maxWorkers: 2,
  testTimeout: 60000,
};
