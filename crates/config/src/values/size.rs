use std::fmt;
use std::str::FromStr;

/// A number of bytes, written as DropWizard's `DataSize` is: `8KiB`, `10MiB`, `256 kilobytes`,
/// `10mib`, `512B`. Units are case-insensitive; `K`/`KB`/`kilobyte` are powers of 1000 and
/// `KiB`/`kibibyte` powers of 1024, as in DropWizard 2+.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Size(u64);

const UNITS: &[(&str, &str, &str, u64)] = &[
    // (symbol, singular, plural, multiplier), largest first for display
    ("PiB", "pebibyte", "pebibytes", 1 << 50),
    ("TiB", "tebibyte", "tebibytes", 1 << 40),
    ("GiB", "gibibyte", "gibibytes", 1 << 30),
    ("MiB", "mebibyte", "mebibytes", 1 << 20),
    ("KiB", "kibibyte", "kibibytes", 1 << 10),
    ("PB", "petabyte", "petabytes", 1_000_000_000_000_000),
    ("TB", "terabyte", "terabytes", 1_000_000_000_000),
    ("GB", "gigabyte", "gigabytes", 1_000_000_000),
    ("MB", "megabyte", "megabytes", 1_000_000),
    ("KB", "kilobyte", "kilobytes", 1_000),
    ("B", "byte", "bytes", 1),
];

impl Size {
    /// A size of `n` bytes.
    pub const fn bytes(n: u64) -> Size {
        Size(n)
    }
    /// A size of `n` KiB.
    pub const fn kibibytes(n: u64) -> Size {
        Size(n * 1024)
    }
    /// A size of `n` MiB.
    pub const fn mebibytes(n: u64) -> Size {
        Size(n * 1024 * 1024)
    }
    /// The size in bytes.
    pub const fn to_bytes(self) -> u64 {
        self.0
    }
}

impl FromStr for Size {
    type Err = String;

    fn from_str(s: &str) -> Result<Size, String> {
        let s = s.trim();
        let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let (digits, unit) = s.split_at(split);
        let n: u64 = digits
            .parse()
            .map_err(|_| format!("{s:?} does not start with a number"))?;
        let unit = unit.trim();
        if unit.is_empty() {
            return Ok(Size(n));
        }
        let short = |sym: &str| {
            // `K`, `M`... are accepted for `KB`, `MB`...
            let lower = unit.to_ascii_lowercase();
            lower == sym.to_ascii_lowercase()
                || (sym.len() == 2 && lower == sym[..1].to_ascii_lowercase())
        };
        UNITS
            .iter()
            .find(|(sym, one, many, _)| {
                short(sym) || unit.eq_ignore_ascii_case(one) || unit.eq_ignore_ascii_case(many)
            })
            .and_then(|(_, _, _, m)| n.checked_mul(*m))
            .map(Size)
            .ok_or_else(|| format!("unknown size unit {unit:?}"))
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (sym, m) = UNITS
            .iter()
            .find(|(_, _, _, m)| self.0 != 0 && self.0.is_multiple_of(*m))
            .map(|(sym, _, _, m)| (*sym, *m))
            .unwrap_or(("B", 1));
        write!(f, "{}{sym}", self.0 / m)
    }
}

super::text::text_value!(Size, "a size such as 8KiB, 10MiB or 256 kilobytes");

#[cfg(test)]
mod tests {
    use super::Size;

    #[test]
    fn parses_dropwizard_spellings() {
        for (text, bytes) in [
            ("8KiB", 8 * 1024),
            ("10MiB", 10 << 20),
            ("256 kilobytes", 256_000),
            ("10mib", 10 << 20),
            ("1 byte", 1),
            ("512", 512),
            ("4K", 4000),
            ("2 gibibytes", 2 << 30),
        ] {
            assert_eq!(text.parse::<Size>(), Ok(Size::bytes(bytes)), "{text}");
        }
        assert!("8 KiBs".parse::<Size>().is_err());
        assert!("KiB".parse::<Size>().is_err());
        assert!("99999999999999 PiB".parse::<Size>().is_err());
    }

    #[test]
    fn displays_in_the_largest_exact_unit() {
        assert_eq!(Size::kibibytes(8).to_string(), "8KiB");
        assert_eq!(Size::bytes(256_000).to_string(), "250KiB");
        assert_eq!(Size::bytes(1_000_000).to_string(), "1MB");
        assert_eq!(Size::bytes(1000 * 1024).to_string(), "1000KiB");
        assert_eq!(Size::bytes(0).to_string(), "0B");
        assert_eq!(Size::bytes(7).to_string(), "7B");
    }
}
