import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../src/config/index.js';
import { RESET_SHORTCUT_CALLBACK_ID } from '../src/slack-in/listeners/commands/index.js';
import { HANDLED_EVENTS, ORG_APP_EVENTS } from '../src/slack-in/listeners/events/index.js';
import { REQUIRED_BOT_SCOPES } from '../src/slack-in/requirements.js';

interface Manifest {
  features: {
    app_home?: { messages_tab_enabled?: boolean; messages_tab_read_only_enabled?: boolean };
    agent_view?: { agent_description?: string; suggested_prompts?: { title: string; message: string }[] };
    slash_commands?: { command: string; url?: string }[];
    shortcuts?: { type: string; callback_id: string }[];
  };
  oauth_config: { scopes: { bot: string[] } };
  settings: {
    event_subscriptions: { bot_events: string[]; request_url?: string };
    interactivity?: { is_enabled: boolean; request_url?: string };
    socket_mode_enabled?: boolean;
    org_deploy_enabled?: boolean;
  };
}

/** Events only the agent experience (features.agent_view) subscribes to. */
const AGENT_VIEW_EVENTS = new Set(['app_home_opened', 'agent_session_stopped', 'app_context_changed']);

const defaults = loadConfig({
  SLACK_BOT_TOKEN: 'xoxb-x',
  SLACK_SIGNING_SECRET: 'x',
  AGENT_BASE_URL: 'http://x/v1',
  AGENT_API_KEY: 'x',
  AGENT_ID: 'x',
});

/** A `message` listener needs one subscription per conversation type it should hear. */
function subscriptionsFor(event: string): string[] {
  return event === 'message' ? ['message.channels', 'message.groups', 'message.im', 'message.mpim'] : [event];
}

function readManifest(file: string): Manifest {
  return parse(readFileSync(file, 'utf8')) as Manifest;
}

describe.each([
  { file: 'manifest.yml', agentView: true },
  { file: 'manifest.http.yml', agentView: true },
  { file: 'manifest.distributed.yml', agentView: true },
  { file: 'manifest.classic.yml', agentView: false },
])('$file', ({ file, agentView }) => {
  const manifest = readManifest(file);
  const httpMode = file === 'manifest.http.yml' || file === 'manifest.distributed.yml';

  it('subscribes to exactly the events the bot handles', () => {
    // Only an org-ready app (org_deploy_enabled) is sent the org-wide install's events.
    const orgReady = manifest.settings.org_deploy_enabled === true;
    const needed = HANDLED_EVENTS.filter((event) => agentView || !AGENT_VIEW_EVENTS.has(event))
      .filter((event) => orgReady || !ORG_APP_EVENTS.has(event))
      .flatMap(subscriptionsFor)
      .sort();
    expect([...manifest.settings.event_subscriptions.bot_events].sort()).toEqual(needed);
  });

  it('requests every scope the bot needs', () => {
    const granted = new Set(manifest.oauth_config.scopes.bot);
    const missing = Object.keys(REQUIRED_BOT_SCOPES).filter((scope) => !granted.has(scope));
    expect(missing).toEqual([]);
  });

  it('declares the slash command and the reset shortcut the code registers, with interactivity on', () => {
    expect(manifest.features.slash_commands?.map((c) => c.command)).toEqual([defaults.slashCommand]);
    expect(manifest.features.shortcuts).toEqual([
      expect.objectContaining({ type: 'message', callback_id: RESET_SHORTCUT_CALLBACK_ID }),
    ]);
    expect(manifest.settings.interactivity?.is_enabled).toBe(true);
    expect(manifest.features.app_home).toMatchObject({
      messages_tab_enabled: true,
      messages_tab_read_only_enabled: false,
    });
    expect(manifest.settings.socket_mode_enabled).toBe(!httpMode);
  });

  it(
    agentView
      ? 'declares the agent experience as the bot runs it by default'
      : 'leaves the agent experience out',
    () => {
      // auto: an app from manifest.yml runs the agent experience from its first message; one from the classic
      // manifest learns from Slack's not_agent_app (the Messages tab's prompts, or its first session call).
      expect(defaults.agentView.mode).toBe('auto');
      if (!agentView) {
        expect(manifest.features.agent_view).toBeUndefined();
        return;
      }
      expect(manifest.oauth_config.scopes.bot).toContain('assistant:write');
      expect(manifest.features.agent_view?.agent_description?.length ?? 0).toBeGreaterThan(0);
      expect(manifest.features.agent_view?.agent_description?.length ?? 0).toBeLessThanOrEqual(300);
      // Every agent-view conversation is a thread, where Slack runs no app's slash command
      // (docs.slack.dev/interactivity/implementing-slash-commands): the way to start over is the word.
      expect(manifest.features.agent_view?.agent_description).not.toMatch(/\/agent/);
      expect(manifest.features.agent_view?.agent_description).toMatch(/say reset/);
      // Slack shows these until the bot sets its own: the same ones, so nothing changes under the user's eyes.
      expect(manifest.features.agent_view?.suggested_prompts).toEqual(defaults.agentView.suggestedPrompts);
    },
  );

  // Slack's own manifest schema (github.com/slackapi/manifest-schema), kept with the tests so this always runs.
  const schemaPath = path.resolve('test', 'fixtures', 'slack', 'manifest.schema.1.0.0.json');
  it("validates against Slack's manifest schema", () => {
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats.default(ajv);
    const validate = ajv.compile(JSON.parse(readFileSync(schemaPath, 'utf8')) as object);
    const valid = validate(manifest);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });
});

