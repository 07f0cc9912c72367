/** The `error` a WebClient call was refused with, and Slack's detail lines (`response_metadata.messages`). */
export async function refusal(call: Promise<unknown>): Promise<{ error: unknown; messages: unknown }> {
  const error: unknown = await call.then(
    () => {
      throw new Error('expected the call to be refused');
    },
    (e: unknown) => e,
  );
  const data = (error as { data?: { error?: unknown; response_metadata?: { messages?: unknown } } }).data;
  return { error: data?.error, messages: data?.response_metadata?.messages };
}
