//! The raw format (`raw: true`): each document's own BSON, handed to JS as is (`ts/format/raw.ts`
//! splits the batch into one Buffer per document). Only the element framing is checked, as the
//! official driver's reply parser checks it: a batch it would refuse fails here too.

use crate::{error::Result, raw::walk_elements};

/// Checks every document's element framing (see `raw::walk_elements`).
pub fn check_framing(documents: &[&[u8]]) -> Result<()> {
    for document in documents {
        walk_elements(document, |_, _| {})?;
    }
    Ok(())
}
