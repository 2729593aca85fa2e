/**
 * Calls served one after another, in call order: each starts once the calls made before it have
 * settled (resolved or rejected). A cursor's reads go through one, so that two reads at once never
 * take the same batch or start two fetches over the same server batches.
 * @module
 */
export class InTurn {
  /** The last call still waiting: the next one starts once it settles. */
  #waiting: Promise<unknown> | null = null

  /** Whether no call is waiting: one made now starts at once. */
  get idle(): boolean {
    return this.#waiting === null
  }

  /** Runs `call` once the calls made before it settled; resolves or rejects as it does. */
  run<R>(call: () => Promise<R>): Promise<R> {
    const result = this.#waiting === null ? call() : this.#waiting.then(call, call)
    this.#waiting = result
    const settled = () => {
      if (this.#waiting === result) this.#waiting = null
    }
    result.then(settled, settled)
    return result
  }
}
