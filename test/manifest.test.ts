import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../src/config.js';
import { HANDLED_EVENTS } from '../src/delivery/intake.js';
import { RESET_SHORTCUT_CALLBACK_ID } from '../src/slack/commands.js';
import { REQUIRED_BOT_SCOPES } from '../src/slack/requirements.js';

interface Manifest {
  features: {
    app_home?: { messages_tab_enabled?: boolean; messages_tab_read_only_enabled?: boolean };
    slash_commands?: { command: string }[];
    shortcuts?: { type: string; callback_id: string }[];
  };
  oauth_config: { scopes: { bot: string[] } };
  settings: {
    event_subscriptions: { bot_events: string[] };
    interactivity?: { is_enabled: boolean };
    socket_mode_enabled?: boolean;
  };
}

const manifestText = readFileSync('manifest.yml', 'utf8');
const manifest = parse(manifestText) as Manifest;

/** A `message` listener needs one subscription per conversation type it should hear. */
function subscriptionsFor(event: string): string[] {
  return event === 'message' ? ['message.channels', 'message.groups', 'message.im', 'message.mpim'] : [event];
}

describe('manifest.yml', () => {
  it('subscribes to exactly the events the bot handles', () => {
    const needed = HANDLED_EVENTS.flatMap(subscriptionsFor).sort();
    expect([...manifest.settings.event_subscriptions.bot_events].sort()).toEqual(needed);
  });

  it('requests every scope the bot needs', () => {
    const granted = new Set(manifest.oauth_config.scopes.bot);
    const missing = Object.keys(REQUIRED_BOT_SCOPES).filter((scope) => !granted.has(scope));
    expect(missing).toEqual([]);
  });

  it('declares the slash command and the reset shortcut the code registers, with interactivity on', () => {
    const defaults = loadConfig({
      SLACK_BOT_TOKEN: 'xoxb-x',
      SLACK_SIGNING_SECRET: 'x',
      AGENT_BASE_URL: 'http://x/v1',
      AGENT_API_KEY: 'x',
      AGENT_ID: 'x',
    });
    expect(manifest.features.slash_commands?.map((c) => c.command)).toEqual([defaults.slashCommand]);
    expect(manifest.features.shortcuts).toEqual([
      expect.objectContaining({ type: 'message', callback_id: RESET_SHORTCUT_CALLBACK_ID }),
    ]);
    expect(manifest.settings.interactivity?.is_enabled).toBe(true);
    expect(manifest.features.app_home).toMatchObject({
      messages_tab_enabled: true,
      messages_tab_read_only_enabled: false,
    });
    expect(manifest.settings.socket_mode_enabled).toBe(true);
  });

  // The schema is Slack's, kept in the workspace's shared folder rather than in this repository.
  const schemaPath = path.resolve('..', 'shared', 'slack', 'manifest.schema.1.0.0.json');
  it.runIf(existsSync(schemaPath))("validates against Slack's manifest schema", () => {
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats.default(ajv);
    const validate = ajv.compile(JSON.parse(readFileSync(schemaPath, 'utf8')) as object);
    const valid = validate(manifest);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });
});
