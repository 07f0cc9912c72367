import { describe, expect, it } from 'vitest';
import { extractRecords, nextPage } from '../../src/agent/session-list.js';

describe('extractRecords', () => {
  it('reads a list, one record, or a list wrapped in an object', () => {
    const record = { uuid: 's1', session_name: 'a', created_at: 17 };
    const expected = [{ uuid: 's1', sessionName: 'a', createdAt: '17' }];
    expect(extractRecords({ data: [record] }).records).toEqual(expected);
    expect(extractRecords({ data: record }).records).toEqual(expected);
    expect(extractRecords({ data: { sessions: [record] } }).records).toEqual(expected);
  });

  it('leaves out records whose id cannot go in a path, and reads an explicit empty success as none', () => {
    expect(extractRecords({ data: [{ uuid: '..' }, { uuid: 's2' }, { name: 'no id' }] }).records).toEqual([
      { uuid: 's2' },
    ]);
    expect(extractRecords({ status: true }).records).toEqual([]);
    expect(extractRecords({}).records).toBeUndefined();
    expect(extractRecords({ data: 'text' }).records).toBeUndefined();
  });
});

describe('nextPage', () => {
  it('follows the hints a body gives, and never a URL itself', () => {
    expect(nextPage([{ next_page: 3 }], 2)).toBe(3);
    expect(nextPage([{ next: 'https://elsewhere.example/session?page=4' }], 3)).toBe(4);
    expect(nextPage([{ has_more: true, page: 2 }], 2)).toBe(3);
    expect(nextPage([{ total_pages: 3, page: 2 }], 2)).toBe(3);
    expect(nextPage([{ total_pages: 3, page: 3 }], 3)).toBeUndefined();
    expect(nextPage([{ has_more: false }], 1)).toBeUndefined();
    expect(nextPage([{}], 1)).toBeUndefined();
  });
});
