// The BSON corpus (fixtures/bson-corpus, CC BY-NC-SA 3.0 US: see its README) as test cases, for every
// decoder that takes BSON: one place that reads the files, so a new decode path (JSON output, ...)
// runs the same cases by iterating `corpusValidCases()` and `corpusDecodeErrors()`.
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const CORPUS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'bson-corpus')

interface CorpusFile {
  description: string
  bson_type: string
  valid?: { description: string; canonical_bson: string; degenerate_bson?: string }[]
  decodeErrors?: { description: string; bson: string }[]
}

/** A document the corpus says decodes: its `canonical_bson`, or a `degenerate_bson` variant. */
export interface CorpusValidCase {
  /** `file: description (canonical|degenerate)`, unique. */
  name: string
  file: string
  kind: 'canonical' | 'degenerate'
  bson: Buffer
}

/** How far a broken document can travel before the breakage shows. */
export type CorpusFraming =
  /** Its length prefix matches its bytes: it can sit in a batch or a server reply like any document. */
  | 'document'
  /**
   * Its length prefix is wrong (the breakage is the top-level framing itself): only a whole-buffer
   * decoder can be handed it; inside a batch it breaks the batch's framing instead.
   */
  | 'top-level'

/** Bytes the corpus says must fail to decode. */
export interface CorpusDecodeError {
  name: string
  file: string
  bson: Buffer
  framing: CorpusFraming
}

function readCorpus(): [string, CorpusFile][] {
  return readdirSync(CORPUS_DIR)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => [file.replace(/\.json$/, ''), JSON.parse(readFileSync(join(CORPUS_DIR, file), 'utf8'))])
}

/** Every `valid` case: canonical BSON, then its degenerate forms. */
export function corpusValidCases(): CorpusValidCase[] {
  const cases: CorpusValidCase[] = []
  for (const [file, corpus] of readCorpus()) {
    for (const valid of corpus.valid ?? []) {
      const name = `${file}: ${valid.description}`
      cases.push({ name: `${name} (canonical)`, file, kind: 'canonical', bson: hex(valid.canonical_bson) })
      if (valid.degenerate_bson) {
        cases.push({
          name: `${name} (degenerate)`,
          file,
          kind: 'degenerate',
          bson: hex(valid.degenerate_bson),
        })
      }
    }
  }
  return cases
}

/** Every `decodeErrors` case, with the framing that decides which paths can carry it. */
export function corpusDecodeErrors(): CorpusDecodeError[] {
  return readCorpus().flatMap(([file, corpus]) =>
    (corpus.decodeErrors ?? []).map(({ description, bson }) => {
      const bytes = hex(bson)
      const framing: CorpusFraming =
        bytes.length >= 5 && bytes.readInt32LE(0) === bytes.length ? 'document' : 'top-level'
      return { name: `${file}: ${description}`, file, bson: bytes, framing }
    }),
  )
}

function hex(text: string): Buffer {
  return Buffer.from(text, 'hex')
}

/**
 * `{ batch: [document, ...] }` around raw document bytes, as a server reply's `firstBatch` holds them
 * (the input of the native `encodeTestBatch`). The bytes are copied as they are, even broken ones.
 */
export function rawBatch(documents: readonly Uint8Array[]): Buffer {
  const elements = documents.map((document, index) =>
    Buffer.concat([Buffer.from([0x03]), Buffer.from(`${index}\0`), document]),
  )
  const array = Buffer.concat([Buffer.alloc(4), ...elements, Buffer.from([0])])
  array.writeInt32LE(array.length, 0)
  const reply = Buffer.concat([
    Buffer.alloc(4),
    Buffer.from([0x04]),
    Buffer.from('batch\0'),
    array,
    Buffer.from([0]),
  ])
  reply.writeInt32LE(reply.length, 0)
  return reply
}
