//! The mongo-shell-syntax documents of legacy text logs (≤ 4.2) and the query
//! shapes made from them.
//!
//! Text logs print documents as the shell does: unquoted keys, `ObjectId(...)`,
//! `new Date(...)`, `/regex/`, `Timestamp(1, 2)`. They are not JSON
//! (docs/log-format.md §6), so this reads just their structure: keys and
//! nesting, every scalar kept as its literal text. That is all a query shape
//! needs; the shape itself is made as for JSON lines (`shape.rs`), with the sort
//! directions put back from the literal texts.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::{pystr, shape};

/// Deeper documents have no shape (the shaper reads JSON with serde_json's limit of
/// 128 levels); such a line is reported.
pub const MAX_DEPTH: usize = 100;

/// Why a document could not be read: not a document of the kind known here (the
/// line keeps no shape, silently), or nested too deep (reported).
#[derive(Debug, PartialEq)]
pub enum Unread {
    Syntax,
    TooDeep,
}

static TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    pystr::regex(concat!(
        r#"\s*(?:"#,
        r#"(?P<punct>[{}\[\]:,])"#,
        r#"|(?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')"#,
        r#"|(?P<regex>/(?:[^/\\\n]|\\.)+/[a-z]*)"#,
        r#"|(?P<word>(?:new\s+)?[^\s{}\[\]:,()"']+(?:\((?:[^()"']|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')*\))?)"#,
        r#")"#,
    ))
});

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Punct,
    String,
    Other,
}

/// Index just past the brace/bracket group opening at `start`, skipping strings.
fn balanced_end(text: &[u8], start: usize) -> Option<usize> {
    let (mut depth, mut i, mut quote) = (0i64, start, None);
    while i < text.len() {
        let c = text[i];
        if let Some(q) = quote {
            if c == b'\\' {
                i += 1;
            } else if c == q {
                quote = None;
            }
        } else if c == b'"' || c == b'\'' {
            quote = Some(c);
        } else if c == b'{' || c == b'[' {
            depth += 1;
        } else if c == b'}' || c == b']' {
            depth -= 1;
            if depth == 0 {
                return Some(i + 1);
            }
        }
        i += 1;
    }
    None
}

fn tokens(text: &str) -> Vec<(Kind, &str)> {
    TOKEN
        .captures_iter(text)
        .filter_map(|c| {
            if let Some(m) = c.name("punct") {
                Some((Kind::Punct, m.as_str()))
            } else if let Some(m) = c.name("string") {
                Some((Kind::String, m.as_str()))
            } else {
                c.name("regex").or(c.name("word")).map(|m| (Kind::Other, m.as_str()))
            }
        })
        .collect()
}

struct Parser<'t> {
    tokens: Vec<(Kind, &'t str)>,
    pos: usize,
}

/// A quoted string without its quotes.
fn unquoted(text: &str) -> &str {
    &text[1..text.len() - 1]
}

impl Parser<'_> {
    fn value(&mut self, depth: usize) -> Result<Value, Unread> {
        let &(kind, text) = self.tokens.get(self.pos).ok_or(Unread::Syntax)?;
        self.pos += 1;
        match (kind, text) {
            (Kind::Punct, "{" | "[") if depth == MAX_DEPTH => Err(Unread::TooDeep),
            (Kind::Punct, "{") => self.object(depth + 1),
            (Kind::Punct, "[") => self.array(depth + 1),
            (Kind::Punct, _) => Err(Unread::Syntax),
            (Kind::String, _) => Ok(Value::String(unquoted(text).into())),
            (Kind::Other, _) => Ok(Value::String(text.into())),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, Unread> {
        let mut out = Map::new();
        while let Some(&(kind, text)) = self.tokens.get(self.pos) {
            match (kind, text) {
                (Kind::Punct, "}") => {
                    self.pos += 1;
                    return Ok(Value::Object(out));
                }
                (Kind::Punct, ",") => self.pos += 1,
                _ => {
                    let key = if kind == Kind::String { unquoted(text) } else { text };
                    if self.tokens.get(self.pos + 1) != Some(&(Kind::Punct, ":")) {
                        return Err(Unread::Syntax);
                    }
                    self.pos += 2;
                    let value = self.value(depth)?;
                    // A repeated key keeps its first place and takes the last value, as a dict does.
                    out.insert(key.into(), value);
                }
            }
        }
        Err(Unread::Syntax)
    }

    fn array(&mut self, depth: usize) -> Result<Value, Unread> {
        let mut out = Vec::new();
        while let Some(&(kind, text)) = self.tokens.get(self.pos) {
            match (kind, text) {
                (Kind::Punct, "]") => {
                    self.pos += 1;
                    return Ok(Value::Array(out));
                }
                (Kind::Punct, ",") => self.pos += 1,
                _ => out.push(self.value(depth)?),
            }
        }
        Err(Unread::Syntax)
    }
}

/// The document that follows `label` (`query: `) in `text`: None when there is
/// none or it is not one of the shell's; Err when it is nested too deep.
pub fn document_after(text: &str, label: &str) -> Result<Option<Map<String, Value>>, Unread> {
    let Some(at) = text.find(label) else { return Ok(None) };
    let after = at + label.len();
    let Some(start) = text[after..].find('{').map(|i| after + i) else { return Ok(None) };
    // The label may name the command before its document: "command: find { ... }".
    if text[after..start].trim_matches(' ').contains(' ') {
        return Ok(None);
    }
    let Some(end) = balanced_end(text.as_bytes(), start) else { return Ok(None) };
    let mut parser = Parser { tokens: tokens(&text[start..end]), pos: 0 };
    match parser.value(0) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(_) | Err(Unread::Syntax) => Ok(None),
        Err(Unread::TooDeep) => Err(Unread::TooDeep),
    }
}

