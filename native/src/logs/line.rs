//! One log line as serde reads it: lenient leaves (a value of an unexpected
//! JSON type is dropped, not the line), the slow-query and event line structs,
//! and which of the two a line is read as.

use std::borrow::Cow;
use std::marker::PhantomData;

use memchr::memmem::Finder;
use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::SLOW_QUERY_ID;

// ---------------------------------------------------------------------------
// Lenient values

/// A JSON value read as `T`: absent, null, a `T`, or of another JSON type.
/// `Wrong` values are dropped and named in the line's problem.
#[derive(Default)]
pub enum Field<T> {
    #[default]
    Absent,
    Null,
    Value(T),
    Wrong,
}

impl<T> Field<T> {
    pub fn get(&self) -> Option<&T> {
        match self {
            Field::Value(v) => Some(v),
            _ => None,
        }
    }

    pub(super) fn is_wrong(&self) -> bool {
        matches!(self, Field::Wrong)
    }

    /// Dropped where a non-optional field (`ctx: str = ""`) meets null.
    pub(super) fn is_null_or_wrong(&self) -> bool {
        matches!(self, Field::Null | Field::Wrong)
    }
}

/// What a JSON value may become; the default of each conversion is "wrong type".
pub trait Leaf<'de>: Sized {
    fn from_int(_: i64) -> Option<Self> {
        None
    }
    fn from_u64(v: u64) -> Option<Self> {
        i64::try_from(v).ok().and_then(Self::from_int)
    }
    fn from_float(_: f64) -> Option<Self> {
        None
    }
    fn from_str(_: Cow<'de, str>) -> Option<Self> {
        None
    }
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Option<Self>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

impl<'de> Leaf<'de> for i64 {
    fn from_int(v: i64) -> Option<Self> {
        Some(v)
    }
}

impl<'de> Leaf<'de> for f64 {
    fn from_int(v: i64) -> Option<Self> {
        Some(v as f64)
    }
    fn from_u64(v: u64) -> Option<Self> {
        Some(v as f64)
    }
    fn from_float(v: f64) -> Option<Self> {
        Some(v)
    }
}

impl<'de: 'a, 'a> Leaf<'de> for Cow<'a, str> {
    fn from_str(v: Cow<'de, str>) -> Option<Self> {
        Some(v)
    }
}

struct FieldVisitor<T>(PhantomData<T>);

impl<'de, T: Leaf<'de>> FieldVisitor<T> {
    fn wrap(value: Option<T>) -> Field<T> {
        value.map_or(Field::Wrong, Field::Value)
    }
}

