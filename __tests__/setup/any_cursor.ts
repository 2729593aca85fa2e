// What the cursor tests use of a find or aggregate cursor, the official driver's or rumongo's: the
// oracle runs the same steps on its own cursor.
import type { EventEmitter } from 'node:events'
import type { Document } from 'bson'

export type AnyCursor = EventEmitter & {
  next(): Promise<Document | null>
  tryNext(): Promise<Document | null>
  hasNext(): Promise<boolean>
  toArray(): Promise<Document[]>
  close(): Promise<void>
  rewind(): void
  readBufferedDocuments(count?: number): Document[]
  bufferedCount(): number
  map(transform: (document: Document) => unknown): AnyCursor
  stream(): AsyncIterable<Document>
  closed: boolean
  killed: boolean
  id: { isZero(): boolean } | undefined
} & AsyncIterable<Document>
