import { type EnvReader, FALSE_WORDS, TRUE_WORDS } from './env-reader.js';
import type { AgentViewConfig, AgentViewMode, SuggestedPrompt } from './types.js';

export const MAX_SUGGESTED_PROMPTS = 4;
const DEFAULT_SUGGESTED_PROMPTS =
  'What can you help me with?|Summarize::Summarize the key points of what I paste next|Draft::Help me draft a short, friendly reply';
const DEFAULT_GREETING = 'Hi! Ask me anything: each conversation here gets its own thread with the agent.';

export function readAgentViewConfig(reader: EnvReader): AgentViewConfig {
  return {
    mode: readAgentViewMode(reader),
    suggestedPrompts: readSuggestedPrompts(reader),
    greeting: reader.read('AGENT_VIEW_GREETING') ?? DEFAULT_GREETING,
  };
}

function readAgentViewMode(reader: EnvReader): AgentViewMode {
  const raw = (reader.read('SLACK_AGENT_VIEW') ?? 'auto').toLowerCase();
  if (raw === 'auto') return 'auto';
  if (TRUE_WORDS.includes(raw)) return 'on';
  if (FALSE_WORDS.includes(raw)) return 'off';
  reader.fail('SLACK_AGENT_VIEW', `must be auto, true or false (got "${raw}")`);
  return 'auto';
}

/** `title::message` entries separated by `|`; an entry without `::` is its own title. */
function readSuggestedPrompts(reader: EnvReader): SuggestedPrompt[] {
  const prompts = (reader.read('SUGGESTED_PROMPTS') ?? DEFAULT_SUGGESTED_PROMPTS)
    .split('|')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      const [title = '', ...rest] = entry.split('::');
      const message = rest.length > 0 ? rest.join('::').trim() : title.trim();
      return { title: title.trim() || message, message };
    });
  if (prompts.length > MAX_SUGGESTED_PROMPTS) {
    reader.fail(
      'SUGGESTED_PROMPTS',
      `must list at most ${MAX_SUGGESTED_PROMPTS} prompts, as many as Slack shows (got ${prompts.length})`,
    );
  }
  if (prompts.some((prompt) => prompt.message === '')) {
    reader.fail('SUGGESTED_PROMPTS', 'must give each entry a message: "title::message|title::message"');
  }
  return prompts.slice(0, MAX_SUGGESTED_PROMPTS);
}
