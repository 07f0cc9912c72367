/**
 * Node's flags for the test processes that run PGlite: Vitest's workers and the bot or commands they start
 * in a child process. `--liftoff-only` keeps PGlite's WebAssembly on V8's baseline compiler: by default V8
 * also recompiles its hot functions with TurboFan in the background, which for a process that lives seconds
 * or runs one file after another costs more CPU than it saves (measured on 2 cores: the store contract suites
 * 31 -> 20 CPU-s, a bot process on the embedded store ~1.6 CPU-s less). It changes how fast the code runs,
 * not what it does; `npm start` and the bot's image run without it, and so does test/e2e/process.test.ts.
 */
export const TEST_NODE_FLAGS = ['--liftoff-only'];
