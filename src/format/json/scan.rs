//! Sixteen bytes of a string at a time: which of them JSON escapes (control bytes, `"`, `\`) and
//! which are not ASCII (text to validate as UTF-8). SSE2 on x86_64 and NEON on aarch64, which every
//! CPU of those targets has (no run-time detection); two 64-bit words elsewhere.

/// The bytes `masks` reads.
pub const BLOCK: usize = 16;

/// What `scan` finds in a block.
pub struct Found {
    /// Where the first byte JSON escapes is in the block: `BLOCK` if there is none.
    pub first_escape: usize,
    pub non_ascii: bool,
}

/// The first byte of `block` to escape and whether any is not ASCII.
#[inline(always)]
pub fn scan(block: &[u8; BLOCK]) -> Found {
    let (escapes, non_ascii) = masks(block);
    Found {
        // 64 trailing zeros when no byte is flagged.
        first_escape: (escapes.trailing_zeros() / BITS_PER_BYTE).min(BLOCK as u32) as usize,
        non_ascii: non_ascii != 0,
    }
}

/// Whether the first `length` bytes of `window` (`N` a multiple of `BLOCK`) hold a byte JSON
/// escapes, and whether they hold a non-ASCII byte; the bytes after them are ignored.
#[inline(always)]
pub fn window_flags<const N: usize>(window: &[u8; N], length: usize) -> (bool, bool) {
    let bits = N as u32 * BITS_PER_BYTE;
    if bits <= 64 {
        // The blocks' masks side by side in one word (x86_64: up to 64 bytes), cut to the
        // string's bytes once.
        let (mut escapes, mut non_ascii) = (0, 0);
        for (index, block) in window.chunks_exact(BLOCK).enumerate() {
            let (block_escapes, block_non_ascii) = masks(block.try_into().expect("blocks of 16 bytes"));
            let shift = index as u32 * BLOCK as u32 * BITS_PER_BYTE;
            escapes |= block_escapes << shift;
            non_ascii |= block_non_ascii << shift;
        }
        let keep = u64::MAX
            .checked_shr(64 - length as u32 * BITS_PER_BYTE)
            .unwrap_or(0);
        return (escapes & keep != 0, non_ascii & keep != 0);
    }
    if bits <= 128 {
        // The same in two words (x86_64: up to 128 bytes).
        let (mut escapes, mut non_ascii) = (0u128, 0u128);
        for (index, block) in window.chunks_exact(BLOCK).enumerate() {
            let (block_escapes, block_non_ascii) = masks(block.try_into().expect("blocks of 16 bytes"));
            let shift = index as u32 * BLOCK as u32 * BITS_PER_BYTE;
            escapes |= u128::from(block_escapes) << shift;
            non_ascii |= u128::from(block_non_ascii) << shift;
        }
        let keep = u128::MAX
            .checked_shr(128 - length as u32 * BITS_PER_BYTE)
            .unwrap_or(0);
        return (escapes & keep != 0, non_ascii & keep != 0);
    }
    let (mut escapes, mut non_ascii) = (0, 0);
    for (index, block) in window.chunks_exact(BLOCK).enumerate() {
        let (block_escapes, block_non_ascii) = masks(block.try_into().expect("blocks of 16 bytes"));
        let kept = length.saturating_sub(index * BLOCK).min(BLOCK) as u32 * BITS_PER_BYTE;
        let keep = u64::MAX.checked_shr(64 - kept).unwrap_or(0);
        escapes |= block_escapes & keep;
        non_ascii |= block_non_ascii & keep;
    }
    (escapes != 0, non_ascii != 0)
}

#[cfg(target_arch = "x86_64")]
const BITS_PER_BYTE: u32 = 1;

