/**
 * The channel of the workspace `npm run fakes` serves, where `npm run fakes:mention` mentions the bot: Slack
 * answers channel_not_found for a channel the workspace does not have.
 */
export const LOCAL_CHANNEL = { id: 'C0LOCAL', name: 'general' } as const;
