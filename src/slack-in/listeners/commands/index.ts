import type { App } from '@slack/bolt';
import { type ResetShortcutDeps, register as registerResetShortcut } from './reset-shortcut.js';
import { register as registerSlashCommand, type SlashCommandDeps } from './slash-command.js';

export { RESET_SHORTCUT_CALLBACK_ID } from './reset-shortcut.js';
export { usageText } from './slash-command.js';

export type CommandListenerDeps = SlashCommandDeps & ResetShortcutDeps;

/** The slash command and the "Reset conversation" message shortcut. Every answer is ephemeral. */
export function registerCommands(app: App, deps: CommandListenerDeps): void {
  registerSlashCommand(app, deps);
  registerResetShortcut(app, deps);
}
