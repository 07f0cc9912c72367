import type { App } from '@slack/bolt';
import { type FeedbackDeps, register as registerFeedback } from './feedback.js';
import { register as registerSendAgain, type SendAgainDeps } from './send-again.js';

export type ActionListenerDeps = FeedbackDeps & SendAgainDeps;

/** Buttons on the bot's messages: feedback under answers, and Send again on a lost answer's notice. */
export function registerActions(app: App, deps: ActionListenerDeps): void {
  registerFeedback(app, deps);
  registerSendAgain(app, deps);
}
