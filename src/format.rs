//! Number formatting shared by every renderer: counts with thousands separators, durations,
//! sizes and before/after ratios, so the same figure reads the same everywhere.

/// Text from a plan as it may reach a terminal: control characters (ESC, newlines, tabs, ...)
/// escaped as Rust writes them (`\u{1b}`, `\n`), so a relation name or a condition cannot move
/// the cursor, recolour the screen or break a line of the tree. PostgreSQL quotes such names in
/// its own output but keeps the characters themselves.
pub fn printable(text: &str) -> String {
    if !has_control(text) {
        return text.to_owned();
    }
    escape_controls(text)
}

/// [`printable`] for text already owned: returned as it is when it has nothing to escape, as
/// nearly every label and condition of a plan has, instead of copied.
pub fn printable_owned(text: String) -> String {
    if !has_control(&text) {
        return text;
    }
    escape_controls(&text)
}

fn has_control(text: &str) -> bool {
    // Control characters are C0, DEL and C1 (U+0080..U+009F, two bytes from 0xC2): printable
    // ASCII is told apart by its byte alone.
    text.bytes().any(|b| b < 0x20 || b == 0x7f || b == 0xc2) && text.chars().any(char::is_control)
}

fn escape_controls(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `9091` → "9,091"; `6.5` → "6.5"; `33266.67` → "33,266.67"; `1e30` → "1.00e30".
pub fn count(value: f64) -> String {
    if !value.is_finite() {
        return value.to_string();
    }
    if value.abs() >= 1e15 {
        return format!("{value:.2e}");
    }
    let negative = value < 0.0;
    let abs = value.abs();
    let rounded = (abs * 100.0).round() / 100.0;
    let whole = rounded.trunc() as u64;
    let fraction = ((rounded - rounded.trunc()) * 100.0).round() as u64;
    // Built in one allocation: a text report formats several counts per plan node, and the
    // pieces (groups, the fraction) used to be strings of their own.
    let mut text = String::with_capacity(24);
    if negative && (whole > 0 || fraction > 0) {
        text.push('-');
    }
    let mut digits = [0u8; 20];
    let whole_digits = decimal(whole, &mut digits);
    for (i, d) in whole_digits.iter().enumerate() {
        if i > 0 && (whole_digits.len() - i).is_multiple_of(3) {
            text.push(',');
        }
        text.push(char::from(*d));
    }
    if fraction > 0 {
        // Two places, trailing zeros left out: 50 → ".5", 5 → ".05".
        let mut places = [0u8; 20];
        let places = decimal(fraction, &mut places);
        text.push('.');
        if places.len() < 2 {
            text.push('0');
        }
        let end = places.iter().rposition(|d| *d != b'0').map_or(0, |i| i + 1);
        text.extend(places[..end].iter().map(|d| char::from(*d)));
    }
    text
}

/// The decimal digits of `n`, most significant first, written into `buffer`.
fn decimal(mut n: u64, buffer: &mut [u8; 20]) -> &[u8] {
    let mut start = buffer.len();
    loop {
        start -= 1;
        buffer[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buffer[start..]
}

/// Milliseconds with precision that suits their size: "0.071 ms", "12.34 ms", "1,234.5 ms".
pub fn ms(value: f64) -> String {
    if value < 1.0 {
        format!("{value:.3} ms")
    } else if value < 100.0 {
        format!("{value:.2} ms")
    } else {
        let whole = count((value * 10.0).round() / 10.0);
        if whole.contains('.') {
            format!("{whole} ms")
        } else {
            format!("{whole}.0 ms")
        }
    }
}

/// Bytes in binary units: "8.0 kB", "71.4 MB" (PostgreSQL's own kB = 1024 bytes convention).
pub fn bytes(value: f64) -> String {
    const UNITS: [&str; 5] = ["bytes", "kB", "MB", "GB", "TB"];
    let mut v = value;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{} bytes", count(value))
    } else {
        format!("{} {}", OneDecimal(v), UNITS[unit])
    }
}

/// `{:.0}` of a number, the same digits, written from an integer: std rounds an exact tie to
/// even, as `round_ties_even` does, and every f64 below 2^53 converts to u64 exactly. (std's
/// exact formatting falls back to big-number arithmetic for most such numbers.)
pub struct WholeNumber(pub f64);

impl std::fmt::Display for WholeNumber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_sign_positive() && self.0 < 9.0e15 {
            write!(f, "{}", self.0.round_ties_even() as u64)
        } else {
            write!(f, "{:.0}", self.0)
        }
    }
}

