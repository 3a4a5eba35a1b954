//! Query shapes: a command's filter, sort and projection with the values replaced.
//!
//! Two operations that differ only in their literal values get the same shape,
//! as mtools' `json2pattern` and hatchet group them: every scalar becomes 1,
//! EJSON wrappers (`{"$oid": ...}`) count as scalars, and lists of scalars
//! (`$in`) collapse to one 1, so the list length does not split a group. Key
//! order is kept. Sort directions are values too, so `{a: 1}` and `{a: -1}`
//! share a shape. The text is compact JSON written as orjson writes it (the
//! shapes of earlier releases), for JSON and legacy text logs alike.
//!
//! Commands repeat (the same application query), so shapes are cached by
//! command text across the blocks a process decodes.

use std::sync::Mutex;

use serde_json::{Map, Value};

use super::FastMap;

/// Single-key objects that stand for one value in Extended JSON.
const EJSON_WRAPPERS: [&str; 17] = [
    "$oid",
    "$date",
    "$numberLong",
    "$numberInt",
    "$numberDouble",
    "$numberDecimal",
    "$binary",
    "$uuid",
    "$timestamp",
    "$regularExpression",
    "$regex",
    "$symbol",
    "$code",
    "$minKey",
    "$maxKey",
    "$undefined",
    "$dbPointer",
];

/// Where each command keeps its query: the parts that make up its shape.
fn query_keys(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "find" => &["filter", "sort", "projection"],
        "aggregate" => &["pipeline"],
        "count" => &["query"],
        "distinct" => &["key", "query"],
        "findAndModify" | "findandmodify" => &["query", "sort", "fields"],
        "mapReduce" | "mapreduce" => &["query", "sort"],
        // Per-statement WRITE lines log the statement itself: {q: ..., u: ...}.
        "q" => &["q"],
        // An index build is the indexes it builds: each build of one collection its own shape.
        "createIndexes" => &["indexes"],
        _ => return None,
    })
}

/// Batched writes: the shape of the batch is the shape of its first statement.
fn batch_parts(name: &str) -> Option<(&'static str, &'static str)> {
    match name {
        "update" => Some(("updates", "q")),
        "delete" => Some(("deletes", "q")),
        _ => None,
    }
}

/// Shape of a command given as JSON text (and of the command a getMore
/// continues); None when it has no query or is not JSON.
pub fn query_shape(command: &str, originating: Option<&str>) -> Option<String> {
    if command.is_empty() {
        return None;
    }
    let command: Value = serde_json::from_str(command).ok()?;
    let originating: Option<Value> = match originating.filter(|o| !o.is_empty()) {
        Some(text) => Some(serde_json::from_str(text).ok()?),
        None => None,
    };
    let Value::Object(command) = command else { return None };
    let originating = match &originating {
        Some(Value::Object(o)) => Some(o),
        _ => None,
    };
    let parts = query_parts(&command, originating)?;
    Some(written(&parts))
}

/// Shape of a command document read already (a legacy text line's, `shell.rs`).
pub fn shape_of_document(command: &Map<String, Value>) -> Option<String> {
    query_parts(command, None).map(|parts| written(&parts))
}

/// The shape text of a command's query parts.
fn written(parts: &[(&str, &Value)]) -> String {
    let mut out = String::new();
    out.push('{');
    for (i, (key, value)) in parts.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(&mut out, key);
        out.push(':');
        // The distinct key is a field name, kept as written.
        if *key == "key" {
            write_json(&mut out, value, false);
        } else if *key == "indexes" {
            write_json(&mut out, &indexes_shape(value), true);
        } else {
            write_json(&mut out, &normalise(value), true);
        }
    }
    out.push('}');
    out
}

/// A createIndexes' indexes as their shape: each one's key pattern as written (its directions and index types are what
/// it builds, not values) and the names of its options with their values replaced (unique, a partial filter's shape);
/// its name and version left out, as the key pattern says them.
fn indexes_shape(indexes: &Value) -> Value {
    let Value::Array(indexes) = indexes else {
        return normalise(indexes);
    };
    let index_shape = |index: &Value| match index {
        Value::Object(spec) => Value::Object(
            spec.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "name" | "v"))
                .map(|(k, v)| (k.clone(), if k == "key" { key_pattern(v) } else { normalise(v) }))
                .collect(),
        ),
        other => normalise(other),
    };
    Value::Array(indexes.iter().map(index_shape).collect())
}