impl<'de, T: Leaf<'de>> Visitor<'de> for FieldVisitor<T> {
    type Value = Field<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Field<T>, E> {
        Ok(Field::Wrong)
    }
    fn visit_i64<E>(self, v: i64) -> Result<Field<T>, E> {
        Ok(Self::wrap(T::from_int(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Field<T>, E> {
        Ok(Self::wrap(T::from_u64(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Field<T>, E> {
        Ok(Self::wrap(T::from_float(v)))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Field<T>, E> {
        Ok(Self::wrap(T::from_str(Cow::Borrowed(v))))
    }
    fn visit_str<E>(self, v: &str) -> Result<Field<T>, E> {
        Ok(Self::wrap(T::from_str(Cow::Owned(v.to_owned()))))
    }
    fn visit_string<E>(self, v: String) -> Result<Field<T>, E> {
        Ok(Self::wrap(T::from_str(Cow::Owned(v))))
    }
    fn visit_unit<E>(self) -> Result<Field<T>, E> {
        Ok(Field::Null)
    }
    fn visit_none<E>(self) -> Result<Field<T>, E> {
        Ok(Field::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Field<T>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Field::Wrong)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Field<T>, A::Error> {
        Ok(Self::wrap(T::from_map(map)?))
    }
}

impl<'de, T: Leaf<'de>> Deserialize<'de> for Field<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FieldVisitor(PhantomData))
    }
}

/// A sub-document whose fields are all leaves: any wrong leaf makes the whole
/// sub-document wrong, as typed decoding of the attribute would.
macro_rules! sub_document {
    ($t:ident { $($field:ident: $ty:ty),+ $(,)? }) => {
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        pub struct $t {
            $(pub $field: Field<$ty>,)+
        }

        impl<'de> Leaf<'de> for $t {
            fn from_map<A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
                let v = $t::deserialize(MapAccessDeserializer::new(map))?;
                Ok((!($(v.$field.is_wrong())||+)).then_some(v))
            }
        }
    };
}

sub_document!(StorageData { bytes_read: i64, time_reading_micros: i64, bytes_written: i64, time_writing_micros: i64 });
sub_document!(StorageWaits { cache: i64, schema_lock: i64, handle_lock: i64 });
sub_document!(Storage { data: StorageData, time_waiting_micros: StorageWaits });
sub_document!(Queue { admissions: i64, total_time_queued_micros: i64 });
sub_document!(Queues { execution: Queue, ingress: Queue });
sub_document!(FlowControl { time_acquiring_micros: i64 });

/// `{"$date": "<ISO-8601>"}`; anything else is no timestamp.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Date<'a> {
    #[serde(rename = "$date", borrow)]
    pub date: Field<Cow<'a, str>>,
}

impl<'de: 'a, 'a> Leaf<'de> for Date<'a> {
    fn from_map<A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        let v = Date::deserialize(MapAccessDeserializer::new(map))?;
        Ok(v.date.get().is_some().then_some(v))
    }
}

/// Sum of every `timeAcquiringMicros` mode count in `locks`
/// (`{<resource>: {timeAcquiringMicros: {r: 12, w: 3}, …}}`), None when no
/// resource waited. Any other shape is ignored, never an error.
#[derive(Default)]
pub struct LockWaits(pub Option<i64>);

/// Visits any JSON value; maps go to `on_map`, everything else is skipped.
trait MapOnly<'de>: Sized + Default {
    fn on_map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error>;
}

struct MapOnlyVisitor<T>(PhantomData<T>);

impl<'de, T: MapOnly<'de>> Visitor<'de> for MapOnlyVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_str<E>(self, _: &str) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_unit<E>(self) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(T::default())
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::on_map(map)
    }
}

macro_rules! deserialize_map_only {
    ($t:ty) => {
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(MapOnlyVisitor(PhantomData))
            }
        }
    };
}

/// One lock resource's counters; only the wait map is summed.
#[derive(Default)]
struct ResourceWaits(Option<i64>);

/// The mode counts of one `timeAcquiringMicros` map.
#[derive(Default)]
struct ModeSum(i64);

impl<'de> MapOnly<'de> for LockWaits {
    fn on_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut total = None;
        while let Some((_, ResourceWaits(waits))) = map.next_entry::<IgnoredAny, ResourceWaits>()? {
            if let Some(w) = waits {
                total = Some(total.unwrap_or(0i64).saturating_add(w));
            }
        }
        Ok(LockWaits(total))
    }
}

impl<'de> MapOnly<'de> for ResourceWaits {
    fn on_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut waits = None;
        while let Some(WaitKey(is_wait)) = map.next_key()? {
            if is_wait {
                let ModeSum(sum) = map.next_value()?;
                waits = Some(waits.unwrap_or(0i64).saturating_add(sum));
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(ResourceWaits(waits))
    }
}

impl<'de> MapOnly<'de> for ModeSum {
    fn on_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut sum = 0i64;
        while let Some((_, count)) = map.next_entry::<IgnoredAny, Field<i64>>()? {
            sum = sum.saturating_add(count.get().copied().unwrap_or(0));
        }
        Ok(ModeSum(sum))
    }
}

/// Whether a key is `timeAcquiringMicros`, read without allocating it.
struct WaitKey(bool);

