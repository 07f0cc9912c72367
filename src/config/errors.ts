export interface ConfigProblem {
  variable: string;
  problem: string;
}

/** Thrown for missing or invalid settings; `problems` holds one line per variable. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly ConfigProblem[]) {
    super(problems.map(({ variable, problem }) => `${variable} ${problem}`).join('\n'));
    this.name = 'ConfigError';
  }

  /** One line per problem, as printed at start-up. */
  get lines(): string[] {
    return this.problems.map(({ variable, problem }) => `Configuration error: ${variable} ${problem}`);
  }
}

/** A start-up failure an operator fixes in the configuration; the message is one line naming what to fix. */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}
