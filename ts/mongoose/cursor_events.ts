/**
 * The official driver's cursors are event emitters that emit `'close'` once they are cleaned up:
 * closed, failed, or when the batch that says the server has no more (cursor id 0) arrives, once per
 * run of the query (`rewind()` arms it again). Mongoose hands that cursor to the application (`QueryCursor#cursor`), which may wait
 * for the event (Mongoose's gh-14966 test does after `destroy()`). rumongo's cursors are not
 * emitters: the plugin gives each cursor it returns to Mongoose the same event.
 * @module
 */
import { EventEmitter } from 'node:events'

/** The EventEmitter methods the official cursor has, delegated to one emitter per cursor. */
const EMITTER_METHODS = [
  'on',
  'addListener',
  'once',
  'prependListener',
  'prependOnceListener',
  'off',
  'removeListener',
  'removeAllListeners',
  'emit',
  'listeners',
  'rawListeners',
  'listenerCount',
  'eventNames',
  'setMaxListeners',
  'getMaxListeners',
] as const

/** The reads after which the cursor may have reached its end or failed. */
const READS = ['next', 'tryNext', 'hasNext', 'toArray', 'nextBatch', 'forEach'] as const

interface CursorLike {
  readonly closed: boolean
  readonly id: { isZero(): boolean } | undefined
  close(...args: unknown[]): Promise<void>
  rewind(): unknown
  [method: string]: unknown
}

/** Gives `cursor` the official cursor's `'close'` event (own properties; returns the cursor). */
export function withCloseEvent<T extends object>(cursor: T): T {
  const target = cursor as unknown as CursorLike
  const events = new EventEmitter()
  let emitted = false
  const emitClose = () => {
    if (emitted) return
    emitted = true
    events.emit('close')
  }
  // The cursor id turns 0 when the reader takes the server's last batch, where the official cursor
  // (which reads no batch ahead) cleans up.
  const ended = () => target.closed || target.id?.isZero() === true
  const define = (name: string, value: unknown) =>
    Object.defineProperty(target, name, { value, writable: true, configurable: true })

  for (const name of EMITTER_METHODS) {
    const method = events[name] as (...args: unknown[]) => unknown
    define(name, (...args: unknown[]) => {
      const result = method.apply(events, args)
      // The chaining methods return the emitter: the caller gets the cursor, as from the official one.
      return result === events ? target : result
    })
  }
  for (const name of READS) {
    const read = target[name]
    if (typeof read !== 'function') continue
    define(name, (...args: unknown[]) =>
      (read.apply(target, args) as Promise<unknown>).then(
        (value) => {
          if (ended()) emitClose()
          return value
        },
        (error: unknown) => {
          if (ended()) emitClose()
          throw error
        },
      ),
    )
  }
  const close = target.close
  define('close', (...args: unknown[]) => close.apply(target, args).finally(emitClose))
  const rewind = target.rewind as (...args: unknown[]) => unknown
  define('rewind', (...args: unknown[]) => {
    emitted = false
    return rewind.apply(target, args)
  })
  return cursor
}
