//! The field index of lazy documents (`findLazy`, `ts/format/lazy.ts`): where each top-level element of
//! each document of a batch starts, and which documents share their keys (a shape), so JS finds a
//! field without walking the document and without building an index per document.

use std::collections::HashMap;

use crate::{
    error::{Error, Result},
    raw::walk_elements,
};

/// Indexes `count` documents stored back to back in `documents`. Per document, in order:
/// `[start, shape, element count, offset of each element's type byte...]`, offsets counted from
/// the start of `documents`. Shapes are numbered per batch in order of first appearance: documents
/// with the same keys in the same order share a number.
pub(crate) fn index_documents(documents: &[u8], count: usize) -> Result<Vec<u32>> {
    // Every offset fits in a u32 once the whole batch does.
    u32::try_from(documents.len()).map_err(|_| Error::InvalidResponse("a batch over 4 GiB"))?;
    let mut index = Vec::with_capacity(count * 8);
    let mut shapes: HashMap<Vec<u8>, u32> = HashMap::new();
    // The last document's keys (each followed by NUL) and shape: consecutive documents usually
    // share one, so keys are compared in place and copied only when they differ.
    let mut last_keys: Vec<u8> = Vec::new();
    let mut last_shape = None;
    let mut keys = Vec::new();
    let mut start = 0;
    for _ in 0..count {
        let length = documents
            .get(start..start + 4)
            .and_then(|prefix| usize::try_from(i32::from_le_bytes(prefix.try_into().ok()?)).ok())
            .filter(|&length| length >= 5 && start + length <= documents.len())
            .ok_or(Error::MalformedBson("invalid document length"))?;
        let document = &documents[start..start + length];
        index.push(start as u32);
        let header_at = index.len();
        index.extend([0, 0]);
        let mut elements = 0u32;
        // While `matched` is Some(k), the keys so far equal `last_keys[..k]`.
        let mut matched = last_shape.map(|_| 0);
        walk_elements(document, |type_at, key| {
            index.push((start + type_at) as u32);
            elements += 1;
            if let Some(k) = matched {
                let end = k + key.len();
                if last_keys.get(k..end) == Some(key) && last_keys.get(end) == Some(&0) {
                    matched = Some(end + 1);
                    return;
                }
                matched = None;
                keys.clear();
                keys.extend_from_slice(&last_keys[..k]);
            }
            keys.extend_from_slice(key);
            keys.push(0);
        })?;
        let shape = match (matched, last_shape) {
            (Some(k), Some(shape)) if k == last_keys.len() => shape,
            _ => {
                if let Some(k) = matched {
                    // A proper prefix of the last shape's keys: `keys` was never filled.
                    keys.clear();
                    keys.extend_from_slice(&last_keys[..k]);
                }
                let next = shapes.len() as u32;
                let shape = *shapes.entry(keys.clone()).or_insert(next);
                std::mem::swap(&mut last_keys, &mut keys);
                keys.clear();
                last_shape = Some(shape);
                shape
            }
        };
        index[header_at] = shape;
        index[header_at + 1] = elements;
        start += length;
    }
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn documents(docs: &[bson::Document]) -> Vec<u8> {
        docs.iter().flat_map(|doc| doc.to_vec().unwrap()).collect()
    }

    #[test]
    fn indexes_offsets_and_shares_shapes() {
        let bytes = documents(&[
            bson::doc! { "a": 1, "b": "x" },
            bson::doc! { "a": 2, "b": "y" },
            bson::doc! { "b": 3 },
            bson::doc! { "a": 4, "b": "z" },
            bson::doc! { "a": 5 },
            bson::doc! { "a": 6, "b": 7, "c": 8 },
            bson::doc! { "a": 9, "b": "w" },
        ]);
        let index = index_documents(&bytes, 7).unwrap();
        // { a: 1, b: "x" }: 4 (length) + 1+2+4 (int32 a) + 1+2+6 (string b) + 1 = 21 bytes.
        assert_eq!(&index[..5], &[0, 0, 2, 4, 11]);
        assert_eq!(&index[5..10], &[21, 0, 2, 25, 32]);
        assert_eq!(&index[10..14], &[42, 1, 1, 46]);
        let shapes: Vec<u32> = (0..7)
            .scan(0, |at, _| {
                let shape = index[*at + 1];
                *at += 3 + index[*at + 2] as usize;
                Some(shape)
            })
            .collect();
        // A prefix of the last shape ({ a }) and an extension of it ({ a, b, c }) are new shapes.
        assert_eq!(shapes, [0, 0, 1, 0, 2, 3, 0]);
    }

    #[test]
    fn rejects_broken_framing() {
        let mut bytes = documents(&[bson::doc! { "a": "text" }]);
        bytes[7] = 200; // the string's length runs past the document
        assert!(index_documents(&bytes, 1).is_err());
        assert!(index_documents(&bytes[..6], 1).is_err());
    }
}
