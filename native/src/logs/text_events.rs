//! What kind of event a legacy text line is, and its typed values.
//!
//! JSON lines are classified by message id (ftdc/logs/events.py); text lines,
//! which have none, by their words: the first rule that matches names the kind,
//! and its groups give the values (the columns of `events.TYPED_COLUMNS`).

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind};
use regex::Regex;

use super::pystr;

/// The typed values of one event line; `text` is the line's text unless a rule keeps
/// a part of it (the storage engine's open string).
#[derive(Default, Debug, PartialEq)]
pub struct EventValues<'a> {
    pub kind: &'static str,
    pub duration_ms: Option<i64>,
    pub connection_count: Option<i64>,
    pub remote: Option<&'a str>,
    pub driver: Option<String>,
    pub app_name: Option<&'a str>,
    pub new_state: Option<&'a str>,
    pub old_state: Option<&'a str>,
    pub version: Option<&'a str>,
    pub host: Option<String>,
    pub text: &'a str,
}

/// Legacy text events (≤ 4.2), in the order they are tried.
const RULES: [(&str, &str); 19] = [
    ("connection_accepted", r"connection accepted from (?P<remote>\S+) #\d+ \((?P<count>\d+) connections? now open\)"),
    ("connection_ended", r"end connection (?P<remote>\S+) \((?P<count>\d+) connections? now open\)"),
    (
        "client_metadata",
        r#"received client metadata from (?P<remote>\S+) \S+: .*?driver: \{ name: "(?P<driver>[^"]*)", version: "(?P<driver_version>[^"]*)""#,
    ),
    ("startup", r"(?:MongoDB|MongoS version \S+) starting ?: pid=\d+ port=(?P<port>\d+) .*?host=(?P<host>\S+)"),
    ("build_info", r"^db version v(?P<version>\S+?),?(?: |$)"),
    ("storage_config", r"^wiredtiger_open config: (?P<config>.*)$"),
    ("state_change", r"transition to (?P<new_state>[A-Z]+)(?: from (?P<old_state>[A-Z]+))?"),
    ("stepdown_requested", r"^Attempting to step down in response to replSetStepDown command"),
    ("stepup_requested", r"^Starting an election due to step up request"),
    ("priority_takeover", r"^Starting an election for a priority takeover"),
    ("catchup_takeover", r"^Starting an election for a catchup takeover"),
    ("new_term_stepdown", r"(?i)^stepping down from primary, because a new term has begun"),
    ("election", r"(?i)election|stepping down|stepdown"),
    ("shutdown", r"got signal|Received signal|dbexit|shutdown: going to|Now exiting"),
    ("log_rotation", r"[Ll]og rotation"),
    (
        "transaction_expired",
        r"^Aborting transaction with txnNumber \d+ on session with lsid .* because it has been running for longer than 'transactionLifetimeLimitSeconds'",
    ),
    ("slow_transaction", r"^transaction parameters:.* (?P<duration>\d+)ms$"),
    ("slow_network", r"DNS resolution .* took (?P<duration>\d+)ms|Slow network"),
    ("slow_wt_transaction", r"Slow WT transaction"),
];

/// Words each rule's regex needs (one of them, in its case, or in any ASCII case for the `(?i)`
/// rules): a line without them cannot match it.
const RULE_WORDS: [&[&str]; 19] = [
    &["connection accepted from "],
    &["end connection "],
    &["received client metadata from "],
    &[" starting"],
    &["db version v"],
    &["wiredtiger_open config: "],
    &["transition to "],
    &["Attempting to step down in response to replSetStepDown command"],
    &["Starting an election due to step up request"],
    &["Starting an election for a priority takeover"],
    &["Starting an election for a catchup takeover"],
    &["stepping down from primary, because a new term has begun"],
    &["election", "stepping down", "stepdown"],
    &["got signal", "Received signal", "dbexit", "shutdown: going to", "Now exiting"],
    &["Log rotation", "log rotation"],
    &["Aborting transaction with txnNumber "],
    &["transaction parameters:"],
    &["DNS resolution ", "Slow network"],
    &["Slow WT transaction"],
];