describe('manifest.http.yml', () => {
  const placeholder = 'https://YOUR-HOST/slack/events';
  const http = readManifest('manifest.http.yml');

  it('sends events, interactivity and the slash command to the one placeholder a user replaces', () => {
    expect(http.settings.event_subscriptions.request_url).toBe(placeholder);
    expect(http.settings.interactivity?.request_url).toBe(placeholder);
    expect(http.features.slash_commands?.map((command) => command.url)).toEqual([placeholder]);
    // Every URL Slack needs in HTTP mode is one of these three; a fourth would be one a user could miss.
    expect(readFileSync('manifest.http.yml', 'utf8').match(/YOUR-HOST/g)).toHaveLength(3 + 1);
  });

  it('is otherwise the same app as manifest.yml', () => {
    const socket = readManifest('manifest.yml');
    const { request_url: _events, ...events } = http.settings.event_subscriptions;
    const { request_url: _interactivity, ...interactivity } = http.settings.interactivity ?? {
      is_enabled: false,
    };
    const commands = http.features.slash_commands?.map(({ url: _url, ...command }) => command);
    expect({
      ...http,
      features: { ...http.features, slash_commands: commands },
      settings: { ...http.settings, event_subscriptions: events, interactivity, socket_mode_enabled: true },
    }).toEqual(socket);
  });
});

describe('manifest.classic.yml in HTTP mode', () => {
  const url = 'https://your-host.example.com/slack/events';
  // As its header says: socket_mode_enabled false, and the three commented URLs uncommented.
  const text = readFileSync('manifest.classic.yml', 'utf8');
  const uncommented = text
    .replace(/^(\s*)# ((?:request_)?url: )/gm, '$1$2')
    .replace(/^(\s*)socket_mode_enabled: true$/m, '$1socket_mode_enabled: false');
  const http = parse(uncommented) as Manifest;

  it('has the three URLs Slack needs, each nothing but the URL', () => {
    expect(text.match(/^\s*# (?:request_)?url: /gm)).toHaveLength(3);
    expect(http.settings.event_subscriptions.request_url).toBe(url);
    expect(http.settings.interactivity?.request_url).toBe(url);
    expect(http.features.slash_commands?.map((command) => command.url)).toEqual([url]);
    expect(http.settings.socket_mode_enabled).toBe(false);
  });

  it("validates against Slack's manifest schema", () => {
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats.default(ajv);
    const schemaPath = path.resolve('test', 'fixtures', 'slack', 'manifest.schema.1.0.0.json');
    const validate = ajv.compile(JSON.parse(readFileSync(schemaPath, 'utf8')) as object);
    const valid = validate(http);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });
});

describe('manifest.distributed.yml', () => {
  const text = readFileSync('manifest.distributed.yml', 'utf8');
  const distributed = parse(text) as Manifest & {
    display_information: { long_description?: string };
    oauth_config: { redirect_urls?: string[] };
    settings: { org_deploy_enabled?: boolean; token_rotation_enabled?: boolean };
  };

  it('sends installers back to the redirect URL the bot serves, on the host the other URLs use', () => {
    expect(distributed.oauth_config.redirect_urls).toEqual(['https://YOUR-HOST/slack/oauth_redirect']);
    // Events, interactivity, the slash command and the redirect URL, and the header naming the placeholder.
    expect(text.match(/YOUR-HOST/g)).toHaveLength(4 + 1);
  });

  it('can be installed org-wide on Enterprise Grid, with expiring tokens the bridge refreshes', () => {
    expect(distributed.settings.org_deploy_enabled).toBe(true);
    expect(distributed.settings.token_rotation_enabled).toBe(true);
    expect(distributed.settings.socket_mode_enabled).toBe(false);
  });

  it('tells people that the answers are generated by AI and can be wrong, where Slack shows the app', () => {
    // Slack Marketplace guidelines, "AI components": a disclaimer in the long description (and landing page).
    expect(distributed.display_information.long_description).toMatch(/generated by AI and can be inaccurate/);
    expect(distributed.features.agent_view?.agent_description).toMatch(/generated by AI and can be wrong/);
  });

  it('is otherwise the same app as manifest.http.yml', () => {
    const http = readManifest('manifest.http.yml') as unknown as typeof distributed;
    const { long_description: _long, ...display } = distributed.display_information;
    const { redirect_urls: _redirects, ...oauth } = distributed.oauth_config;
    const agentView = {
      ...distributed.features.agent_view,
      agent_description: http.features.agent_view?.agent_description,
    };
    expect({
      ...distributed,
      display_information: display,
      features: { ...distributed.features, agent_view: agentView },
      oauth_config: oauth,
      settings: {
        ...distributed.settings,
        // The org-wide install's own events, which only an org-ready app is sent.
        event_subscriptions: {
          ...distributed.settings.event_subscriptions,
          bot_events: distributed.settings.event_subscriptions.bot_events.filter(
            (event) => !ORG_APP_EVENTS.has(event),
          ),
        },
        org_deploy_enabled: false,
        token_rotation_enabled: false,
      },
    }).toEqual(http);
  });
});
