import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLITE_TEMPLATE_DIR } from './helpers/embedded-store.js';

/** Initialises one PGlite cluster that embedded-store tests copy instead of running initdb each time. */
export default async function setup(): Promise<void> {
  if (existsSync(path.join(PGLITE_TEMPLATE_DIR, 'PG_VERSION'))) return;
  await mkdir(path.dirname(PGLITE_TEMPLATE_DIR), { recursive: true });
  const db = await PGlite.create(PGLITE_TEMPLATE_DIR);
  await db.close();
}
