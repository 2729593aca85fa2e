/**
 * Writing a query's output into a `Writable` (`pipeJson`, `pipeArrow`): backpressure, the whole
 * call's `timeoutMS`, and what happens when the destination fails, closes or is ended elsewhere.
 * @module
 */
import type { Writable } from 'node:stream'
import { MongoInvalidArgumentError, MongoOperationTimeoutError } from './errors.js'
import { describe } from './validate.js'

/** Destinations a pipe is writing into: a second one would interleave its bytes. */
const receiving = new WeakSet<object>()

/**
 * Throws MongoInvalidArgumentError unless `destination` is an open Writable no other pipe writes
 * into: called before the query, so a bad destination sends nothing to the server.
 */
export function checkDestination(method: string, destination: NodeJS.WritableStream): void {
  if (
    typeof destination?.write !== 'function' ||
    typeof destination.end !== 'function' ||
    typeof destination.on !== 'function'
  ) {
    throw new MongoInvalidArgumentError(`${method} needs a Writable stream, got ${describe(destination)}`)
  }
  const writable = destination as NodeJS.WritableStream & Partial<Writable>
  if (writable.writableEnded || writable.destroyed) {
    throw new MongoInvalidArgumentError(`${method} needs an open Writable: the destination is already ended`)
  }
  if (receiving.has(destination)) {
    throw new MongoInvalidArgumentError(`${method}: another pipe is already writing into this destination`)
  }
}

/**
 * Writes `parts` into `destination` (checked by `checkDestination`), then ends it. `parts` reads
 * its first batch before yielding its first part: a query the server refuses rejects with the
 * destination untouched. Once writing, if the destination errors, closes or is ended elsewhere, or
 * `timeoutMS` passes (backpressure waits included), the promise rejects at once, whatever read is
 * in flight; `close` kills the cursor and the destination is destroyed (a partial output must not
 * pass for a complete one).
 */
export async function pipeParts(
  destination: NodeJS.WritableStream,
  parts: AsyncGenerator<Buffer>,
  close: () => Promise<void>,
  /** The whole call's limit: the operation's `timeoutMS`, else the client's. */
  timeoutMS: number | undefined,
): Promise<void> {
  const writable = destination as NodeJS.WritableStream & Partial<Writable>
  receiving.add(destination)
  const watch = watchDestination(writable, timeoutMS)
  let wrote = false
  try {
    for (;;) {
      const { value, done } = await watch.race(parts.next())
      if (done) break
      wrote = true
      if (!writable.write(value)) await watch.race(watch.drained())
    }
    watch.ending = true
    // Listened for before end(): a writable-like destination may emit 'finish' inside end().
    const finished = watch.finished()
    writable.end()
    await watch.race(finished)
  } catch (error) {
    // Not awaited: a read in flight (a getMore the server is slow to answer, or never answers)
    // would hold the cursor's close(), and with it the pipe, after its destination went away.
    void close().catch(() => {})
    // Destroyed without the error, which would be an unhandled 'error' event on `destination`.
    if (wrote) writable.destroy?.()
    throw error
  } finally {
    watch.dispose()
    receiving.delete(destination)
  }
}

/**
 * What ends a pipe early: the destination failing, closing, or ended by someone else, and
 * `timeoutMS` (the whole call, waits for a slow reader included). `race` rejects as soon as one
 * happens, whatever the raced promise is waiting for.
 */
function watchDestination(destination: NodeJS.WritableStream & Partial<Writable>, timeoutMS?: number) {
  // Not `Promise.race([promise, stopped])` with one long-lived `stopped` promise: each race leaves a
  // reaction on `stopped` that holds the race's own promise, and with it the value it settled with,
  // until `stopped` settles, that is for the whole pipe: every part written stayed in memory (a 1M
  // document pipeArrow peaked at 700 MB, all of its output). Each race has a stop promise of its
  // own, forgotten once it settles.
  let stoppedWith: { error: unknown } | undefined
  const waiting = new Set<(error: unknown) => void>()
  const stop = (error: unknown) => {
    if (stoppedWith) return
    stoppedWith = { error }
    for (const reject of waiting) reject(error)
  }
  const state = { ending: false }
  const onError = (error: unknown) => stop(error)
  const onClose = () => stop(prematureClose())
  const onFinish = () => {
    if (!state.ending) stop(prematureClose('the destination was ended by other code'))
  }
  destination.on('error', onError)
  destination.on('close', onClose)
  destination.on('finish', onFinish)
  const timer =
    timeoutMS && timeoutMS > 0
      ? setTimeout(
          () =>
            stop(new MongoOperationTimeoutError(`operation timed out: timeoutMS of ${timeoutMS} ms expired`)),
          timeoutMS,
        )
      : undefined
  const waits: (() => void)[] = []
  const once = (event: string) =>
    new Promise<void>((resolve) => {
      destination.once(event, resolve)
      waits.push(() => destination.removeListener(event, resolve))
    })
  return Object.assign(state, {
    race: <T>(promise: Promise<T>): Promise<T> => {
      let rejectStop!: (error: unknown) => void
      const stopping = new Promise<never>((_resolve, reject) => (rejectStop = reject))
      stopping.catch(() => {})
      if (stoppedWith) rejectStop(stoppedWith.error)
      else waiting.add(rejectStop)
      // A promise settled first still wins over a stop in the same turn, as with one `stopped`.
      const raced = Promise.race([promise, stopping])
      const forget = () => waiting.delete(rejectStop)
      raced.then(forget, forget)
      return raced
    },
    drained: () => once('drain'),
    finished: () => (destination.writableFinished ? Promise.resolve() : once('finish')),
    dispose() {
      clearTimeout(timer)
      destination.removeListener('error', onError)
      destination.removeListener('close', onClose)
      destination.removeListener('finish', onFinish)
      for (const remove of waits) remove()
    },
  })
}

/** Node's error for a stream that closed before the pipe ended (what `pipeline` rejects with). */
function prematureClose(message = 'Premature close'): Error {
  return Object.assign(new Error(message), { code: 'ERR_STREAM_PREMATURE_CLOSE' })
}