/// A key pattern as written. A legacy text line keeps every literal as text (`shell.rs`), so a direction read from
/// one (`-1`) is the number it is; no key pattern has a number in quotes for its type.
fn key_pattern(key: &Value) -> Value {
    let Value::Object(fields) = key else {
        return key.clone();
    };
    let as_number = |text: &str| {
        text.parse::<i64>()
            .map(Value::from)
            .ok()
            .or_else(|| text.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number))
    };
    let direction = |value: &Value| match value {
        Value::String(text) => as_number(text).unwrap_or_else(|| value.clone()),
        other => other.clone(),
    };
    Value::Object(fields.iter().map(|(field, value)| (field.clone(), direction(value))).collect())
}

/// The query-defining parts of a command document, or None if it has none.
fn query_parts<'c>(command: &'c Map<String, Value>, originating: Option<&'c Map<String, Value>>) -> Option<Vec<(&'c str, &'c Value)>> {
    let name = command.keys().next()?;
    if let Some(origin) = originating.filter(|o| name == "getMore" && !o.is_empty()) {
        return query_parts(origin, None);
    }
    if let Some((list_key, part)) = batch_parts(name) {
        let first = command.get(list_key)?.as_array()?.first()?.as_object()?;
        return first.get(part).map(|value| vec![(part, value)]);
    }
    let parts: Vec<_> = query_keys(name)?.iter().filter_map(|&key| command.get(key).map(|v| (key, v))).collect();
    (!parts.is_empty()).then_some(parts)
}

const ONE: Value = Value::Null; // stands for the 1 every value becomes; written as `1`

/// Every value replaced by 1 (`ONE`), keys and nesting kept.
fn normalise(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            if map.len() == 1 && map.keys().next().is_some_and(|k| EJSON_WRAPPERS.contains(&k.as_str())) {
                return ONE;
            }
            Value::Object(map.iter().map(|(k, v)| (k.clone(), normalise(v))).collect())
        }
        Value::Array(items) => {
            let items: Vec<Value> = items.iter().map(normalise).collect();
            if items.iter().all(Value::is_null) {
                ONE
            } else {
                Value::Array(items)
            }
        }
        _ => ONE,
    }
}

/// Compact JSON as orjson writes it; `null` here is the normalised 1 (a
/// normalised document has no other null; the distinct `key` is never normalised).
fn write_json(out: &mut String, value: &Value, null_is_one: bool) {
    match value {
        Value::Null => out.push_str(if null_is_one { "1" } else { "null" }),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_f64().filter(|_| n.is_f64()) {
            Some(f) => write_float(out, f),
            None => out.push_str(&n.to_string()),
        },
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, item, null_is_one);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                write_json(out, v, null_is_one);
            }
            out.push('}');
        }
    }
}

fn write_string(out: &mut String, s: &str) {
    // serde_json escapes exactly as orjson: `"`, `\`, \b \f \n \r \t, other controls as \u00xx.
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

/// A float as orjson writes it: shortest round-trip digits, plain notation
/// for exponents -6 to 15 (`0.00001`, `12345600.0`), else `1e+16`, `2.5e-7`.
fn write_float(out: &mut String, f: f64) {
    let sci = format!("{f:e}"); // shortest digits: "-1.25e-7", "1e16"
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = mantissa.strip_prefix('-').map_or(("", mantissa), |m| ("-", m));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    out.push_str(sign);
    if (-6..16).contains(&exp) {
        if exp < 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(&digits);
        } else {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        }
    } else {
        out.push_str(mantissa);
        out.push('e');
        if exp > 0 {
            out.push('+');
        }
        out.push_str(&exp.to_string());
    }
}

/// Shapes by command text (`command` or `command\0originating`: a raw NUL
/// cannot occur in JSON text), shared by every block a process decodes, with
/// the bytes it holds.
static CACHE: Mutex<Option<(Shapes, usize)>> = Mutex::new(None);
/// Shape (None when the command has none) by command text.
type Shapes = FastMap<Box<str>, Option<Box<str>>>;
/// Beyond this many bytes the cache starts over (1 M distinct commands must not pile up).
const CACHE_BYTES: usize = 64 << 20;

