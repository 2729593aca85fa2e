import { configDefaults, defineConfig } from 'vitest/config'

// __tests__/heavy/ (slow, memory-bound tests) runs only with `npm run test:heavy`.
const heavy = process.env.RUMONGO_HEAVY_TESTS === '1'

export default defineConfig({
  test: {
    include: [heavy ? '__tests__/heavy/**/*.test.ts' : '__tests__/**/*.test.ts'],
    exclude: [...configDefaults.exclude, ...(heavy ? [] : ['__tests__/heavy/**'])],
    typecheck: { enabled: true, include: ['__tests__/**/*.test-d.ts'], tsconfig: '__tests__/tsconfig.json' },
    globalSetup: ['__tests__/setup/global.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // The embedded server is one SQLite process: test files share it one at a time.
    fileParallelism: false,
    // Load the built package as Node loads it for users (no transform), so its CommonJS build and
    // the official driver share one copy of `bson`.
    server: { deps: { external: [/\/dist\//] } },
  },
})