/// `{:.1}` of a number, the same digits, written from integers when ten times the number is a
/// whole number (most sizes are whole kB or MB). std's exact formatting gives up its fast path
/// for such numbers and falls back to big-number arithmetic: a tenth of the audit's own checks
/// at 50,000 indexes. When `10 × v` rounds to an integer k, the exact `10 × v` lies within half
/// an ulp of k, far from a rounding boundary, so k / 10 is the correctly rounded result.
pub struct OneDecimal(pub f64);

impl std::fmt::Display for OneDecimal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tenths = self.0 * 10.0;
        if self.0.is_sign_positive() && tenths < 9.0e15 && tenths.fract() == 0.0 {
            let tenths = tenths as u64;
            write!(f, "{}.{}", tenths / 10, tenths % 10)
        } else {
            write!(f, "{:.1}", self.0)
        }
    }
}

/// How `after` compares with `before` for a figure where less is better, in one notation for
/// every figure and format: the factor between the two and a word, "1,818× fewer", "2.1×
/// more", "1.09× slower", "1.003× fewer"; "same", "more (from 0)", "fewer (to 0)", or "" when
/// either side is missing. Small factors get more decimals so that a real change never reads
/// "1.0×"; under 1.001 it reads "under 1.001×".
pub fn change(before: Option<f64>, after: Option<f64>, fewer: &str, more: &str) -> String {
    let (Some(b), Some(a)) = (before, after) else {
        return String::new();
    };
    if a == b {
        return "same".into();
    }
    if b == 0.0 {
        return format!("{more} (from 0)");
    }
    if a == 0.0 {
        return format!("{fewer} (to 0)");
    }
    let (factor, word) = if a.abs() < b.abs() {
        (b / a, fewer)
    } else {
        (a / b, more)
    };
    if !factor.is_finite() || factor < 0.0 {
        // Opposite signs (a negative cost never occurs; a negative count would be a bug
        // upstream): no factor means anything, the direction does.
        return word.to_owned();
    }
    if factor < 1.0005 {
        format!("under 1.001× {word}")
    } else if factor < 1.0095 {
        format!("{factor:.3}× {word}")
    } else if factor < 1.095 {
        format!("{factor:.2}× {word}")
    } else if factor < 9.95 {
        format!("{factor:.1}× {word}")
    } else {
        format!("{}× {word}", count(factor.round()))
    }
}