/// `query_shape` through the process-wide cache.
pub fn cached_query_shape(command: &str, originating: Option<&str>) -> Option<Box<str>> {
    let key: std::borrow::Cow<str> = match originating {
        Some(o) => format!("{command}\0{o}").into(),
        None => command.into(),
    };
    if let Some(found) = CACHE.lock().ok()?.as_ref().and_then(|(c, _)| c.get(key.as_ref())) {
        return found.clone();
    }
    // Computed outside the lock, so other threads' hits do not wait.
    let shape = query_shape(command, originating).map(String::into_boxed_str);
    if let Ok(mut guard) = CACHE.lock() {
        let (cache, size) = guard.get_or_insert_with(Default::default);
        if *size > CACHE_BYTES {
            cache.clear();
            *size = 0;
        }
        *size += key.len() + shape.as_ref().map_or(0, |s| s.len());
        cache.insert(key.into_owned().into_boxed_str(), shape.clone());
    }
    shape
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(command: &str) -> Option<String> {
        query_shape(command, None)
    }

    #[test]
    fn values_become_one_and_keys_keep_their_order() {
        assert_eq!(
            shape(r#"{"find":"c","filter":{"b":{"$in":[1,2,3]},"a":{"$oid":"x"},"$or":[{"a":1},{"b":"z"}]},"sort":{"a":-1},"limit":3}"#)
                .as_deref(),
            Some(r#"{"filter":{"b":{"$in":1},"a":1,"$or":[{"a":1},{"b":1}]},"sort":{"a":1}}"#)
        );
        assert_eq!(shape(r#"{"find":"c","filter":{"a":[]}}"#).as_deref(), Some(r#"{"filter":{"a":1}}"#));
        assert_eq!(shape(r#"{"find":"c","filter":{"a":1,"a":{"$gt":2}}}"#).as_deref(), Some(r#"{"filter":{"a":{"$gt":1}}}"#));
    }

    #[test]
    fn commands_without_a_query_have_no_shape() {
        for command in [
            "",
            "null",
            "[1]",
            "{}",
            r#"{"insert":"c"}"#,
            r#"{"find":"c"}"#,
            r#"{"update":"c","updates":[]}"#,
            r#"{"update":"c","updates":[{"u":{}}]}"#,
            "{\"find\":",
            r#"{"find":"c","filter":{"a":1E400}}"#,
        ] {
            assert_eq!(shape(command), None, "{command}");
        }
    }

    #[test]
    fn batches_getmores_and_distinct_keys() {
        assert_eq!(shape(r#"{"delete":"c","deletes":[{"q":{"a":5},"limit":1},{"q":{"b":1}}]}"#).as_deref(), Some(r#"{"q":{"a":1}}"#));
        let origin = r#"{"aggregate":"c","pipeline":[{"$match":{"a":2}}]}"#;
        assert_eq!(query_shape(r#"{"getMore":1,"collection":"c"}"#, Some(origin)).as_deref(), Some(r#"{"pipeline":[{"$match":{"a":1}}]}"#));
        assert_eq!(query_shape(r#"{"getMore":1}"#, Some("not json")), None);
        assert_eq!(query_shape(r#"{"getMore":1}"#, Some("{}")), None);
        assert_eq!(
            shape(r#"{"distinct":"c","key":"a\u0001é","query":{"x":null}}"#).as_deref(),
            Some("{\"key\":\"a\\u0001é\",\"query\":{\"x\":1}}")
        );
        assert_eq!(
            shape(r#"{"distinct":"c","key":[1e16,1.5e-7,0.00001,12345600.0,-0.0,5e-324,18446744073709551616]}"#).as_deref(),
            Some(r#"{"key":[1e+16,1.5e-7,0.00001,12345600.0,-0.0,5e-324,1.8446744073709552e+19]}"#)
        );
    }

    #[test]
    fn an_index_build_is_the_indexes_it_builds() {
        let build = |key: &str, name: &str| {
            shape(&format!(r#"{{"createIndexes":"c","indexes":[{{"v":2,"key":{key},"name":"{name}","unique":true}}],"$db":"d"}}"#))
        };
        let text = r#"{"indexes":[{"key":{"_fts":"text","_ftsx":1},"unique":1}]}"#;
        assert_eq!(build(r#"{"_fts":"text","_ftsx":1}"#, "t").as_deref(), Some(text));
        assert_eq!(build(r#"{"a":1}"#, "a_1"), build(r#"{"a":1}"#, "other name"));
        assert_ne!(build(r#"{"a":1}"#, "a_1"), build(r#"{"a":-1}"#, "a_-1"));
        assert_eq!(shape(r#"{"createIndexes":"c","indexes":"x"}"#).as_deref(), Some(r#"{"indexes":1}"#));
        // A legacy text line's literals are text: its directions are written as numbers, its types as strings.
        let legacy = r#"{"createIndexes":"c","indexes":[{"key":{"a":"-1","b":"1.0","c":"text","d":"+1"},"name":"x"}]}"#;
        assert_eq!(shape(legacy).as_deref(), Some(r#"{"indexes":[{"key":{"a":-1,"b":1.0,"c":"text","d":1}}]}"#));
        assert_eq!(shape(r#"{"createIndexes":"c"}"#), None);
    }

    #[test]
    fn cache_gives_the_same_shapes() {
        let command = r#"{"count":"c","query":{"z":1}}"#;
        for _ in 0..2 {
            assert_eq!(cached_query_shape(command, None).as_deref(), Some(r#"{"query":{"z":1}}"#));
            assert_eq!(cached_query_shape(r#"{"getMore":1}"#, Some(command)).as_deref(), Some(r#"{"query":{"z":1}}"#));
        }
    }
}
