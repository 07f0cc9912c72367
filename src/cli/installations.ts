/** Entry point of `npm run installations`: re-encrypt the stored Slack tokens under the first key. */
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

async function main(): Promise<number> {
  const [action, ...rest] = process.argv.slice(2);
  if (action !== 'reencrypt' || rest.length > 0) {
    process.stderr.write(`${INSTALLATIONS_USAGE}\n`);
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
