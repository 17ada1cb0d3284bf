//! Appending short byte strings to a line, on the writer's hot path.
//!
//! A formatted line is mostly short pieces: a level, a separator, a field's name, a number's
//! digits. `Vec::extend_from_slice` copies each through a call to `memcpy`, whose call and
//! size dispatch cost more than a short copy itself, and no crate offers the inline copy.
//! [`put`] copies a piece of up to 16 bytes inline, with two overlapping loads and stores.
//! Its one `unsafe` block writes into the vector's reserved capacity.
#![allow(unsafe_code)]

/// Appends `bytes` to `out` (`put(&mut b"INFO".to_vec(), b" [main]")` leaves
/// `INFO [main]`): inline up to 16 bytes, through `extend_from_slice` above.
#[inline(always)]
pub(crate) fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    let n = bytes.len();
    if n > 16 {
        out.extend_from_slice(bytes);
        return;
    }
    out.reserve(16);
    let len = out.len();
    let src = bytes.as_ptr();
    // SAFETY: `reserve(16)` leaves at least 16 writable bytes past `len`, and `n <= 16`; every
    // read is inside `bytes` (the two loads of a size class overlap when `n` is below twice
    // the class's width); the `n` bytes past `len` are written before `set_len` covers them.
    unsafe {
        let dst = out.as_mut_ptr().add(len);
        if n >= 8 {
            let head = src.cast::<u64>().read_unaligned();
            let tail = src.add(n - 8).cast::<u64>().read_unaligned();
            dst.cast::<u64>().write_unaligned(head);
            dst.add(n - 8).cast::<u64>().write_unaligned(tail);
        } else if n >= 4 {
            let head = src.cast::<u32>().read_unaligned();
            let tail = src.add(n - 4).cast::<u32>().read_unaligned();
            dst.cast::<u32>().write_unaligned(head);
            dst.add(n - 4).cast::<u32>().write_unaligned(tail);
        } else if n > 0 {
            // 1 to 3 bytes: the first, the middle and the last (some the same byte).
            *dst = *src;
            *dst.add(n / 2) = *src.add(n / 2);
            *dst.add(n - 1) = *src.add(n - 1);
        }
        out.set_len(len + n);
    }
}

#[cfg(test)]
mod tests {
    use super::put;
    use proptest::prelude::*;

    proptest! {
        /// Catches: a size class that copies too few bytes, a tail load off by one, a length
        /// left unset, and a copy that overwrites what `out` held.
        #[test]
        fn put_appends_exactly_the_bytes(
            before in proptest::collection::vec(any::<u8>(), 0..40),
            pieces in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..8),
        ) {
            let mut out = before.clone();
            let mut expected = before;
            for piece in &pieces {
                put(&mut out, piece);
                expected.extend_from_slice(piece);
            }
            prop_assert_eq!(out, expected);
        }
    }
}