/// A ratio (after / before) as a plain number for tables: "0.0005", "1.00", "12.3".
pub fn ratio(value: Option<f64>) -> String {
    match value {
        None => String::new(),
        Some(0.0) => "0".into(),
        Some(r) if r < 0.01 => format!("{r:.1e}"),
        Some(r) if r < 10.0 => format!("{r:.2}"),
        Some(r) => count(r.round()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_decimal_writes_what_std_writes() {
        let mut values = vec![
            0.0, 0.05, 0.15, 0.25, 0.35, 0.45, 0.95, 1.0, 1.6, 2.5, 15.95, 16.0, 1023.95, 1023.99,
            1024.0, 3.0e14, 8.999e14, 9.0e14, 1.0e15, 1.0e16, 1.0e300, -0.0,
        ];
        // Whole multiples of a tenth and their neighbours, and sizes as bytes() divides them.
        for k in 0..20_000u64 {
            let v = k as f64 / 10.0;
            values.extend([v, f64::from_bits(v.to_bits() + 1), v + 0.05]);
            values.push((k * 8192) as f64 / 1024.0);
            values.push((k * 8191 + 7) as f64 / (1024.0 * 1024.0));
        }
        for v in values {
            assert_eq!(OneDecimal(v).to_string(), format!("{v:.1}"), "{v:e}");
        }
    }

    #[test]
    fn whole_number_writes_what_std_writes() {
        let mut values = vec![
            0.0,
            -0.0,
            0.4999999999999999,
            0.5,
            1.5,
            2.5,
            3.5,
            1e15,
            8.9e15,
            9.0e15,
            1e16,
            1e300,
            -1.5,
            f64::NAN,
            f64::INFINITY,
        ];
        for k in 0..50_000u64 {
            let v = k as f64 / 4.0;
            values.extend([v, f64::from_bits(v.to_bits() + 1), v / 60.0, v / 7.0]);
        }
        for v in values {
            assert_eq!(WholeNumber(v).to_string(), format!("{v:.0}"), "{v:e}");
        }
    }

    #[test]
    fn counts() {
        assert_eq!(count(0.0), "0");
        assert_eq!(count(9091.0), "9,091");
        assert_eq!(count(6.5), "6.5");
        assert_eq!(count(33266.67), "33,266.67");
        assert_eq!(count(1_000_000.0), "1,000,000");
        assert_eq!(count(1e30), "1.00e30");
        assert_eq!(count(-1234.0), "-1,234");
        assert_eq!(count(0.05), "0.05");
        assert_eq!(count(0.5), "0.5");
        assert_eq!(count(1_234_567.5), "1,234,567.5");
        assert_eq!(count(999.999), "1,000");
        assert_eq!(count(-0.001), "0");
        assert_eq!(count(12.3456), "12.35");
        assert_eq!(count(18_446_744.07), "18,446,744.07");
    }

    /// The previous formulation, pieces joined from strings of their own: the one-allocation
    /// `count` must write exactly what it wrote.
    fn count_by_pieces(value: f64) -> String {
        let negative = value < 0.0;
        let rounded = (value.abs() * 100.0).round() / 100.0;
        let mut whole = rounded.trunc() as u64;
        let fraction = ((rounded - rounded.trunc()) * 100.0).round() as u64;
        let mut groups = Vec::new();
        loop {
            if whole < 1000 {
                groups.push(whole.to_string());
                break;
            }
            groups.push(format!("{:03}", whole % 1000));
            whole /= 1000;
        }
        groups.reverse();
        let mut text = groups.join(",");
        if fraction > 0 {
            text.push('.');
            text.push_str(format!("{fraction:02}").trim_end_matches('0'));
        }
        if negative && text != "0" {
            text.insert(0, '-');
        }
        text
    }

    #[test]
    fn counts_match_the_pieces_they_were_built_from() {
        let mut value = 0.001_f64;
        while value < 1e15 {
            for v in [value, -value, value.round(), value * 1.37, value + 0.005] {
                if v.abs() < 1e15 {
                    assert_eq!(count(v), count_by_pieces(v), "{v}");
                }
            }
            value *= 1.013;
        }
    }

    #[test]
    fn durations_and_sizes() {
        assert_eq!(ms(0.0712), "0.071 ms");
        assert_eq!(ms(77.396), "77.40 ms");
        assert_eq!(ms(1234.56), "1,234.6 ms");
        assert_eq!(ms(200.0), "200.0 ms");
        assert_eq!(bytes(8192.0), "8.0 kB");
        assert_eq!(bytes(100.0), "100 bytes");
    }

    #[test]
    fn changes() {
        assert_eq!(
            change(Some(9091.0), Some(5.0), "fewer", "more"),
            "1,818× fewer"
        );
        assert_eq!(change(Some(10.0), Some(21.0), "fewer", "more"), "2.1× more");
        // One notation for every size of change: never "+5%" beside "1.1× more".
        assert_eq!(
            change(Some(10.0), Some(10.5), "fewer", "more"),
            "1.05× more"
        );
        assert_eq!(
            change(Some(100.0), Some(109.0), "fewer", "more"),
            "1.09× more"
        );
        assert_eq!(
            change(Some(100.0), Some(110.0), "fewer", "more"),
            "1.1× more"
        );
        assert_eq!(
            change(Some(83.29), Some(83.06), "fewer", "more"),
            "1.003× fewer"
        );
        assert_eq!(
            change(Some(14_915.0), Some(14_914.0), "fewer", "more"),
            "under 1.001× fewer"
        );
        assert_eq!(change(Some(10.0), Some(99.6), "fewer", "more"), "10× more");
        assert_eq!(change(Some(10.0), Some(99.4), "fewer", "more"), "9.9× more");
        assert_eq!(change(Some(10.0), Some(10.0), "fewer", "more"), "same");
        assert_eq!(change(None, Some(10.0), "fewer", "more"), "");
        assert_eq!(
            change(Some(0.0), Some(3.0), "fewer", "more"),
            "more (from 0)"
        );
    }
}