/// Every rule's words in any ASCII case (a superset of the lines with them in their case),
/// each with its rule.
static WORDS: LazyLock<(AhoCorasick, Vec<usize>)> = LazyLock::new(|| {
    let (words, rules): (Vec<&str>, Vec<usize>) =
        RULE_WORDS.iter().enumerate().flat_map(|(rule, words)| words.iter().map(move |w| (*w, rule))).unzip();
    // A DFA: the overlapping scan (a word may lie inside another) reads each byte once.
    let automaton = AhoCorasick::builder().ascii_case_insensitive(true).kind(Some(AhoCorasickKind::DFA)).build(words);
    (automaton.expect("a valid set of words"), rules)
});

/// The rules an ASCII text may match (bit i for rule i): one scan of the text for all their
/// words, so a line pays for the regexes of the rules it has the words of, not for all 19.
fn candidate_rules(text: &[u8]) -> u32 {
    let (automaton, rules) = &*WORDS;
    automaton.find_overlapping_iter(text).fold(0u32, |bits, m| bits | 1 << rules[m.pattern().as_usize()])
}

/// Group spans of a match, by group number (0 the whole match).
type Spans = Vec<Option<(usize, usize)>>;

/// The spans of rule `rule`'s ASCII regex on ASCII `text`: the three rules of nearly every
/// line (connections opened, ended, described) read by hand, as their regexes read them
/// (checked against them in the tests), at a tenth of the regex's cost.
fn ascii_spans(rule: usize, text: &[u8]) -> Option<Spans> {
    match rule {
        0 => leftmost(text, &FINDERS[0], accepted),
        1 => leftmost(text, &FINDERS[1], ended),
        2 => {
            let mut no_driver = false;
            leftmost(text, &FINDERS[2], |text, at| metadata(text, at, &mut no_driver))
        }
        _ => ASCII_RULE_REGEXES[rule].captures(text).map(|c| c.iter().map(|m| m.map(|m| (m.start(), m.end()))).collect()),
    }
}

/// The rules read by hand (`ascii_spans`): the first three.
const HAND_READ: usize = 3;

/// The first words of the rules read by hand, then the driver's in client metadata.
static FINDERS: LazyLock<[memchr::memmem::Finder<'static>; 4]> =
    LazyLock::new(|| [RULE_WORDS[0][0], RULE_WORDS[1][0], RULE_WORDS[2][0], "driver: { name: \""].map(memchr::memmem::Finder::new));

/// The leftmost match of a rule whose regex starts with `word` and reads on deterministically
/// (`read`: the groups after the word and the match's end, from the word's end): the first
/// occurrence of the word that `read` accepts.
fn leftmost(text: &[u8], word: &memchr::memmem::Finder, mut read: impl FnMut(&[u8], usize) -> Option<(Spans, usize)>) -> Option<Spans> {
    let mut from = 0;
    while let Some(i) = word.find(&text[from..]).map(|i| from + i) {
        if let Some((mut groups, end)) = read(text, i + word.needle().len()) {
            groups.insert(0, Some((i, end)));
            return Some(groups);
        }
        from = i + 1;
    }
    None
}

/// The end of the run of bytes from `at` that `keep` keeps, None when the run is empty.
fn run(text: &[u8], at: usize, keep: impl Fn(u8) -> bool) -> Option<usize> {
    let end = at + text[at..].iter().take_while(|&&b| keep(b)).count();
    (end > at).then_some(end)
}

/// The position after `word` at `at`, None when it is not there.
fn after(text: &[u8], at: usize, word: &[u8]) -> Option<usize> {
    text[at..].starts_with(word).then_some(at + word.len())
}

/// Python's `\S` on ASCII (pystr::ascii_regex).
fn not_space(b: u8) -> bool {
    !matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | 0x1C..=0x1F | b' ')
}

/// `(?P<count>\d+) connections? now open\)` from `at`: the count's span and the end.
fn open_count(text: &[u8], at: usize) -> Option<((usize, usize), usize)> {
    let digits = run(text, at, |b| b.is_ascii_digit())?;
    let p = after(text, digits, b" connection")?;
    let p = after(text, p, b"s").unwrap_or(p);
    Some(((at, digits), after(text, p, b" now open)")?))
}

/// `(?P<remote>\S+) #\d+ \((?P<count>\d+) connections? now open\)` (a `\S+` run ends where
/// the next byte, which must be a space, is).
fn accepted(text: &[u8], at: usize) -> Option<(Spans, usize)> {
    let remote = run(text, at, not_space)?;
    let p = after(text, remote, b" #")?;
    let p = after(text, run(text, p, |b| b.is_ascii_digit())?, b" (")?;
    let (count, end) = open_count(text, p)?;
    Some((vec![Some((at, remote)), Some(count)], end))
}

