//! Appending short byte strings to a line, on the writer's hot path.
//!
//! A formatted line is mostly short pieces: a level, a separator, a field's name, a number's
//! digits. `Vec::extend_from_slice` copies each through a call to `memcpy`, whose call and
//! size dispatch cost more than a short copy itself, and no crate offers the inline copy.
//! [`put`] copies a piece of up to 16 bytes inline, with two overlapping loads and stores.
//!
//! A number's digits are written straight into the line by [`put_u64`]. `itoa`, the usual
//! crate, formats only into a buffer of its own on the stack; copying that into the line
//! reads back, with one wide load, bytes the CPU has just stored one or two at a time, and
//! such a load cannot take them from the pending stores: it waits for all of them to reach
//! the cache.
//!
//! The `unsafe` blocks write into the vector's reserved capacity.
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

/// Two decimal digits of each number below 100, so that a division by 100 yields two
/// digits at once.
const DIGIT_PAIRS: &[u8; 200] = b"\
    0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

/// Appends `v` in decimal (`put_u64(&mut b"n=".to_vec(), 42)` leaves `n=42`), digit by
/// digit into the vector, last digit first.
#[inline]
pub(crate) fn put_u64(out: &mut Vec<u8>, mut v: u64) {
    let digits = v.checked_ilog10().map_or(1, |d| d as usize + 1);
    out.reserve(digits);
    let len = out.len();
    // SAFETY: `reserve(digits)` leaves `digits` writable bytes past `len`; `end` starts at
    // `digits` and each store below lowers it first, by as many bytes as it writes, and
    // the number has exactly `digits` digits, so every store lands in `len..len + digits`
    // and all of those bytes are written before `set_len` covers them.
    unsafe {
        let dst = out.as_mut_ptr().add(len);
        let mut end = digits;
        while v >= 100 {
            let pair = (v % 100) as usize * 2;
            v /= 100;
            end -= 2;
            *dst.add(end) = DIGIT_PAIRS[pair];
            *dst.add(end + 1) = DIGIT_PAIRS[pair + 1];
        }
        if v >= 10 {
            let pair = v as usize * 2;
            *dst = DIGIT_PAIRS[pair];
            *dst.add(1) = DIGIT_PAIRS[pair + 1];
        } else {
            *dst = b'0' + v as u8;
        }
        out.set_len(len + digits);
    }
}

/// Appends `v` in decimal, with a `-` when negative.
#[inline]
pub(crate) fn put_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    put_u64(out, v.unsigned_abs());
}

#[cfg(test)]
mod tests {
    use super::{put, put_i64, put_u64};
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

        /// Catches: a digit count off by one at a power of ten, pairs written in the wrong
        /// place or order, a lone leading digit dropped, and a sign lost.
        #[test]
        fn numbers_are_written_as_display_writes_them(
            before in proptest::collection::vec(any::<u8>(), 0..8),
            u in prop_oneof![any::<u64>(), 0..1000u64, Just(u64::MAX)],
            i in prop_oneof![any::<i64>(), -1000..1000i64, Just(i64::MIN)],
        ) {
            let mut out = before.clone();
            put_u64(&mut out, u);
            out.push(b' ');
            put_i64(&mut out, i);
            let mut expected = before;
            expected.extend_from_slice(format!("{u} {i}").as_bytes());
            prop_assert_eq!(out, expected);
        }
    }

    #[test]
    fn every_power_of_ten_and_its_neighbours() {
        let mut p = 1u64;
        loop {
            for v in [p - 1, p, p + 1] {
                let mut out = Vec::new();
                put_u64(&mut out, v);
                assert_eq!(out, v.to_string().as_bytes());
            }
            match p.checked_mul(10) {
                Some(next) => p = next,
                None => break,
            }
        }
    }
}