/// The shape of a command document, its sort keys' directions as the command gave them.
pub fn shape_of(command: &Map<String, Value>) -> Option<String> {
    let shape = shape::shape_of_document(command)?;
    Some(with_sort_directions(shape, command))
}

/// A sort document with a descending key, as the command's JSON text shows it
/// (ftdc/logs/shapes.py `_DESCENDING`): only then are directions put back.
static DESCENDING: LazyLock<Regex> = LazyLock::new(|| pystr::regex(r#""\$?sort":\s*\{[^{}]*:\s*"?-"#));

/// Whether a key ending in `sort` holds a document, somewhere in `value`: what
/// DESCENDING needs, checked before the command is written out as JSON for it.
fn has_sort_document(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.iter().any(|(k, v)| (k.ends_with("sort") && v.is_object()) || has_sort_document(v)),
        Value::Array(items) => items.iter().any(has_sort_document),
        _ => false,
    }
}

fn with_sort_directions(shape: String, command: &Map<String, Value>) -> String {
    if !command.iter().any(|(k, v)| (k.ends_with("sort") && v.is_object()) || has_sort_document(v)) {
        return shape;
    }
    let text = serde_json::to_string(command).unwrap_or_default();
    if !DESCENDING.is_match(&text) {
        return shape;
    }
    let Ok(Value::Object(mut parsed)) = serde_json::from_str::<Value>(&shape) else { return shape };
    if let Some(sort) = parsed.get_mut("sort") {
        sorted_like(sort, command.get("sort"));
    }
    if let (Some(Value::Array(stages)), Some(Value::Array(given))) = (parsed.get_mut("pipeline"), command.get("pipeline")) {
        for (stage, given) in stages.iter_mut().zip(given) {
            if let (Value::Object(stage), Value::Object(given)) = (stage, given) {
                if let Some(sort) = stage.get_mut("$sort") {
                    sorted_like(sort, given.get("$sort"));
                }
            }
        }
    }
    Value::Object(parsed).to_string()
}

/// The shape's sort document with each key's direction from the command's own sort
/// (-1 for a literal below zero, 1 for any other number, as it was for anything else).
fn sorted_like(shape_sort: &mut Value, sort: Option<&Value>) {
    let (Value::Object(shape_sort), Some(Value::Object(sort))) = (shape_sort, sort) else { return };
    for (key, value) in shape_sort.iter_mut() {
        if let Some(Value::String(literal)) = sort.get(key) {
            if let Some(negative) = pystr::float_is_negative(literal) {
                *value = Value::from(if negative { -1 } else { 1 });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Option<String> {
        document_after(text, "q: ").unwrap().map(|d| Value::Object(d).to_string())
    }

    #[test]
    fn shell_documents_keep_keys_nesting_and_literals() {
        assert_eq!(
            doc(r#"q: { _id: ObjectId('5d08c1'), "a b": "x,}", d: new Date(1560), r: /^a.b/i, t: Timestamp(1, 2), l: [ 1, { c: -1.0 } ] } tail"#)
                .as_deref(),
            Some(r#"{"_id":"ObjectId('5d08c1')","a b":"x,}","d":"new Date(1560)","r":"/^a.b/i","t":"Timestamp(1, 2)","l":["1",{"c":"-1.0"}]}"#)
        );
        assert_eq!(doc("q: { a: 1, a: { b: 2 }, c: 3 }").as_deref(), Some(r#"{"a":{"b":"2"},"c":"3"}"#));
        assert_eq!(doc("q: { :: 1 }").as_deref(), Some(r#"{":":"1"}"#)); // a punctuation key, as the Python reader took it
        assert_eq!(doc("no label { a: 1 }"), None);
        assert_eq!(doc("q: find { a: 1 }"), Some(r#"{"a":"1"}"#.into()));
        assert_eq!(doc("q: two words { a: 1 }"), None);
        assert_eq!(doc("q: { a: 1 "), None);
        assert_eq!(doc("q: { a 1 }"), None);
        assert_eq!(doc("q: { a: } }"), None);
    }

    #[test]
    fn nesting_is_limited_and_reported() {
        let deep = |n: usize| format!("q: {}1{}", "{ a: ".repeat(n), " }".repeat(n));
        assert!(document_after(&deep(MAX_DEPTH), "q: ").unwrap().is_some());
        assert_eq!(document_after(&deep(MAX_DEPTH + 1), "q: "), Err(Unread::TooDeep));
        let cut = format!("q: {}", "{ a: ".repeat(100_000));
        assert_eq!(document_after(&cut, "q: "), Ok(None));
    }

    #[test]
    fn shapes_put_back_descending_sort_keys() {
        let command = |text: &str| document_after(text, "q: ").unwrap().unwrap();
        let mut find = command("q: { find: 1, filter: { a: 5 }, sort: { a: -1.0, b: 1, c: -0.0, d: \"x\" } }");
        find.insert("find".into(), Value::from(1));
        assert_eq!(shape_of(&find).as_deref(), Some(r#"{"filter":{"a":1},"sort":{"a":-1,"b":1,"c":1,"d":1}}"#));
        let aggregate = command("q: { aggregate: \"c\", pipeline: [ { $match: { a: 1 } }, { $sort: { t: -1 } } ] }");
        assert_eq!(shape_of(&aggregate).as_deref(), Some(r#"{"pipeline":[{"$match":{"a":1}},{"$sort":{"t":-1}}]}"#));
        let ascending = command("q: { find: \"c\", filter: { a: -5 }, sort: { a: 1 } }");
        assert_eq!(shape_of(&ascending).as_deref(), Some(r#"{"filter":{"a":1},"sort":{"a":1}}"#));
    }
}
