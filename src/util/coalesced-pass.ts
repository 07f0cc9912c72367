/**
 * Runs one pass of some background work at a time. A kick while a pass is under way asks for exactly one
 * more pass after it, so bursts of kicks never pile up passes nor miss work that arrived mid-pass.
 */
export class CoalescedPass {
  private current: Promise<void> | undefined;
  private again = false;

  constructor(
    private readonly pass: () => Promise<void>,
    private readonly onError: (error: unknown) => void,
  ) {}

  kick(): void {
    if (this.current) {
      this.again = true;
      return;
    }
    this.current = this.pass()
      .catch(this.onError)
      .finally(() => {
        this.current = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Resolves once the pass in progress (if any) has ended. */
  async settled(): Promise<void> {
    await this.current;
  }
}
