//! Python's text rules where legacy text lines depend on them, so the native
//! decoder reads a line exactly as the former Python one did: its whitespace
//! (`str.strip`, regex `\s`), its word characters (regex `\w`), and `int()` and
//! `float()` of digits, Unicode decimal digits included.

use std::sync::LazyLock;

use regex::Regex;

/// Python's `\s` in a regex character class (`str.isspace`): the Unicode White_Space
/// characters and the four ASCII separators 0x1C-0x1F, which Rust's `\s` leaves out.
pub const SPACE_CLASS: &str = r"\t\n\x0B\x0C\r\x1C-\x1F \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}";

/// Python's `\w` (`str.isalnum` or `_`): letters and numbers of every script.
pub const WORD: &str = r"[\p{L}\p{N}_]";

/// `pattern` with `\s` and `\S` as Python reads them.
pub fn regex(pattern: &str) -> Regex {
    let pattern = pattern.replace(r"\s", &format!("[{SPACE_CLASS}]")).replace(r"\S", &format!("[^{SPACE_CLASS}]")).replace(r"\w", WORD);
    Regex::new(&pattern).expect("a valid pattern")
}

/// `pattern` for ASCII text, where Python's `\s`, `\S`, `\d` and `\w` are ASCII classes: a
/// byte regex far smaller than the Unicode one, for the same matches on ASCII text.
pub fn ascii_regex(pattern: &str) -> String {
    let space = r"\t\n\x0B\x0C\r\x1C-\x1F ";
    let pattern = pattern.replace(r"\s", &format!("[{space}]")).replace(r"\S", &format!("[^{space}]"));
    format!("(?-u){}", pattern.replace(r"\d", "[0-9]").replace(r"\w", "[A-Za-z0-9_]"))
}

/// Whether `c` is whitespace to Python (`str.isspace`).
pub fn is_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n'
            | '\x0B'
            | '\x0C'
            | '\r'
            | '\x1C'..='\x1F'
            | ' '
            | '\u{85}'
            | '\u{A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
    )
}

pub fn rstrip(s: &str) -> &str {
    s.trim_end_matches(is_space)
}

pub fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

static WORD_CHAR: LazyLock<Regex> = LazyLock::new(|| Regex::new(&format!(r"\A{WORD}\z")).expect("a valid pattern"));

/// Whether `c` is a word character to Python's regex `\w`.
pub fn is_word(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    WORD_CHAR.is_match(c.encode_utf8(&mut [0; 4]))
}

static DECIMAL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\A\d\z").expect("a valid pattern"));

fn is_decimal(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && DECIMAL.is_match(c.encode_utf8(&mut [0; 4])))
}

/// The value of a decimal digit (Unicode category Nd). Unicode encodes each script's
/// digits as a run of ten, zero first, and runs of runs (mathematical digits), so the
/// value is the digit's place in its run of consecutive digits, modulo ten.
fn digit_value(c: char) -> u32 {
    if c.is_ascii_digit() {
        return c as u32 - '0' as u32;
    }
    let mut place = 0;
    while char::from_u32(c as u32 - place - 1).is_some_and(is_decimal) {
        place += 1;
    }
    place % 10
}

/// The value of a run of decimal digits as `int()` reads it, None beyond int64
/// (more than 19 digits is beyond it without reading them).
pub fn int64(digits: &str) -> Option<i64> {
    if digits.chars().count() > 19 {
        return None;
    }
    let value = digits.chars().try_fold(0u64, |n, c| n.checked_mul(10)?.checked_add(u64::from(digit_value(c))))?;
    i64::try_from(value).ok()
}

/// `text` with Unicode digits as ASCII ones (`int("١٢")` is 12 in Python).
fn ascii_digits(text: &str) -> String {
    text.chars().map(|c| if is_decimal(c) { char::from_digit(digit_value(c), 10).unwrap_or(c) } else { c }).collect()
}

/// Whether `float(text)` reads as a number below zero (`Some(true)`), another number
/// (`Some(false)`: zero, -0.0, a positive number, nan), or not at all (None).
pub fn float_is_negative(text: &str) -> Option<bool> {
    let text = ascii_digits(strip(text));
    // Underscores group digits (PEP 515): each one between two digits.
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'_' && !(i > 0 && bytes[i - 1].is_ascii_digit() && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            return None;
        }
    }
    let plain = text.replace('_', "");
    // Rust reads what Python's float() does: signs, inf, infinity and nan in any case, "1.", ".5", exponents.
    plain.parse::<f64>().ok().map(|f| f < 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_as_python_strips_it() {
        assert_eq!(rstrip("a \t\x1c\u{3000}"), "a");
        assert_eq!(strip("\u{85} a\u{a0}"), "a");
        assert_eq!(rstrip("a\u{200b}"), "a\u{200b}"); // zero-width space is not whitespace
        let r = regex(r"^\S+\s\w+$");
        assert!(r.is_match("x\x1dé2_"));
        assert!(!r.is_match("x\x1d\x1d"));
    }

    #[test]
    fn unicode_digits_read_as_int_reads_them() {
        assert_eq!(int64("0123"), Some(123));
        assert_eq!(int64("\u{661}\u{662}"), Some(12)); // Arabic-Indic
        assert_eq!(int64("\u{1d7d9}\u{1d7e2}"), Some(10)); // mathematical digits: runs of ten in a row
        assert_eq!(int64("9223372036854775807"), Some(i64::MAX));
        assert_eq!(int64("9223372036854775808"), None);
        assert_eq!(int64("00000000000000000001"), None);
    }

    #[test]
    fn float_signs_as_python_reads_them() {
        for (text, negative) in [
            ("-1.0", Some(true)),
            (" -1 ", Some(true)),
            ("1", Some(false)),
            ("-0", Some(false)),
            ("-1e-400", Some(false)),
            ("-inf", Some(true)),
            ("-Infinity", Some(true)),
            ("nan", Some(false)),
            ("-1_0", Some(true)),
            ("\u{661}", Some(false)),
            ("-\u{661}", Some(true)),
            ("1__0", None),
            ("_1", None),
            ("1_", None),
            ("-infinityx", None),
            ("NumberLong(-1)", None),
            ("", None),
            ("-", None),
        ] {
            assert_eq!(float_is_negative(text), negative, "{text}");
        }
    }
}