/// `(?P<remote>\S+) \((?P<count>\d+) connections? now open\)`.
fn ended(text: &[u8], at: usize) -> Option<(Spans, usize)> {
    let remote = run(text, at, not_space)?;
    let (count, end) = open_count(text, after(text, remote, b" (")?)?;
    Some((vec![Some((at, remote)), Some(count)], end))
}

/// `(?P<remote>\S+) \S+: .*?driver: \{ name: "(?P<driver>[^"]*)", version: "(?P<driver_version>[^"]*)"`:
/// `\S+: ` is a run ending in a colon before the space; the lazy `.*?` (no line holds a newline)
/// takes the first `driver: { name: "` from which the rest reads (a `[^"]*` run ends at the next quote).
/// Once no driver reads from some place, none reads from a later one (`no_driver`): the line's
/// later words are not searched for a driver again, which would take time quadratic in its length.
fn metadata(text: &[u8], at: usize, no_driver: &mut bool) -> Option<(Spans, usize)> {
    let remote = run(text, at, not_space)?;
    let word_at = after(text, remote, b" ")?;
    let word_end = run(text, word_at, not_space)?;
    if word_end - word_at < 2 || text[word_end - 1] != b':' {
        return None;
    }
    let rest = after(text, word_end, b" ")?;
    if *no_driver {
        return None;
    }
    let quoted = |at: usize| at + text[at..].iter().take_while(|&&b| b != b'"').count();
    let finder = &FINDERS[3];
    let mut from = rest;
    while let Some(i) = finder.find(&text[from..]).map(|i| from + i) {
        let name_at = i + finder.needle().len();
        let name_end = quoted(name_at);
        if let Some(version_at) = after(text, name_end, b"\", version: \"") {
            let version_end = quoted(version_at);
            if let Some(end) = after(text, version_end, b"\"") {
                return Some((vec![Some((at, remote)), Some((name_at, name_end)), Some((version_at, version_end))], end));
            }
        }
        from = i + 1;
    }
    *no_driver = true;
    None
}

/// The rules one by one, in order (the first that matches names the kind).
static RULE_REGEXES: LazyLock<Vec<Regex>> = LazyLock::new(|| RULES.iter().map(|(_, p)| pystr::regex(p)).collect());
/// The same for ASCII text (nearly every line), five times faster.
static ASCII_RULE_REGEXES: LazyLock<Vec<regex::bytes::Regex>> =
    LazyLock::new(|| RULES.iter().map(|(_, p)| regex::bytes::Regex::new(&pystr::ascii_regex(p)).expect("a valid pattern")).collect());

