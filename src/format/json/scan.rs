//! Sixteen bytes of a string at a time: where the first byte JSON escapes (control bytes, `"`,
//! `\`) is and whether any byte is not ASCII (text to validate as UTF-8). SSE2 on x86_64 and NEON
//! on aarch64, which every CPU of those targets has (no run-time detection); two 64-bit words
//! elsewhere.

/// The bytes `scan` reads.
pub const BLOCK: usize = 16;

/// What `scan` finds in a block.
pub struct Found {
    /// Where the first byte JSON escapes is in the block: `BLOCK` if there is none.
    pub first_escape: usize,
    pub non_ascii: bool,
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn scan(block: &[u8; BLOCK]) -> Found {
    use std::arch::x86_64::*;
    // SAFETY: every x86_64 CPU has SSE2 (the target's baseline); `block` has the 16 bytes an
    // unaligned load reads.
    let (escapes, non_ascii) = unsafe {
        let bytes = _mm_loadu_si128(block.as_ptr().cast());
        // A byte below 0x20 is its own minimum with 0x1f.
        let control = _mm_cmpeq_epi8(_mm_min_epu8(bytes, _mm_set1_epi8(0x1f)), bytes);
        let quote = _mm_cmpeq_epi8(bytes, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(bytes, _mm_set1_epi8(b'\\' as i8));
        (
            _mm_movemask_epi8(_mm_or_si128(control, _mm_or_si128(quote, backslash))) as u32,
            _mm_movemask_epi8(bytes) != 0,
        )
    };
    Found {
        // Bit 16 set: 16 when no byte is flagged.
        first_escape: (escapes | 1 << BLOCK).trailing_zeros() as usize,
        non_ascii,
    }
}

#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub fn scan(block: &[u8; BLOCK]) -> Found {
    use std::arch::aarch64::*;
    // SAFETY: every aarch64 CPU has NEON (the target's baseline); `block` has the 16 bytes the
    // load reads.
    let (nibbles, non_ascii) = unsafe {
        let bytes = vld1q_u8(block.as_ptr());
        let escapes = vorrq_u8(
            vcltq_u8(bytes, vdupq_n_u8(0x20)),
            vorrq_u8(
                vceqq_u8(bytes, vdupq_n_u8(b'"')),
                vceqq_u8(bytes, vdupq_n_u8(b'\\')),
            ),
        );
        // NEON has no movemask: narrowing each 16-bit lane shifted right by 4 keeps a nibble a byte.
        let nibbles = vshrn_n_u16::<4>(vreinterpretq_u16_u8(escapes));
        (
            vget_lane_u64::<0>(vreinterpret_u64_u8(nibbles)),
            vmaxvq_u8(bytes) >= 0x80,
        )
    };
    Found {
        // 64 trailing zeros (16 nibbles) when no byte is flagged.
        first_escape: (nibbles.trailing_zeros() / 4) as usize,
        non_ascii,
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(always)]
pub fn scan(block: &[u8; BLOCK]) -> Found {
    use crate::raw::{HIGHS, ONES};
    // The flags of json.rs's `word_needs_escape`: the high bit of each byte, the lowest exact.
    let flags = |word: u64| {
        (word.wrapping_sub(ONES * 0x20)
            | (word ^ (ONES * u64::from(b'"'))).wrapping_sub(ONES)
            | (word ^ (ONES * u64::from(b'\\'))).wrapping_sub(ONES))
            & !word
            & HIGHS
    };
    let [low, high] = [0, 8].map(|at| u64::from_le_bytes(block[at..at + 8].try_into().expect("8 bytes")));
    let first_escape = match flags(low) {
        0 => 8 + flags(high).trailing_zeros() as usize / 8,
        low_flags => low_flags.trailing_zeros() as usize / 8,
    };
    Found {
        first_escape,
        non_ascii: (low | high) & HIGHS != 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first byte JSON escapes and whether any is not ASCII, byte by byte.
    fn expected(block: &[u8; BLOCK]) -> (usize, bool) {
        let first = block
            .iter()
            .position(|&byte| byte < 0x20 || byte == b'"' || byte == b'\\')
            .unwrap_or(BLOCK);
        (first, block.iter().any(|&byte| byte >= 0x80))
    }

    #[test]
    fn finds_what_a_byte_by_byte_scan_finds() {
        // Every byte value at every position of an otherwise plain block, and pairs of them.
        let interesting = [
            0x00, 0x01, 0x08, 0x1f, 0x20, b'"', b'\\', b'a', 0x7f, 0x80, 0xc3, 0xff,
        ];
        for position in 0..BLOCK {
            for byte in 0..=255u8 {
                let mut block = [b'x'; BLOCK];
                block[position] = byte;
                let found = scan(&block);
                assert_eq!(
                    (found.first_escape, found.non_ascii),
                    expected(&block),
                    "{block:?}"
                );
            }
            for later in position..BLOCK {
                for &first in &interesting {
                    for &second in &interesting {
                        let mut block = [b'x'; BLOCK];
                        block[position] = first;
                        block[later] = second;
                        let found = scan(&block);
                        assert_eq!(
                            (found.first_escape, found.non_ascii),
                            expected(&block),
                            "{block:?}"
                        );
                    }
                }
            }
        }
    }
}
