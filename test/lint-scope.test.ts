import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

describe('the lint step', () => {
  it('checks the project, not a stray file someone left at the top of the working tree', () => {
    const stray = `stray-${randomBytes(4).toString('hex')}`;
    const files = [`${stray}.ts`, `${stray}.json`];
    // Both would fail the check if it were read: an explicit any, and JSON that does not parse.
    writeFileSync(files[0] as string, 'export const notes: any = 1\n');
    writeFileSync(files[1] as string, '{"a": 1,,}\n');
    try {
      // As `npm run lint` runs it.
      const result = spawnSync('npx', ['biome', 'check', '--error-on-warnings', '.'], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(`${result.stdout}${result.stderr}`).not.toContain(stray);
    } finally {
      for (const file of files) rmSync(file, { force: true });
    }
  });
});