static CHECKPOINT_RAN: LazyLock<Regex> = LazyLock::new(|| pystr::regex(r"Checkpoint (?:ran|took) (?:for )?(\d+) seconds"));
static CHECKPOINT_RUNNING: LazyLock<Regex> = LazyLock::new(|| pystr::regex(r"Checkpoint has been running for (\d+) seconds"));
static APP_NAME: LazyLock<Regex> = LazyLock::new(|| pystr::regex(r#"application: \{ name: "([^"]*)""#));

fn seconds_as_ms(digits: &str) -> Option<i64> {
    pystr::int64(digits).and_then(|s| s.checked_mul(1000))
}

/// (kind, duration) of a WiredTiger checkpoint message.
fn checkpoint_kind(text: &str) -> Option<(&'static str, Option<i64>)> {
    if let Some(c) = CHECKPOINT_RAN.captures(text) {
        return Some(("checkpoint", seconds_as_ms(&c[1])));
    }
    if let Some(c) = CHECKPOINT_RUNNING.captures(text) {
        return Some(("checkpoint_progress", seconds_as_ms(&c[1])));
    }
    (text.contains("saving checkpoint snapshot") || text.contains("WT_SESSION.checkpoint")).then_some(("checkpoint", None))
}

/// The typed values of a legacy text line (its text after the context).
pub fn text_values(text: &str) -> EventValues<'_> {
    let mut out = EventValues { kind: "other", text, ..EventValues::default() };
    if text.contains("heckpoint") {
        if let Some((kind, duration)) = checkpoint_kind(text) {
            out.kind = kind;
            out.duration_ms = duration;
            return out;
        }
    }
    let ascii = text.is_ascii();
    // The first rule that matches, and its groups' spans (both regexes of a rule number their groups alike).
    // Non-ASCII text (rare) tries every rule: Unicode case folding could match words in other letters.
    // The rules read by hand come first and cost less than the scan, which waits for the rules after them.
    let mut candidates = (!ascii).then_some(u32::MAX);
    let mut may_match =
        |rule: usize| rule < HAND_READ || *candidates.get_or_insert_with(|| candidate_rules(text.as_bytes())) & 1 << rule != 0;
    let first = (0..RULES.len()).filter(|&rule| may_match(rule)).find_map(|rule| {
        let spans: Option<Spans> = if ascii {
            ascii_spans(rule, text.as_bytes())
        } else {
            RULE_REGEXES[rule].captures(text).map(|c| c.iter().map(|m| m.map(|m| (m.start(), m.end()))).collect())
        };
        spans.map(|spans| (rule, spans))
    });
    let Some((rule, spans)) = first else { return out };
    let names: Vec<Option<&str>> = RULE_REGEXES[rule].capture_names().collect();
    let group = |name: &str| names.iter().position(|n| *n == Some(name)).and_then(|i| spans[i]).map(|(s, e)| &text[s..e]);
    let non_empty = |name: &str| group(name).filter(|g| !g.is_empty());
    out.kind = RULES[rule].0;
    out.remote = group("remote");
    out.connection_count = non_empty("count").and_then(pystr::int64);
    out.duration_ms = non_empty("duration").and_then(pystr::int64);
    if let Some(driver) = non_empty("driver") {
        out.driver = Some(pystr::strip(&format!("{driver} {}", group("driver_version").unwrap_or_default())).to_string());
        out.app_name = APP_NAME.captures(text).and_then(|c| c.get(1)).map(|m| m.as_str());
    }
    if let Some(host) = non_empty("host") {
        out.host = Some(format!("{host}:{}", group("port").unwrap_or_default()));
    }
    out.version = group("version");
    out.new_state = group("new_state");
    out.old_state = group("old_state");
    // The storage engine's open string is what analyses read thresholds from.
    if let Some(config) = group("config") {
        out.text = config;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of the three rules read by hand, and each cut at every byte, with words doubled,
    /// dropped or in another case.
    fn hand_read_texts() -> Vec<String> {
        let lines = [
            "connection accepted from 10.0.0.1:2065 #6677827 (6307 connections now open)",
            "x connection accepted from a #1 (1 connection now open) connection accepted from b #2 (2 connections now open)",
            "connection accepted from a b #1 (1 connection now open) connection accepted from c #1 (7 connection now open)",
            "connection accepted from \x1ca #1 (1 connections now open)connection accepted from connection accepted from d #x (2 connections now open)",
            "end connection 10.0.0.1:2065 (6306 connections now open)",
            "end connection end connection a (1 connection now open) end connection  (2 connections now open)",
            "end connection a\t(1 connection now open) end connection b (12 connectionss now open)",
            r#"received client metadata from 127.0.0.1:45920 conn6: { application: { name: "app" }, driver: { name: "PyMongo", version: "3.8.0" }, os: {} }"#,
            r#"received client metadata from h:1 c: { driver: { name: "", version: "1" } }"#,
            r#"received client metadata from h:1 : driver: { name: "a", version: "1" received client metadata from h:2 c:: x driver: { name: "a"b", version: "2" } driver: { name: "c", version: "3""#,
            r#"received client metadata from h c:driver: { name: "a", version: "1" } received client metadata from  h c: driver: { name: "a", version: "1""#,
        ];
        let mut texts = Vec::new();
        for line in lines {
            for cut in 0..=line.len() {
                texts.push(line[..cut].to_string());
                texts.push(format!("{}{}", &line[..cut], &line[cut.saturating_sub(9)..]));
            }
            texts.push(line.to_uppercase());
            texts.push(line.replace(' ', "  "));
            texts.push(line.replace("connections", "connection"));
        }
        texts
    }

    #[test]
    fn rules_read_by_hand_as_their_regexes_read_them() {
        for text in hand_read_texts() {
            for rule in 0..3 {
                let regex =
                    ASCII_RULE_REGEXES[rule].captures(text.as_bytes()).map(|c| c.iter().map(|m| m.map(|m| (m.start(), m.end()))).collect());
                assert_eq!(ascii_spans(rule, text.as_bytes()), regex, "rule {rule}: {text:?}");
            }
        }
    }

    #[test]
    fn metadata_words_repeated_without_a_driver_are_read_once() {
        // Each prefix reads, no driver does: a driver search from every prefix would take hours (20 MB).
        let text = "received client metadata from a b: driver: { name: \"x\" ".repeat(400_000);
        assert!(!ASCII_RULE_REGEXES[2].is_match(text.as_bytes()));
        assert_eq!(ascii_spans(2, text.as_bytes()), None);
    }

    #[test]
    fn a_line_without_a_rules_words_cannot_match_it() {
        let mut texts = hand_read_texts();
        for (_, pattern) in RULES {
            // Each rule's regex read as a line (its punctuation and groups are words no rule needs), and its words in other cases.
            texts.extend([pattern.to_string(), pattern.to_uppercase(), pattern.to_lowercase()]);
        }
        let words = RULE_WORDS.iter().flat_map(|w| w.iter());
        texts.extend(words.flat_map(|w| [format!("x {w} y"), w.to_uppercase(), w.to_lowercase(), w[1..].to_string()]));
        texts.extend(
            ["Stepping Down from primary, because a new term has begun: 5", "conducting a dry run ELECTION", "StepDown", "Log rotation"]
                .map(String::from),
        );
        texts.extend(
            ["db version v4.2.11", "MongoS version 4.2.1 starting: pid=1 port=27017 a host=h", "transaction parameters: x 105ms"]
                .map(String::from),
        );
        for text in texts.iter().filter(|t| t.is_ascii()) {
            let candidates = candidate_rules(text.as_bytes());
            for (rule, regex) in ASCII_RULE_REGEXES.iter().enumerate() {
                assert!(!regex.is_match(text.as_bytes()) || candidates & 1 << rule != 0, "rule {rule}: {text:?}");
            }
        }
    }

    #[test]
    fn kinds_and_values_of_text_lines() {
        let accepted = text_values("connection accepted from 10.0.0.1:2065 #6677827 (6307 connections now open)");
        assert_eq!((accepted.kind, accepted.remote, accepted.connection_count), ("connection_accepted", Some("10.0.0.1:2065"), Some(6307)));
        let metadata = text_values(
            r#"received client metadata from 127.0.0.1:45920 conn6: { application: { name: "app" }, driver: { name: "PyMongo", version: "3.8.0" }, os: {} }"#,
        );
        assert_eq!((metadata.kind, metadata.driver.as_deref(), metadata.app_name), ("client_metadata", Some("PyMongo 3.8.0"), Some("app")));
        let empty_driver = text_values(r#"received client metadata from h:1 c: { driver: { name: "", version: "1" } }"#);
        assert_eq!((empty_driver.kind, empty_driver.driver), ("client_metadata", None));
        let start = text_values("MongoDB starting : pid=83759 port=27017 dbpath=/data 64-bit host=ip-10");
        assert_eq!((start.kind, start.host.as_deref()), ("startup", Some("ip-10:27017")));
        assert_eq!(text_values("db version v4.2.11").version, Some("4.2.11"));
        assert_eq!(text_values("db version v2.6.1, pdfile version 4.5").version, Some("2.6.1"));
        let config = text_values("wiredtiger_open config: create,cache_size=7680M,");
        assert_eq!((config.kind, config.text), ("storage_config", "create,cache_size=7680M,"));
        let state = text_values("transition to SECONDARY from PRIMARY");
        assert_eq!((state.new_state, state.old_state), (Some("SECONDARY"), Some("PRIMARY")));
        assert_eq!(text_values("Stepping Down from primary, because a new term has begun: 5").kind, "new_term_stepdown");
        assert_eq!(text_values("conducting a dry run ELECTION").kind, "election");
        assert_eq!(text_values("transaction parameters: { lsid: 1 } 105ms").duration_ms, Some(105));
        assert_eq!(text_values("DNS resolution while connecting to x took 2010ms").duration_ms, Some(2010));
        let checkpoint = text_values("Checkpoint took 61 seconds to complete");
        assert_eq!((checkpoint.kind, checkpoint.duration_ms), ("checkpoint", Some(61_000)));
        assert_eq!(text_values("Checkpoint took 99999999999999999 seconds").duration_ms, None);
        assert_eq!(text_values("a checkpoint, nothing else").kind, "other");
        let other = text_values("Successfully authenticated");
        assert_eq!((other.kind, other.text), ("other", "Successfully authenticated"));
    }
}