/// The bytes of `block` JSON escapes and those that are not ASCII, `BITS_PER_BYTE` bits a byte
/// from the first byte's lowest: where a mask is approximate (the word fallback), only above a
/// byte flagged rightly.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn masks(block: &[u8; BLOCK]) -> (u64, u64) {
    use std::arch::x86_64::*;
    // SAFETY: every x86_64 CPU has SSE2 (the target's baseline); `block` has the 16 bytes an
    // unaligned load reads.
    unsafe {
        let bytes = _mm_loadu_si128(block.as_ptr().cast());
        // A byte below 0x20 is its own minimum with 0x1f.
        let control = _mm_cmpeq_epi8(_mm_min_epu8(bytes, _mm_set1_epi8(0x1f)), bytes);
        let quote = _mm_cmpeq_epi8(bytes, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(bytes, _mm_set1_epi8(b'\\' as i8));
        let escapes = _mm_or_si128(control, _mm_or_si128(quote, backslash));
        (
            u64::from(_mm_movemask_epi8(escapes) as u16),
            u64::from(_mm_movemask_epi8(bytes) as u16),
        )
    }
}

#[cfg(target_arch = "aarch64")]
const BITS_PER_BYTE: u32 = 4;

#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn masks(block: &[u8; BLOCK]) -> (u64, u64) {
    use std::arch::aarch64::*;
    // SAFETY: every aarch64 CPU has NEON (the target's baseline); `block` has the 16 bytes the
    // load reads.
    unsafe {
        let bytes = vld1q_u8(block.as_ptr());
        let escapes = vorrq_u8(
            vcltq_u8(bytes, vdupq_n_u8(0x20)),
            vorrq_u8(
                vceqq_u8(bytes, vdupq_n_u8(b'"')),
                vceqq_u8(bytes, vdupq_n_u8(b'\\')),
            ),
        );
        let non_ascii = vcgeq_u8(bytes, vdupq_n_u8(0x80));
        // NEON has no movemask: narrowing each 16-bit lane shifted right by 4 keeps a nibble a byte.
        let nibbles = |flags: uint8x16_t| {
            vget_lane_u64::<0>(vreinterpret_u64_u8(vshrn_n_u16::<4>(vreinterpretq_u16_u8(flags))))
        };
        (nibbles(escapes), nibbles(non_ascii))
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const BITS_PER_BYTE: u32 = 1;

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(always)]
fn masks(block: &[u8; BLOCK]) -> (u64, u64) {
    use super::escape_flags;
    use crate::raw::HIGHS;
    // The high bit of each of 8 bytes gathered into the low 8 bits (bit 7 + 8k moves to k).
    let gather = |flags: u64| (flags >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56;
    let [low, high] = [0, 8].map(|at| u64::from_le_bytes(block[at..at + 8].try_into().expect("8 bytes")));
    (
        gather(escape_flags(low)) | gather(escape_flags(high)) << 8,
        gather(low & HIGHS) | gather(high & HIGHS) << 8,
    )
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

    /// Whether the first `length` bytes hold a byte to escape, and a non-ASCII one, byte by byte.
    fn expected_flags(window: &[u8], length: usize) -> (bool, bool) {
        let text = &window[..length];
        (
            text.iter()
                .any(|&byte| byte < 0x20 || byte == b'"' || byte == b'\\'),
            text.iter().any(|&byte| byte >= 0x80),
        )
    }

    /// Windows of 16 to 128 bytes (one to two words of masks, or per block), at every length.
    #[test]
    fn window_flags_see_only_the_first_bytes() {
        fn check<const N: usize>(window: &[u8; 128], length: usize, label: &str) {
            if length <= N {
                let window: &[u8; N] = window[..N].try_into().unwrap();
                assert_eq!(
                    window_flags(window, length),
                    expected_flags(window, length),
                    "{N} {label}"
                );
            }
        }
        let interesting = [0x00, 0x1f, 0x20, b'"', b'\\', b'a', 0x7f, 0x80, 0xff];
        for length in 0..=128 {
            for position in 0..128 {
                for &byte in &interesting {
                    // One byte set at `position`, and the byte after the text flagged too.
                    let mut window = [b'x'; 128];
                    window[position] = byte;
                    if length < 128 {
                        window[length] = if byte >= 0x80 { b'"' } else { 0x80 };
                    }
                    let label = format!("{length} {position} {byte}");
                    check::<16>(&window, length, &label);
                    check::<32>(&window, length, &label);
                    check::<48>(&window, length, &label);
                    check::<64>(&window, length, &label);
                    check::<96>(&window, length, &label);
                    check::<128>(&window, length, &label);
                }
            }
        }
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
