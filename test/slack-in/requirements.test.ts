import { describe, expect, it } from 'vitest';
import {
  AGENT_VIEW_SCOPES,
  missingScopes,
  REQUIRED_BOT_SCOPES,
  scopePurpose,
} from '../../src/slack-in/requirements.js';

const required = Object.keys(REQUIRED_BOT_SCOPES);
const agentView = Object.keys(AGENT_VIEW_SCOPES);

describe('the bot scopes', () => {
  it('finds nothing missing when every scope is granted', () => {
    expect(missingScopes([...required, ...agentView], true)).toEqual([]);
    expect(missingScopes(required)).toEqual([]);
  });

  it('names each scope the token lacks, in the order of the list', () => {
    expect(missingScopes(required.filter((scope) => scope !== 'chat:write' && scope !== 'commands'))).toEqual(
      ['chat:write', 'commands'],
    );
  });

  it('asks for the agent-view scopes only with the agent view', () => {
    expect(missingScopes(required, false)).toEqual([]);
    expect(missingScopes(required, true)).toEqual(agentView);
  });

  it('cannot tell when Slack did not report the granted scopes', () => {
    expect(missingScopes(undefined, true)).toBeUndefined();
  });

  it('says what each scope is for', () => {
    expect(scopePurpose('chat:write')).toBe('posting replies');
    expect(scopePurpose('assistant:write')).toMatch(/Messages-tab/);
    expect(scopePurpose('admin')).toBeUndefined();
  });
});
