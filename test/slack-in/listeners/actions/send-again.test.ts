import { describe, expect, it } from 'vitest';
import { jobKey } from '../../../../src/conversation/jobs.js';
import { parseJobKey } from '../../../../src/slack-in/listeners/actions/send-again.js';

describe("parseJobKey: a Send again button's value", () => {
  it('reads back the message job key the notice was given', () => {
    expect(parseJobKey(jobKey('T1', 'C1', '1700000000.000100', 'message'))).toEqual({
      teamId: 'T1',
      channelId: 'C1',
      ts: '1700000000.000100',
    });
  });

  it.each([
    [undefined],
    [''],
    [jobKey('T1', 'C1', '1700000000.000100', 'reset')],
    ['T1:C1:1700000000:message'],
    ['T1:C1:dm:message'],
    ['T1::1700000000.000100:message'],
    ['T1:C1:1700000000.000100:message:extra'],
    ['X:T1:C1:1700000000.000100:message'],
  ])('takes %j as no message of ours: the button is ignored', (value) => {
    expect(parseJobKey(value)).toBeUndefined();
  });
});
