/**
 * The cursors of a client that its `close()` closes first, as the official driver's
 * `activeCursors`: a read after it throws `MongoCursorExhaustedError` at once, even with documents
 * buffered, and the cursor emits `close`. The native client kills their server cursors (its
 * `close()` kills every cursor it opened); this only tells the JS cursors, which hold what was
 * buffered and would otherwise return it.
 */

/** A cursor open on the server, told when its client closes. */
export interface ClientCursor {
  /** The client closed: the server cursor is killed by the native client's close. */
  closedByClient(): void
}

export class ActiveCursors {
  /**
   * Held weakly: a cursor dropped without `close()` is still collected (and its server cursor
   * killed by the native cursor's finalizer); the registry then forgets it.
   */
  readonly #cursors = new Set<WeakRef<ClientCursor>>()
  readonly #collected = new FinalizationRegistry<WeakRef<ClientCursor>>((ref) => this.#cursors.delete(ref))

  /** Tracks `cursor` until the returned function is called (when it closes or ends). */
  add(cursor: ClientCursor): () => void {
    const ref = new WeakRef(cursor)
    this.#cursors.add(ref)
    this.#collected.register(cursor, ref, ref)
    return () => {
      this.#cursors.delete(ref)
      this.#collected.unregister(ref)
    }
  }

  /** The client closes: every cursor tracked is told, and forgotten. */
  closeAll(): void {
    const refs = [...this.#cursors]
    this.#cursors.clear()
    for (const ref of refs) {
      this.#collected.unregister(ref)
      ref.deref()?.closedByClient()
    }
  }
}
