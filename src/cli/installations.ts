/** Entry point of `npm run installations`: re-encrypt the stored Slack tokens under the first key. */
import { parseArgs } from 'node:util';
import { ConfigError, loadDotEnv, loadInstallationsConfig } from '../config/index.js';
import { installationLock } from '../installations/installation-lock.js';
import {
  INSTALLATIONS_NAMESPACE,
  type InstallationRow,
  resealInstallations,
} from '../installations/installation-rows.js';
import { TokenCipher, TokenCipherError } from '../installations/token-cipher.js';
import { openDatabase } from '../store/database.js';
import { createSessionKeyv } from '../store/keyv.js';
import { migrate } from '../store/schema.js';

export const INSTALLATIONS_USAGE = `Usage: npm run installations -- reencrypt

  reencrypt   seal every stored Slack token under the first key of TOKEN_ENCRYPTION_KEYS. Rotating the key:
              put the new key first (keep the old one after it), restart the bot, run this, then drop the old key.`;

/** The usage error for these arguments, or undefined when they are `reencrypt`. */
function usageError(argv: string[]): string | undefined {
  let positionals: string[];
  try {
    ({ positionals } = parseArgs({ args: argv, options: {}, allowPositionals: true }));
  } catch (error) {
    // parseArgs' own first sentence names the argument ("Unknown option '--x'."); the rest is about `--`.
    return `${(error as Error).message.split(/(?<=\.) /)[0]}\n${INSTALLATIONS_USAGE}`;
  }
  return positionals.length === 1 && positionals[0] === 'reencrypt' ? undefined : INSTALLATIONS_USAGE;
}

async function main(): Promise<number> {
  const usage = usageError(process.argv.slice(2));
  if (usage !== undefined) {
    process.stderr.write(`${usage}\n`);
    return 2;
  }
  let config: ReturnType<typeof loadInstallationsConfig>;
  try {
    // The same settings as `npm start`, `.env` included.
    loadDotEnv();
    config = loadInstallationsConfig();
  } catch (error) {
    const message = error instanceof ConfigError ? error.lines.join('\n') : (error as Error).message;
    process.stderr.write(`${message}\n`);
    return 2;
  }
  const cipher = new TokenCipher(config.tokenKeys);
  const db = await openDatabase(config.store);
  try {
    await migrate(db);
    const keyv = createSessionKeyv<InstallationRow>(db, INSTALLATIONS_NAMESPACE);
    const { resealed, current } = await resealInstallations(keyv, installationLock(db), cipher);
    process.stdout.write(
      `re-encrypted ${resealed} installation(s) under key "${cipher.currentKeyId}"; ${current} already were\n`,
    );
    return 0;
  } catch (error) {
    if (!(error instanceof TokenCipherError)) throw error;
    process.stderr.write(
      `installations: ${error.message}; add the key it was sealed with to TOKEN_ENCRYPTION_KEYS\n`,
    );
    return 1;
  } finally {
    await db.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`installations: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
