import { describe, expect, it } from 'vitest';
import { PreparedStatements } from '../../src/store/prepared-statements.js';

const refusal = (code: string) => Object.assign(new Error(`refused (${code})`), { code });

describe('prepared statements', () => {
  it('names each text by itself, the same every time', () => {
    const statements = new PreparedStatements();
    const first = statements.queryFor('SELECT $1::int', [1]);
    expect(first).toEqual({
      name: expect.stringMatching(/^s[0-9a-f]{24}$/),
      text: 'SELECT $1::int',
      values: [1],
    });
    expect(statements.queryFor('SELECT $1::int', [2]).name).toBe(first.name);
    expect(statements.queryFor('SELECT $1::text', ['a']).name).not.toBe(first.name);
    // Another process names the text alike: clients of one pooler that meet on a server connection agree.
    expect(new PreparedStatements().queryFor('SELECT $1::int', [3]).name).toBe(first.name);
  });

  it('names no more than 200 texts, and keeps naming those it named', () => {
    const statements = new PreparedStatements();
    for (let i = 0; i < 200; i++) expect(statements.queryFor(`SELECT ${i}`, undefined).name).toBeDefined();
    expect(statements.queryFor('SELECT 200', undefined).name).toBeUndefined();
    expect(statements.queryFor('SELECT 7', undefined).name).toBeDefined();
  });

  it.each(['26000', '42P05', '0A000'])(
    'names nothing after the connection refused a named statement with %s',
    (code) => {
      const statements = new PreparedStatements();
      const query = statements.queryFor('SELECT 1', undefined);
      expect(statements.refusedAsPrepared(query, refusal(code))).toBe(true);
      expect(statements.queryFor('SELECT 1', undefined).name).toBeUndefined();
      expect(statements.queryFor('SELECT 2', undefined).name).toBeUndefined();
    },
  );

  it('never names again a text PostgreSQL cannot prepare, and keeps naming the others', () => {
    const statements = new PreparedStatements();
    const several = statements.queryFor('CREATE TABLE t (id int); CREATE INDEX ON t (id)', undefined);
    expect(statements.refusedAsPrepared(several, refusal('42601'))).toBe(true);
    expect(statements.queryFor(several.text, undefined).name).toBeUndefined();
    expect(statements.queryFor('SELECT 1', undefined).name).toBeDefined();
  });

  it('runs nothing again for any other failure, or for a statement sent unnamed', () => {
    const statements = new PreparedStatements();
    const query = statements.queryFor('INSERT INTO t VALUES (1)', undefined);
    // A unique violation, a timeout, a lost connection: the statement may have run.
    expect(statements.refusedAsPrepared(query, refusal('23505'))).toBe(false);
    expect(statements.refusedAsPrepared(query, new Error('Connection terminated unexpectedly'))).toBe(false);
    expect(statements.refusedAsPrepared({ text: 'SELECT 1' }, refusal('26000'))).toBe(false);
    expect(statements.queryFor('SELECT 1', undefined).name).toBeDefined();
  });
});