impl<'de> Deserialize<'de> for WaitKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = WaitKey;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E>(self, v: &str) -> Result<WaitKey, E> {
                Ok(WaitKey(v == "timeAcquiringMicros"))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

deserialize_map_only!(LockWaits);
deserialize_map_only!(ResourceWaits);
deserialize_map_only!(ModeSum);

/// A sub-document kept as the exact JSON the server wrote; null stays `null`.
fn raw<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

// ---------------------------------------------------------------------------
// Line structs (docs/log-format.md §1-2)

/// `attr` of id 51803: what the slow_ops frame needs.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct SlowAttr<'a> {
    #[serde(rename = "type", borrow)]
    pub op_type: Field<Cow<'a, str>>,
    #[serde(borrow)]
    pub ns: Field<Cow<'a, str>>,
    #[serde(borrow)]
    pub app_name: Field<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "raw")]
    pub command: Option<&'a RawValue>,
    #[serde(borrow, deserialize_with = "raw")]
    pub originating_command: Option<&'a RawValue>,
    #[serde(borrow)]
    pub plan_summary: Field<Cow<'a, str>>,
    pub keys_examined: Field<i64>,
    pub docs_examined: Field<i64>,
    pub nreturned: Field<i64>,
    pub num_yields: Field<i64>,
    pub write_conflicts: Field<i64>,
    #[serde(borrow)]
    pub query_hash: Field<Cow<'a, str>>,
    #[serde(borrow)]
    pub plan_cache_shape_hash: Field<Cow<'a, str>>,
    #[serde(borrow)]
    pub plan_cache_key: Field<Cow<'a, str>>,
    #[serde(borrow)]
    pub query_shape_hash: Field<Cow<'a, str>>,
    pub ok: Field<f64>,
    #[serde(borrow)]
    pub err_name: Field<Cow<'a, str>>,
    pub err_code: Field<i64>,
    pub reslen: Field<i64>,
    pub locks: LockWaits,
    pub flow_control: Field<FlowControl>,
    pub storage: Field<Storage>,
    pub queues: Field<Queues>,
    pub working_millis: Field<i64>,
    pub cpu_nanos: Field<i64>,
    #[serde(borrow)]
    pub remote: Field<Cow<'a, str>>,
    pub duration_millis: Field<i64>,
}

impl<'de: 'a, 'a> Leaf<'de> for SlowAttr<'a> {
    fn from_map<A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        SlowAttr::deserialize(MapAccessDeserializer::new(map)).map(Some)
    }
}

impl SlowAttr<'_> {
    /// Names of the attributes dropped for their type, in attribute order.
    pub(super) fn wrong(&self) -> impl Iterator<Item = &'static str> {
        [
            ("type", self.op_type.is_wrong()),
            ("ns", self.ns.is_wrong()),
            ("appName", self.app_name.is_wrong()),
            ("planSummary", self.plan_summary.is_wrong()),
            ("keysExamined", self.keys_examined.is_wrong()),
            ("docsExamined", self.docs_examined.is_wrong()),
            ("nreturned", self.nreturned.is_wrong()),
            ("numYields", self.num_yields.is_wrong()),
            ("writeConflicts", self.write_conflicts.is_wrong()),
            ("queryHash", self.query_hash.is_wrong()),
            ("planCacheShapeHash", self.plan_cache_shape_hash.is_wrong()),
            ("planCacheKey", self.plan_cache_key.is_wrong()),
            ("queryShapeHash", self.query_shape_hash.is_wrong()),
            ("ok", self.ok.is_wrong()),
            ("errName", self.err_name.is_wrong()),
            ("errCode", self.err_code.is_wrong()),
            ("reslen", self.reslen.is_wrong()),
            ("flowControl", self.flow_control.is_wrong()),
            ("storage", self.storage.is_wrong()),
            ("queues", self.queues.is_wrong()),
            ("workingMillis", self.working_millis.is_wrong()),
            ("cpuNanos", self.cpu_nanos.is_wrong()),
            ("remote", self.remote.is_wrong()),
            ("durationMillis", self.duration_millis.is_wrong()),
        ]
        .into_iter()
        .filter_map(|(name, wrong)| wrong.then_some(name))
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct SlowLine<'a> {
    #[serde(borrow)]
    pub t: Field<Date<'a>>,
    #[serde(borrow)]
    pub c: Field<Cow<'a, str>>,
    pub id: Field<i64>,
    #[serde(borrow)]
    pub ctx: Field<Cow<'a, str>>,
    #[serde(borrow)]
    pub attr: Field<SlowAttr<'a>>,
    #[serde(borrow, deserialize_with = "raw")]
    pub truncated: Option<&'a RawValue>,
    #[serde(borrow, deserialize_with = "raw")]
    pub size: Option<&'a RawValue>,
}

