/**
 * `work`'s outcome if it settles within `ms`, else undefined: the caller goes on with what it has, and the
 * work goes on unheard (a rejection after the bound is swallowed, never an unhandled one). The timer does
 * not keep the process alive.
 */
export async function within<T>(work: Promise<T>, ms: number): Promise<{ value: T } | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, ms, undefined);
    timer.unref();
  });
  work.catch(() => {});
  try {
    return await Promise.race([work.then((value) => ({ value })), late]);
  } finally {
    clearTimeout(timer);
  }
}
