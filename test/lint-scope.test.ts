import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

describe('the lint step', () => {
  it('checks the project, not a stray file someone left at the top of the working tree', () => {
    const stray = `stray-${randomBytes(4).toString('hex')}`;
    const files = [`${stray}.ts`, `${stray}.json`];
    // Both would fail the check if it were read: an explicit any, and JSON that does not parse.
    writeFileSync(files[0] as string, 'export const notes: any = 1\n');
    writeFileSync(files[1] as string, '{"a": 1,,}\n');
    try {
      // As `npm run lint` runs it: npm puts node_modules/.bin first on PATH (npx would look it up first).
      const result = spawnSync('biome', ['check', '--error-on-warnings', '.'], {
        encoding: 'utf8',
        timeout: 60_000,
        env: {
          ...process.env,
          PATH: `${path.resolve('node_modules/.bin')}${path.delimiter}${process.env.PATH}`,
        },
      });
      // It ran, and read neither.
      expect(`${result.stdout}${result.stderr}`).toMatch(/Checked \d+ files/);
      expect(`${result.stdout}${result.stderr}`).not.toContain(stray);
    } finally {
      for (const file of files) rmSync(file, { force: true });
    }
  });
});
