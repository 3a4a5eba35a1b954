//! What kind of event a legacy text line is, and its typed values.
//!
//! JSON lines are classified by message id (ftdc/logs/events.py); text lines,
//! which have none, by their words: the first rule that matches names the kind,
//! and its groups give the values (the columns of `events.TYPED_COLUMNS`).

use std::sync::LazyLock;

use regex::{Regex, RegexSet};

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

/// Every rule at once (which match), then the first one's groups.
static RULE_SET: LazyLock<RegexSet> = LazyLock::new(|| {
    let patterns: Vec<Regex> = RULES.iter().map(|(_, p)| pystr::regex(p)).collect();
    RegexSet::new(patterns.iter().map(Regex::as_str)).expect("valid patterns")
});
static RULE_REGEXES: LazyLock<Vec<Regex>> = LazyLock::new(|| RULES.iter().map(|(_, p)| pystr::regex(p)).collect());
/// The same for ASCII text (nearly every line), five times faster.
static ASCII_RULE_SET: LazyLock<regex::bytes::RegexSet> =
    LazyLock::new(|| regex::bytes::RegexSet::new(RULES.iter().map(|(_, p)| pystr::ascii_regex(p))).expect("valid patterns"));
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
    let rule = if ascii { ASCII_RULE_SET.matches(text.as_bytes()).iter().next() } else { RULE_SET.matches(text).iter().next() };
    let Some(rule) = rule else { return out };
    // Group spans by name; both regexes of a rule number their groups alike.
    let spans: Vec<Option<(usize, usize)>> = if ascii {
        let Some(c) = ASCII_RULE_REGEXES[rule].captures(text.as_bytes()) else { return out };
        c.iter().map(|m| m.map(|m| (m.start(), m.end()))).collect()
    } else {
        let Some(c) = RULE_REGEXES[rule].captures(text) else { return out };
        c.iter().map(|m| m.map(|m| (m.start(), m.end()))).collect()
    };
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