/// Any other line: the attributes stay JSON text, for the ids asked for.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct EventLine<'a> {
    #[serde(borrow)]
    pub t: Field<Date<'a>>,
    #[serde(borrow)]
    pub s: Field<Cow<'a, str>>,
    #[serde(borrow)]
    pub c: Field<Cow<'a, str>>,
    pub id: Field<i64>,
    #[serde(borrow)]
    pub ctx: Field<Cow<'a, str>>,
    #[serde(borrow)]
    pub msg: Field<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "raw")]
    pub attr: Option<&'a RawValue>,
}

pub(super) fn text<'s>(f: &'s Field<Cow<'_, str>>) -> Option<&'s str> {
    f.get().map(|s| s.as_ref())
}

pub(super) fn timestamp<'s>(t: &'s Field<Date<'_>>) -> Option<&'s str> {
    t.get().and_then(|d| text(&d.date))
}

// ---------------------------------------------------------------------------
// Reading a line

/// Why a line could not be decoded.
pub(super) enum Failure {
    /// The problem's reason.
    Reason(String),
    /// A key occurs twice in an object: typed decoding refuses that.
    DuplicateKey,
}

/// `T` from one line.
fn parse<'a, T: Deserialize<'a>>(line: &'a [u8]) -> Result<T, Failure> {
    let first = line.iter().find(|b| !matches!(b, b' ' | b'\t' | b'\r'));
    if first != Some(&b'{') {
        return Err(Failure::Reason(match serde_json::from_slice::<IgnoredAny>(line) {
            Err(e) => format!("not JSON: {e}"),
            Ok(_) => "not a log object".to_string(),
        }));
    }
    // Every field is lenient, so the only data error left is a repeated key.
    serde_json::from_slice(line).map_err(|e| if e.is_data() { Failure::DuplicateKey } else { Failure::Reason(format!("not JSON: {e}")) })
}

/// The line with each repeated key's last value at its first position, as
/// Python's JSON readers (and so the text-based tools) read it. Values are
/// written back compactly, as mongod writes them.
pub(super) fn without_duplicate_keys(line: &[u8]) -> Result<String, Failure> {
    serde_json::from_slice::<serde_json::Value>(line).map(|v| v.to_string()).map_err(|e| Failure::Reason(format!("not JSON: {e}")))
}

// Not boxed: every line is decoded into one of these and dropped at once, and the slow-query
// line is the case that matters; a box would allocate per line.
#[allow(clippy::large_enum_variant)]
pub(super) enum Decoded<'a> {
    Slow(SlowLine<'a>),
    Event(EventLine<'a>),
}

/// The line as a slow query or an event; the pre-filter only picks which is tried first.
pub(super) fn decode_line<'a>(line: &'a [u8], mark: &Finder) -> Result<Decoded<'a>, Failure> {
    if mark.find(line).is_some() {
        let slow: SlowLine = parse(line)?;
        if slow.id.get() == Some(&SLOW_QUERY_ID) {
            return Ok(Decoded::Slow(slow));
        }
        return parse(line).map(Decoded::Event);
    }
    let event: EventLine = parse(line)?;
    if event.id.get() == Some(&SLOW_QUERY_ID) {
        // Missed by the byte filter (unusual spacing).
        return parse(line).map(Decoded::Slow);
    }
    Ok(Decoded::Event(event))
}
