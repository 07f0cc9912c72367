import { describe, expect, it } from 'vitest';
import { asStoreError, StoreError } from '../../src/store/store-error.js';

const URL = 'postgres://bridge:s3cret-password@db.internal:5432/bridge';

describe('asStoreError', () => {
  it('names DATABASE_URL, its host and database, never its user or password, when connecting fails', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { code: 'ECONNREFUSED' });
    const error = asStoreError(refused, URL);
    expect(error).toBeInstanceOf(StoreError);
    expect(error.message).toBe(
      'cannot connect to the database in DATABASE_URL (db.internal:5432/bridge): connection refused (ECONNREFUSED); check DATABASE_URL and that PostgreSQL is running and reachable',
    );
    expect(error.message).not.toContain('s3cret');
    expect(error.message).not.toContain('bridge:');
    expect(error.cause).toBe(refused);
  });

  it.each([
    ['28P01', 'password authentication failed (28P01)'],
    ['3D000', 'the database does not exist (3D000)'],
    ['ENOTFOUND', 'host not found (ENOTFOUND)'],
  ])('says what %s means in a few words', (code, words) => {
    expect(asStoreError(Object.assign(new Error('x'), { code }), URL).message).toContain(`: ${words};`);
  });

  it("reads pg's connection timeout as a timeout", () => {
    const error = asStoreError(new Error('timeout exceeded when trying to connect'), URL);
    expect(error.message).toContain(': connection timed out;');
  });

  it('reports any other failure as a failed query, and keeps a StoreError as it is', () => {
    const error = asStoreError(Object.assign(new Error('deadlock detected'), { code: '40P01' }), URL);
    expect(error.message).toMatch(/^store query failed: /);
    expect(error.message).toContain('deadlock detected');
    expect(asStoreError(error, URL)).toBe(error);
  });

  it('names no setting for the embedded store', () => {
    const refused = Object.assign(new Error('refused'), { code: 'ECONNREFUSED' });
    expect(asStoreError(refused).message).toMatch(/^store query failed: /);
  });
});
