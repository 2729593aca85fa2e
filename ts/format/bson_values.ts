/**
 * Where BSON values end: the one home of their lengths on the JS side, for the lazy documents'
 * reader and the depth check of what rumongo serializes (`ts/bson.ts`).
 * @module
 */
import { BSONError } from 'bson'

export function int32At(bytes: Uint8Array, at: number): number {
  return bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)
}

/** The offset just past the NUL ending the C string at `at`. */
export function skipCString(bytes: Uint8Array, at: number, end: number): number {
  while (at < end && bytes[at] !== 0) at++
  if (at >= end) throw new BSONError('Bad BSON Document: illegal CString')
  return at + 1
}

/** The offset just past a value of BSON `type` starting at `at`. */
export function skipValue(bytes: Uint8Array, type: number, at: number, end: number, keyAt: number): number {
  switch (type) {
    case 0x01: // double
    case 0x09: // date
    case 0x11: // timestamp
    case 0x12: // int64
      return at + 8
    case 0x02: // string
    case 0x0d: // code
    case 0x0e: // symbol
      return at + 4 + int32At(bytes, at)
    case 0x03: // document
    case 0x04: // array
    case 0x0f: // code with scope
      return at + int32At(bytes, at)
    case 0x05: // binary: length, subtype, bytes
      return at + 5 + int32At(bytes, at)
    case 0x06: // undefined
    case 0x0a: // null
    case 0x7f: // max key
    case 0xff: // min key
      return at
    case 0x07: // ObjectId
      return at + 12
    case 0x08: // boolean
      return at + 1
    case 0x0b: // regex: pattern, options
      return skipCString(bytes, skipCString(bytes, at, end), end)
    case 0x0c: // DBPointer: namespace string, ObjectId
      return at + 4 + int32At(bytes, at) + 12
    case 0x10: // int32
      return at + 4
    case 0x13: // decimal128
      return at + 16
    default: {
      const name = utf8Slice(bytes, keyAt, skipCString(bytes, keyAt, end) - 1)
      throw new BSONError(`Detected unknown BSON type ${type.toString(16)} for fieldname "${name}"`)
    }
  }
}

export const bufferUtf8Slice = (
  Buffer.prototype as unknown as { utf8Slice(start: number, end: number): string }
).utf8Slice

export function utf8Slice(bytes: Uint8Array, start: number, end: number): string {
  return bufferUtf8Slice.call(bytes, start, end)
}
