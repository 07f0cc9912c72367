import path from 'node:path';
import type { EnvReader } from './env-reader.js';
import type { StoreConfig } from './types.js';

export function readStoreConfig(reader: EnvReader): StoreConfig {
  const databaseUrl = reader.read('DATABASE_URL');
  // At least two: an installation's lock holds a connection while its row is read and written on another.
  const poolSize = reader.integer('DATABASE_POOL_SIZE', 10, 2, 1000);
  if (databaseUrl !== undefined) {
    // The value may hold a password: never echo it.
    if (!/^postgres(ql)?:\/\//.test(databaseUrl))
      reader.fail('DATABASE_URL', 'must be a postgres:// or postgresql:// URL');
    else if (!URL.canParse(databaseUrl))
      reader.fail(
        'DATABASE_URL',
        'is not a valid URL (percent-encode characters such as # @ / ? : in the user name and password)',
      );
    return { kind: 'postgres', databaseUrl, poolSize };
  }
  return { kind: 'embedded', dataDir: path.resolve(reader.read('DATA_DIR') ?? './data') };
}
