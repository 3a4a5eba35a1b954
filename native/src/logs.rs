//! JSON (4.4+) mongod log lines straight into columns.
//!
//! A block of lines is cut into line-aligned ranges that rayon decodes in
//! parallel. Each line is parsed once by serde_json into borrowed structs that
//! hold only what the frames need; every other attribute is skipped without
//! being built. A byte pre-filter on `"id":51803` picks the slow-query struct,
//! and the id is checked after parsing, so a line the filter misjudged is parsed
//! again with the other struct rather than lost.
//!
//! Customer logs are untrusted: a value of an unexpected JSON type costs that
//! value (reported as `unexpected types, dropped: …`), not the line; a line that
//! is not JSON is one problem. Nothing here panics on input.

use std::borrow::Cow;
use std::marker::PhantomData;

use memchr::memmem::Finder;
use std::collections::HashMap;
use rayon::prelude::*;
use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

mod shape;
pub use shape::query_shape;

pub const SLOW_QUERY_ID: i64 = 51803;
const SLOW_QUERY_MARK: &[u8] = b"\"id\":51803";
/// Enough of a bad line to recognise it, not a whole 10 KB attribute dump.
pub const SNIPPET_BYTES: usize = 200;
/// Lines are decoded in ranges of about this size, a few per core per block.
/// Each range becomes its own Arrow chunk, and assembling chunks in Python
/// costs more than finer load balancing gains: 1 MB ranges were 40 % slower.
const RANGE_BYTES: usize = 4 << 20;

pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
/// A range's shape views by command text (commands without an originating one).
type Interned = FastMap<Box<str>, Option<u128>>;

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

    fn is_wrong(&self) -> bool {
        matches!(self, Field::Wrong)
    }

    /// Dropped where a non-optional field (`ctx: str = ""`) meets null.
    fn is_null_or_wrong(&self) -> bool {
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
// Line structs (LOG-FORMAT.md §1-2)

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
    fn wrong(&self) -> impl Iterator<Item = &'static str> {
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

// ---------------------------------------------------------------------------
// Columns

/// int64 values with one validity flag per row.
#[derive(Default)]
pub struct Ints {
    values: Vec<i64>,
    valid: Vec<bool>,
}

impl Ints {
    fn with_capacity(n: usize) -> Self {
        Ints { values: Vec::with_capacity(n), valid: Vec::with_capacity(n) }
    }
    fn push(&mut self, v: Option<i64>) {
        self.values.push(v.unwrap_or(0));
        self.valid.push(v.is_some());
    }
    fn finish(self) -> Column {
        Column::Int { validity: bitmap(&self.valid), values: self.values }
    }
}

#[derive(Default)]
pub struct Bools {
    values: Vec<bool>,
    valid: Vec<bool>,
}

impl Bools {
    fn with_capacity(n: usize) -> Self {
        Bools { values: Vec::with_capacity(n), valid: Vec::with_capacity(n) }
    }
    fn push(&mut self, v: Option<bool>) {
        self.values.push(v.unwrap_or(false));
        self.valid.push(v.is_some());
    }
    fn finish(self) -> Column {
        Column::Bool { validity: bitmap(&self.valid), bits: bitmap(&self.values).unwrap_or_else(|| all_set(self.values.len())) }
    }
}

/// UTF-8 strings as an Arrow string_view column, polars' own string layout,
/// so polars takes the buffers as they are instead of copying every string:
/// a 16-byte view per row (length, then the string itself up to 12 bytes, else
/// its first 4 bytes, buffer index and offset) and the longer strings in data
/// buffers, a new one before offsets would pass i32.
#[derive(Default)]
pub struct Strs {
    views: Vec<u128>,
    buffers: Vec<Vec<u8>>,
    valid: Vec<bool>,
}

const INLINE_BYTES: usize = 12;
const MAX_VIEW_BYTES: usize = i32::MAX as usize;

impl Strs {
    fn with_capacity(n: usize) -> Self {
        Strs { views: Vec::with_capacity(n), buffers: Vec::new(), valid: Vec::with_capacity(n) }
    }

    /// A string longer than a view can address (2 GB) is null.
    fn push(&mut self, v: Option<&str>) {
        let v = v.filter(|s| s.len() <= MAX_VIEW_BYTES);
        let view = v.map_or(0, |s| self.view_of(s.as_bytes()));
        self.push_view(v.map(|_| view));
    }

    /// A view this column made before (the same string again), or null.
    fn push_view(&mut self, view: Option<u128>) {
        self.views.push(view.unwrap_or(0));
        self.valid.push(view.is_some());
    }

    /// The view of `s` (at most MAX_VIEW_BYTES), storing it when it is not inline.
    fn view_of(&mut self, s: &[u8]) -> u128 {
        let mut view = [0u8; 16];
        view[..4].copy_from_slice(&(s.len() as u32).to_le_bytes());
        if s.len() <= INLINE_BYTES {
            view[4..4 + s.len()].copy_from_slice(s);
            return u128::from_le_bytes(view);
        }
        if self.buffers.last().is_none_or(|b| b.len() + s.len() > MAX_VIEW_BYTES) {
            self.buffers.push(Vec::new());
        }
        let index = self.buffers.len() - 1;
        let buffer = &mut self.buffers[index];
        view[4..8].copy_from_slice(&s[..4]);
        view[8..12].copy_from_slice(&(index as u32).to_le_bytes());
        view[12..].copy_from_slice(&(buffer.len() as u32).to_le_bytes());
        buffer.extend_from_slice(s);
        u128::from_le_bytes(view)
    }

    fn finish(self) -> Column {
        Column::Str { validity: bitmap(&self.valid), views: self.views, buffers: self.buffers }
    }
}

/// A finished column, laid out as Arrow buffers (LSB-first bitmaps).
pub enum Column {
    Int { values: Vec<i64>, validity: Option<Vec<u8>> },
    Bool { bits: Vec<u8>, validity: Option<Vec<u8>> },
    Str { views: Vec<u128>, buffers: Vec<Vec<u8>>, validity: Option<Vec<u8>> },
}

/// The bitmap of `flags`, None when every flag is set (no validity buffer needed).
fn bitmap(flags: &[bool]) -> Option<Vec<u8>> {
    if flags.iter().all(|&f| f) {
        return None;
    }
    let mut bits = vec![0u8; flags.len().div_ceil(8)];
    for (i, _) in flags.iter().enumerate().filter(|(_, &f)| f) {
        bits[i / 8] |= 1 << (i % 8);
    }
    Some(bits)
}

fn all_set(n: usize) -> Vec<u8> {
    vec![0xff; n.div_ceil(8)]
}

pub struct Table {
    pub rows: usize,
    pub columns: Vec<(&'static str, Column)>,
}

macro_rules! table {
    ($(#[$meta:meta])* $name:ident { $($col:ident: $kind:ident),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Default)]
        pub struct $name {
            $(pub $col: $kind,)+
        }

        impl $name {
            /// Room for `rows` rows, so columns do not grow (and fault pages) twice.
            fn with_capacity(rows: usize) -> Self {
                $name { $($col: $kind::with_capacity(rows),)+ }
            }

            fn finish(self) -> Table {
                let rows = self.line.values.len();
                // Python reads `rows` values from every column's buffers
                // (json_lines._batch): a shorter column would be read past its end.
                $(assert_eq!(self.$col.valid.len(), rows, concat!("rows of column ", stringify!($col)));)+
                Table { rows, columns: vec![$((stringify!($col), self.$col.finish()),)+] }
            }
        }
    };
}

table!(
    /// The slow_ops columns that do not need other files (`columns.SLOW_OPS_BEFORE_JOINS`)
    /// but `started` and `file`; `ts` is UTC milliseconds, `t` the timestamp text
    /// where it is not in a form read here (polars reads it then).
    SlowColumns {
        ts: Ints, t: Strs, component: Strs, connection: Strs, op_type: Strs, command: Strs, write_statement: Bools,
        ns: Strs, db: Strs, coll: Strs, app_name: Strs,
        command_json: Strs, originating_command_json: Strs, shape: Strs, plan_summary: Strs, plan_kind: Strs,
        keys_examined: Ints, docs_examined: Ints, nreturned: Ints, num_yields: Ints,
        query_hash: Strs, plan_cache_key: Strs, query_shape_hash: Strs,
        ok: Bools, err_name: Strs, err_code: Ints, reslen: Ints, write_conflicts: Ints,
        lock_wait_micros: Ints, flow_control_micros: Ints,
        cache_wait_micros: Ints, schema_lock_wait_micros: Ints, handle_lock_wait_micros: Ints,
        bytes_read: Ints, read_micros: Ints, bytes_written: Ints, write_micros: Ints,
        execution_queued_micros: Ints, execution_admissions: Ints, ingress_queued_micros: Ints,
        working_ms: Ints, cpu_nanos: Ints, remote: Strs, duration_ms: Ints,
        truncated: Strs, truncated_size: Strs, line: Ints,
    }
);

table!(
    /// Every other line; `attr` is the attributes' JSON text for the ids asked for.
    EventColumns { t: Strs, severity: Strs, component: Strs, id: Ints, ctx: Strs, msg: Strs, attr: Strs, line: Ints }
);

fn text<'s>(f: &'s Field<Cow<'_, str>>) -> Option<&'s str> {
    f.get().map(|s| s.as_ref())
}

/// A non-optional string (`ctx`, `s`, …): "" when absent, dropped when null or wrong.
fn text_or_empty<'s>(f: &'s Field<Cow<'_, str>>, name: &'static str, dropped: &mut Vec<&'static str>) -> &'s str {
    if f.is_null_or_wrong() {
        dropped.push(name);
    }
    text(f).unwrap_or("")
}

fn timestamp<'s>(t: &'s Field<Date<'_>>) -> Option<&'s str> {
    t.get().and_then(|d| text(&d.date))
}

/// UTC milliseconds of `YYYY-MM-DDTHH:MM:SS.mmm` with `Z`, `±HH:MM` or
/// `±HHMM`: every form mongod writes. Anything else (None) is left to polars.
pub fn utc_millis(t: &str) -> Option<i64> {
    let b = t.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let digits = b.get(from..from + len)?;
        digits.iter().try_fold(0i64, |n, &d| d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0')))
    };
    let separators = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':'), (19, b'.')];
    if b.len() < 24 || separators.iter().any(|&(i, c)| b[i] != c) {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second, millis) = (num(11, 2)?, num(14, 2)?, num(17, 2)?, num(20, 3)?);
    let offset_minutes = match &b[23..] {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), ..] => {
            let minutes_at = if b.get(26) == Some(&b':') { 27 } else { 26 };
            if b.len() != minutes_at + 2 {
                return None;
            }
            let (h, m) = (num(24, 2)?, num(minutes_at, 2)?);
            if h > 23 || m > 59 {
                return None;
            }
            if *sign == b'+' { h * 60 + m } else { -(h * 60 + m) }
        }
        _ => return None,
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    if !(1..=12).contains(&month) || day < 1 || day > month_days[month as usize - 1] || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    // Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((((days * 24 + hour) * 60 + minute - offset_minutes) * 60 + second) * 1000 + millis)
}

/// The command name: the first key of the command document as written, as
/// the regex `^\{\s*"([^"]+)"` reads it (escapes are not decoded).
fn first_key(command: &str) -> Option<&str> {
    let rest = command.strip_prefix('{')?.trim_start_matches([' ', '\t', '\n', '\r']).strip_prefix('"')?;
    let key = &rest[..rest.find('"')?];
    (!key.is_empty()).then_some(key)
}

/// Commands on one collection that mongod logs against `<db>.$cmd`.
const COLLECTION_COMMANDS: [&str; 5] = ["insert", "update", "delete", "findAndModify", "findandmodify"];

/// The collection a write command names: its first value, when that is a plain string
/// (`{"update":"orders",...}` -> `orders`; escapes are not decoded, so such names are left alone).
fn command_target(command: &str) -> Option<&str> {
    let rest = command.strip_prefix('{')?.trim_start_matches([' ', '\t', '\n', '\r']).strip_prefix('"')?;
    let rest = &rest[rest.find('"')? + 1..];
    let rest = rest.trim_start_matches([' ', '\t', '\n', '\r']).strip_prefix(':')?.trim_start_matches([' ', '\t', '\n', '\r']).strip_prefix('"')?;
    let name = &rest[..rest.find('"')?];
    (!name.is_empty() && !name.contains('\\')).then_some(name)
}

/// The namespace of a slow operation: write commands logged against `<db>.$cmd` are
/// about the collection they name (LOG-FORMAT.md §4), so `shop.$cmd` becomes `shop.orders`.
fn operation_ns<'a>(ns: Option<&'a str>, name: Option<&str>, command: Option<&'a str>) -> Option<std::borrow::Cow<'a, str>> {
    let db = ns?.strip_suffix(".$cmd");
    match (db, name, command) {
        (Some(db), Some(name), Some(command)) if COLLECTION_COMMANDS.contains(&name) => match command_target(command) {
            Some(coll) => Some(format!("{db}.{coll}").into()),
            None => ns.map(Into::into),
        },
        _ => ns.map(Into::into),
    }
}

/// The plan kind: the leading `[A-Z_]+` of the plan summary (`IXSCAN { a: 1 }`).
fn plan_kind(summary: &str) -> Option<&str> {
    let end = summary.bytes().position(|b| !(b.is_ascii_uppercase() || b == b'_')).unwrap_or(summary.len());
    (end > 0).then(|| &summary[..end])
}

/// `db` and `coll` of a namespace: split at the first dot, as polars' `splitn(".", 2)`.
fn db_and_coll(ns: Option<&str>) -> (Option<&str>, Option<&str>) {
    match ns.map(|ns| ns.split_once('.').ok_or(ns)) {
        None => (None, None),
        Some(Ok((db, coll))) => (Some(db), Some(coll)),
        Some(Err(db)) => (Some(db), None),
    }
}

impl SlowColumns {
    /// The shape of the command: computed once per distinct command text in a
    /// range, its bytes stored once per range.
    fn push_shape(&mut self, command: Option<&str>, originating: Option<&str>, interned: &mut Interned) {
        let Some(command) = command else { return self.shape.push_view(None) };
        if originating.is_none() {
            if let Some(&view) = interned.get(command) {
                return self.shape.push_view(view);
            }
        }
        let shape = shape::cached_query_shape(command, originating);
        let view = shape.filter(|s| s.len() <= MAX_VIEW_BYTES).map(|s| self.shape.view_of(s.as_bytes()));
        if originating.is_none() {
            interned.insert(command.into(), view);
        }
        self.shape.push_view(view);
    }

    fn push(&mut self, line: &SlowLine, number: i64, interned: &mut Interned, dropped: &mut Vec<&'static str>) {
        static NO_ATTR: SlowAttr<'static> = SlowAttr {
            op_type: Field::Absent, ns: Field::Absent, app_name: Field::Absent, command: None,
            originating_command: None, plan_summary: Field::Absent, keys_examined: Field::Absent,
            docs_examined: Field::Absent, nreturned: Field::Absent, num_yields: Field::Absent,
            write_conflicts: Field::Absent, query_hash: Field::Absent, plan_cache_shape_hash: Field::Absent,
            plan_cache_key: Field::Absent, query_shape_hash: Field::Absent, ok: Field::Absent,
            err_name: Field::Absent, err_code: Field::Absent, reslen: Field::Absent, locks: LockWaits(None),
            flow_control: Field::Absent, storage: Field::Absent, queues: Field::Absent,
            working_millis: Field::Absent, cpu_nanos: Field::Absent, remote: Field::Absent,
            duration_millis: Field::Absent,
        };
        if line.c.is_null_or_wrong() {
            dropped.push("c");
        }
        let connection = text_or_empty(&line.ctx, "ctx", dropped);
        if line.attr.is_wrong() {
            dropped.push("attr");
        }
        let a = line.attr.get().unwrap_or(&NO_ATTR);
        dropped.extend(a.wrong().map(attr_name));
        let int = |f: &Field<i64>| f.get().copied();
        let storage = a.storage.get();
        let data = storage.and_then(|s| s.data.get());
        let waits = storage.and_then(|s| s.time_waiting_micros.get());
        let queues = a.queues.get();
        let execution = queues.and_then(|q| q.execution.get());
        let ingress = queues.and_then(|q| q.ingress.get());

        let t = timestamp(&line.t);
        let ts = t.and_then(utc_millis);
        self.ts.push(ts);
        self.t.push(t.filter(|_| ts.is_none()));
        let component = text(&line.c);
        self.component.push(component);
        self.connection.push(Some(connection));
        let op_type = text(&a.op_type);
        self.op_type.push(op_type);
        // A WRITE line is one statement of a write command, named by its type.
        let is_statement = component == Some("WRITE");
        let command = a.command.map(RawValue::get);
        let name = command.and_then(first_key);
        self.command.push(op_type.filter(|_| is_statement).or(name));
        self.write_statement.push(Some(is_statement));
        let ns = operation_ns(text(&a.ns), name.filter(|_| !is_statement), command);
        let ns = ns.as_deref();
        self.ns.push(ns);
        let (db, coll) = db_and_coll(ns);
        self.db.push(db);
        self.coll.push(coll);
        self.app_name.push(text(&a.app_name));
        self.command_json.push(command);
        let originating = a.originating_command.map(RawValue::get);
        self.originating_command_json.push(originating);
        self.push_shape(command, originating, interned);
        let plan = text(&a.plan_summary);
        self.plan_summary.push(plan);
        self.plan_kind.push(plan.and_then(plan_kind));
        self.keys_examined.push(int(&a.keys_examined));
        self.docs_examined.push(int(&a.docs_examined));
        self.nreturned.push(int(&a.nreturned));
        self.num_yields.push(int(&a.num_yields));
        self.query_hash.push(text(&a.query_hash).or(text(&a.plan_cache_shape_hash)));
        self.plan_cache_key.push(text(&a.plan_cache_key));
        self.query_shape_hash.push(text(&a.query_shape_hash));
        let err_name = text(&a.err_name);
        // No `ok` but an error name: the operation failed.
        self.ok.push(a.ok.get().map(|&ok| ok != 0.0).or(err_name.map(|_| false)));
        self.err_name.push(err_name);
        self.err_code.push(int(&a.err_code));
        self.reslen.push(int(&a.reslen));
        self.write_conflicts.push(int(&a.write_conflicts));
        self.lock_wait_micros.push(a.locks.0);
        self.flow_control_micros.push(a.flow_control.get().and_then(|f| int(&f.time_acquiring_micros)));
        self.cache_wait_micros.push(waits.and_then(|w| int(&w.cache)));
        self.schema_lock_wait_micros.push(waits.and_then(|w| int(&w.schema_lock)));
        self.handle_lock_wait_micros.push(waits.and_then(|w| int(&w.handle_lock)));
        self.bytes_read.push(data.and_then(|d| int(&d.bytes_read)));
        self.read_micros.push(data.and_then(|d| int(&d.time_reading_micros)));
        self.bytes_written.push(data.and_then(|d| int(&d.bytes_written)));
        self.write_micros.push(data.and_then(|d| int(&d.time_writing_micros)));
        self.execution_queued_micros.push(execution.and_then(|q| int(&q.total_time_queued_micros)));
        self.execution_admissions.push(execution.and_then(|q| int(&q.admissions)));
        self.ingress_queued_micros.push(ingress.and_then(|q| int(&q.total_time_queued_micros)));
        self.working_ms.push(int(&a.working_millis));
        self.cpu_nanos.push(int(&a.cpu_nanos));
        self.remote.push(text(&a.remote));
        self.duration_ms.push(int(&a.duration_millis));
        self.truncated.push(line.truncated.map(RawValue::get));
        self.truncated_size.push(line.size.map(RawValue::get));
        self.line.push(Some(number));
    }
}

/// `attr.<name>` for the problem text, without allocating per line.
fn attr_name(name: &'static str) -> &'static str {
    macro_rules! prefixed {
        ($($n:literal),+) => {
            match name { $($n => concat!("attr.", $n),)+ _ => "attr" }
        };
    }
    prefixed!(
        "type", "ns", "appName", "planSummary", "keysExamined", "docsExamined", "nreturned", "numYields",
        "writeConflicts", "queryHash", "planCacheShapeHash", "planCacheKey", "queryShapeHash", "ok", "errName",
        "errCode", "reslen", "flowControl", "storage", "queues", "workingMillis", "cpuNanos", "remote",
        "durationMillis"
    )
}

impl EventColumns {
    fn push(&mut self, line: &EventLine, number: i64, attr_ids: &[i64], dropped: &mut Vec<&'static str>) {
        let severity = text_or_empty(&line.s, "s", dropped);
        let component = text_or_empty(&line.c, "c", dropped);
        if line.id.is_wrong() {
            dropped.push("id");
        }
        let id = line.id.get().copied();
        let ctx = text_or_empty(&line.ctx, "ctx", dropped);
        let msg = text_or_empty(&line.msg, "msg", dropped);
        self.t.push(timestamp(&line.t));
        self.severity.push(Some(severity));
        self.component.push(Some(component));
        self.id.push(id);
        self.ctx.push(Some(ctx));
        self.msg.push(Some(msg));
        let wanted = id.is_some_and(|id| attr_ids.contains(&id));
        self.attr.push(line.attr.filter(|_| wanted).map(RawValue::get));
        self.line.push(Some(number));
    }
}

// ---------------------------------------------------------------------------
// Blocks

pub struct Problem {
    pub line: i64,
    pub reason: String,
    pub text: String,
}

/// The decoded lines of one block: slow ops and events as one table per
/// line range (Arrow chunks, so ranges are never copied together), problems.
pub struct Block {
    pub slow_ops: Vec<Table>,
    pub events: Vec<Table>,
    pub problems: Vec<Problem>,
    /// Lines in the block, so callers can number the next block without a pass of their own.
    pub lines: i64,
}

struct Partial {
    slow: SlowColumns,
    events: EventColumns,
    problems: Vec<Problem>,
    lines: i64,
}

impl Partial {
    fn problem(&mut self, number: i64, reason: String, line: &[u8]) {
        let text = String::from_utf8_lossy(&line[..line.len().min(SNIPPET_BYTES)]).into_owned();
        self.problems.push(Problem { line: number, reason, text });
    }

    /// Renumbers lines by `base` (the block's line number of this range's first line).
    fn shift(&mut self, base: i64) {
        self.slow.line.values.iter_mut().for_each(|n| *n += base);
        self.events.line.values.iter_mut().for_each(|n| *n += base);
        self.problems.iter_mut().for_each(|p| p.line += base);
    }
}

fn is_blank(line: &[u8]) -> bool {
    // Python's bytes.strip() whitespace, which the text decoders share.
    line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
}

/// Why a line could not be decoded.
enum Failure {
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
fn without_duplicate_keys(line: &[u8]) -> Result<String, Failure> {
    serde_json::from_slice::<serde_json::Value>(line)
        .map(|v| v.to_string())
        .map_err(|e| Failure::Reason(format!("not JSON: {e}")))
}

enum Decoded<'a> {
    Slow(SlowLine<'a>),
    Event(EventLine<'a>),
}

/// The line as a slow query or an event; the pre-filter only picks which is tried first.
fn decode_line<'a>(line: &'a [u8], mark: &Finder) -> Result<Decoded<'a>, Failure> {
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

fn decode_range(range: &[u8], mark: &Finder, attr_ids: &[i64]) -> Partial {
    let lines = memchr::memchr_iter(b'\n', range).count() + 1;
    let slow = mark.find_iter(range).count().min(lines);
    let mut out = Partial {
        slow: SlowColumns::with_capacity(slow),
        events: EventColumns::with_capacity(lines - slow),
        problems: Vec::new(),
        lines: 0,
    };
    let mut interned = Interned::default();
    let mut dropped = Vec::new();
    let mut start = 0;
    let mut number = 0i64;
    while start < range.len() {
        let end = memchr::memchr(b'\n', &range[start..]).map_or(range.len(), |i| start + i);
        let line = &range[start..end];
        start = end + 1;
        number += 1;
        if is_blank(line) {
            out.problem(number, "blank line".into(), line);
            continue;
        }
        let rebuilt;
        let decoded = match decode_line(line, mark) {
            Err(Failure::DuplicateKey) => match without_duplicate_keys(line) {
                Ok(text) => {
                    rebuilt = text;
                    decode_line(rebuilt.as_bytes(), mark)
                }
                Err(failure) => Err(failure),
            },
            other => other,
        };
        let decoded = match decoded {
            Ok(d) => d,
            Err(Failure::Reason(reason)) => {
                out.problem(number, reason, line);
                continue;
            }
            Err(Failure::DuplicateKey) => {
                out.problem(number, "not a log object: repeated keys".into(), line);
                continue;
            }
        };
        let t = match &decoded {
            Decoded::Slow(s) => &s.t,
            Decoded::Event(e) => &e.t,
        };
        if timestamp(t).is_none() {
            out.problem(number, "no timestamp".into(), line);
            continue;
        }
        dropped.clear();
        match &decoded {
            Decoded::Slow(s) => out.slow.push(s, number, &mut interned, &mut dropped),
            Decoded::Event(e) => out.events.push(e, number, attr_ids, &mut dropped),
        }
        if !dropped.is_empty() {
            out.problem(number, format!("unexpected types, dropped: {}", dropped.join(", ")), line);
        }
    }
    out.lines = number;
    out
}

/// Line-aligned ranges of about `target` bytes (a range holds whole lines), at least one.
fn ranges(data: &[u8], target: usize) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < data.len() {
        let mut end = (start + target).min(data.len());
        if end < data.len() {
            end = memchr::memchr(b'\n', &data[end..]).map_or(data.len(), |i| end + i + 1);
        }
        out.push(&data[start..end]);
        start = end;
    }
    if out.is_empty() {
        out.push(data); // one empty table, so the columns are there
    }
    out
}

/// Decodes the lines of `data` (split at `\n`, a final empty piece is no line),
/// numbering them from `first_line`. `attr_ids`: event ids whose attributes are
/// returned as JSON text.
pub fn decode_block(data: &[u8], first_line: i64, attr_ids: &[i64]) -> Block {
    decode_ranges(data, first_line, attr_ids, RANGE_BYTES)
}

fn decode_ranges(data: &[u8], first_line: i64, attr_ids: &[i64], range_bytes: usize) -> Block {
    let mark = Finder::new(SLOW_QUERY_MARK);
    let partials: Vec<Partial> = ranges(data, range_bytes).into_par_iter().map(|r| decode_range(r, &mark, attr_ids)).collect();
    let mut block = Block { slow_ops: Vec::new(), events: Vec::new(), problems: Vec::new(), lines: 0 };
    let mut base = first_line - 1;
    for mut p in partials {
        p.shift(base);
        base += p.lines;
        block.lines += p.lines;
        block.slow_ops.push(p.slow.finish());
        block.events.push(p.events.finish());
        block.problems.append(&mut p.problems);
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLOW: &str = r#"{"t":{"$date":"2024-01-02T03:04:05.678+01:00"},"s":"I",  "c":"COMMAND",  "id":51803,   "ctx":"conn7","msg":"Slow query","attr":{"type":"command","ns":"db.c","appName":"app","command":{"find":"c","filter":{"a":1}},"planSummary":"COLLSCAN","keysExamined":0,"docsExamined":10,"nreturned":1,"queryHash":"ABC","planCacheKey":"DEF","ok":1,"reslen":100,"locks":{"Global":{"acquireCount":{"r":1},"timeAcquiringMicros":{"r":12,"w":3}},"Database":{"timeAcquiringMicros":{"r":5}}},"flowControl":{"acquireCount":1,"timeAcquiringMicros":7},"storage":{"data":{"bytesRead":100,"timeReadingMicros":20},"timeWaitingMicros":{"cache":9}},"protocol":"op_msg","durationMillis":40}}"#;
    const EVENT: &str = r#"{"t":{"$date":"2024-01-02T02:00:00.000Z"},"s":"I","c":"NETWORK","id":22943,"ctx":"listener","msg":"Connection accepted","attr":{"remote":"1.2.3.4:5","connectionCount":3}}"#;

    fn column<'t>(table: &'t Table, name: &str) -> &'t Column {
        &table.columns.iter().find(|(n, _)| *n == name).unwrap().1
    }

    fn valid(validity: &Option<Vec<u8>>, i: usize) -> bool {
        validity.as_ref().is_none_or(|bits| bits[i / 8] & (1 << (i % 8)) != 0)
    }

    fn ints(tables: &[Table], name: &str) -> Vec<Option<i64>> {
        let mut out = Vec::new();
        for table in tables {
            let Column::Int { values, validity } = column(table, name) else { panic!("{name} is not int64") };
            out.extend(values.iter().enumerate().map(|(i, v)| valid(validity, i).then_some(*v)));
        }
        out
    }

    fn strs(tables: &[Table], name: &str) -> Vec<Option<String>> {
        let mut out = Vec::new();
        for table in tables {
            let Column::Str { views, buffers, validity } = column(table, name) else { panic!("{name} is not a string") };
            out.extend(views.iter().enumerate().map(|(i, view)| {
                let b = view.to_le_bytes();
                let word = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
                let len = word(0);
                let text = if len <= 12 { b[4..4 + len].to_vec() } else { buffers[word(8)][word(12)..word(12) + len].to_vec() };
                assert!(len <= 12 || text[..4] == b[4..8], "view prefix");
                valid(validity, i).then(|| String::from_utf8(text).unwrap())
            }));
        }
        out
    }

    fn bools(tables: &[Table], name: &str) -> Vec<Option<bool>> {
        let mut out = Vec::new();
        for table in tables {
            let Column::Bool { bits, validity } = column(table, name) else { panic!("{name} is not bool") };
            out.extend((0..table.rows).map(|i| valid(validity, i).then(|| bits[i / 8] & (1 << (i % 8)) != 0)));
        }
        out
    }

    fn rows(tables: &[Table]) -> usize {
        tables.iter().map(|t| t.rows).sum()
    }

    fn problems(block: &Block) -> Vec<(i64, &str)> {
        block.problems.iter().map(|p| (p.line, p.reason.as_str())).collect()
    }

    fn one(s: &str) -> Option<String> {
        Some(s.to_string())
    }

    #[test]
    fn slow_query_columns() {
        let block = decode_block(format!("{SLOW}\n{EVENT}\n").as_bytes(), 1, &[22943]);
        let slow = &block.slow_ops;
        assert_eq!(rows(&slow), 1);
        assert!(block.problems.is_empty());
        assert_eq!(ints(slow, "ts"), [Some(1_704_161_045_678)]);
        assert_eq!(strs(slow, "t"), [None]);
        assert_eq!(strs(slow, "command"), [one("find")]);
        assert_eq!(bools(slow, "write_statement"), [Some(false)]);
        assert_eq!((strs(slow, "db"), strs(slow, "coll")), (vec![one("db")], vec![one("c")]));
        assert_eq!(strs(slow, "plan_kind"), [one("COLLSCAN")]);
        assert_eq!(strs(slow, "shape"), [one(r#"{"filter":{"a":1}}"#)]);
        assert_eq!(strs(slow, "component"), [one("COMMAND")]);
        assert_eq!(strs(slow, "connection"), [one("conn7")]);
        assert_eq!(strs(slow, "command_json"), [one(r#"{"find":"c","filter":{"a":1}}"#)]);
        assert_eq!(strs(slow, "originating_command_json"), [None]);
        assert_eq!(strs(slow, "query_hash"), [one("ABC")]);
        assert_eq!(ints(slow, "docs_examined"), [Some(10)]);
        assert_eq!(ints(slow, "lock_wait_micros"), [Some(20)]);
        assert_eq!(ints(slow, "flow_control_micros"), [Some(7)]);
        assert_eq!(ints(slow, "cache_wait_micros"), [Some(9)]);
        assert_eq!(ints(slow, "schema_lock_wait_micros"), [None]);
        assert_eq!(ints(slow, "bytes_read"), [Some(100)]);
        assert_eq!(ints(slow, "duration_ms"), [Some(40)]);
        assert_eq!(ints(slow, "working_ms"), [None]);
        assert_eq!(bools(slow, "ok"), [Some(true)]);
        assert_eq!(ints(slow, "line"), [Some(1)]);
        let events = &block.events;
        assert_eq!(rows(&events), 1);
        assert_eq!(ints(events, "id"), [Some(22943)]);
        assert_eq!(strs(events, "attr"), [one(r#"{"remote":"1.2.3.4:5","connectionCount":3}"#)]);
        assert_eq!(ints(events, "line"), [Some(2)]);
    }

    #[test]
    fn attributes_only_for_ids_asked_for() {
        let block = decode_block(EVENT.as_bytes(), 1, &[1]);
        assert_eq!(strs(&block.events, "attr"), [None]);
    }

    #[test]
    fn pre_filter_misses_and_false_hits_are_decoded_by_their_id() {
        let spaced = SLOW.replace(r#""id":51803"#, r#""id": 51803"#);
        let mentions = EVENT.replace("listener", r#"\"id\":51803"#).replace(r#""remote""#, r#""x":"\"id\":51803","remote""#);
        let not_escaped = EVENT.replace(r#""msg":"Connection accepted""#, r#""msg":"\"id\":51803""#);
        let block = decode_block(format!("{spaced}\n{mentions}\n{not_escaped}").as_bytes(), 1, &[]);
        assert_eq!(ints(&block.slow_ops, "line"), [Some(1)]);
        assert_eq!(ints(&block.slow_ops, "duration_ms"), [Some(40)]);
        assert_eq!(ints(&block.events, "line"), [Some(2), Some(3)]);
        assert!(block.problems.is_empty());
    }

    #[test]
    fn hash_falls_back_to_plan_cache_shape_hash_and_error_name_means_not_ok() {
        let line = r#"{"t":{"$date":"2025-01-01T00:00:00Z"},"c":"COMMAND","id":51803,"attr":{"planCacheShapeHash":"X1","errName":"Boom","queues":{"execution":{"admissions":2,"totalTimeQueuedMicros":5}}}}"#;
        let block = decode_block(line.as_bytes(), 1, &[]);
        let slow = &block.slow_ops;
        assert_eq!(strs(slow, "query_hash"), [one("X1")]);
        assert_eq!(bools(slow, "ok"), [Some(false)]);
        assert_eq!(ints(slow, "execution_admissions"), [Some(2)]);
        assert_eq!(ints(slow, "execution_queued_micros"), [Some(5)]);
        assert_eq!(ints(slow, "lock_wait_micros"), [None]);
        assert_eq!(strs(slow, "connection"), [one("")]);
    }

    #[test]
    fn wrong_types_cost_the_value_not_the_line() {
        let line = r#"{"t":{"$date":"2024-01-02T03:04:06.000Z"},"c":"COMMAND","id":51803,"ctx":null,"attr":{"durationMillis":"soon","ns":"db.c","ok":true,"storage":{"data":{"bytesRead":"x","timeReadingMicros":3}},"keysExamined":1.5,"command":null}}"#;
        let block = decode_block(line.as_bytes(), 1, &[]);
        let slow = &block.slow_ops;
        assert_eq!(ints(slow, "duration_ms"), [None]);
        assert_eq!(strs(slow, "ns"), [one("db.c")]);
        assert_eq!(ints(slow, "read_micros"), [None]);
        assert_eq!(strs(slow, "command_json"), [one("null")]);
        assert_eq!(
            problems(&block),
            [(1, "unexpected types, dropped: ctx, attr.keysExamined, attr.ok, attr.storage, attr.durationMillis")]
        );
    }

    #[test]
    fn repeated_keys_keep_the_last_value() {
        let line = SLOW.replace(r#""docsExamined":10"#, r#""docsExamined":"x","storage":7,"docsExamined":11"#);
        let block = decode_block(line.as_bytes(), 1, &[]);
        assert_eq!(ints(&block.slow_ops, "docs_examined"), [Some(11)]);
        assert_eq!(ints(&block.slow_ops, "bytes_read"), [Some(100)]);
        assert_eq!(strs(&block.slow_ops, "command_json"), [one(r#"{"find":"c","filter":{"a":1}}"#)]);
        assert!(block.problems.is_empty());
    }

    #[test]
    fn event_wrong_types_and_missing_timestamp() {
        let odd = EVENT.replace(r#""s":"I""#, r#""s":5"#).replace(r#""id":22943"#, r#""id":"x""#);
        let no_t = EVENT.replace(r#""t":{"$date":"2024-01-02T02:00:00.000Z"},"#, "");
        let bad_t = EVENT.replace(r#"{"$date":"2024-01-02T02:00:00.000Z"}"#, r#"{"$date":1}"#);
        let block = decode_block(format!("{odd}\n{no_t}\n{bad_t}\n").as_bytes(), 10, &[]);
        assert_eq!(strs(&block.events, "severity"), [one("")]);
        assert_eq!(ints(&block.events, "id"), [None]);
        assert_eq!(problems(&block), [(10, "unexpected types, dropped: s, id"), (11, "no timestamp"), (12, "no timestamp")]);
    }

    #[test]
    fn bad_lines_are_problems_with_line_numbers() {
        let cut = &SLOW[..120];
        let mut data = format!("{SLOW}\n\n   \ncontainer prefix: not json\n[1,2]\n{cut}\n").into_bytes();
        data.extend_from_slice(b"\x00\xff\xfe junk\n");
        data.extend_from_slice(SLOW.replace("conn7", "conn\u{e9}").as_bytes().iter().map(|&b| if b == 0xc3 { 0xff } else { b }).collect::<Vec<_>>().as_slice());
        data.extend_from_slice(b"\n{\"t\":{\"$date\":\"x\"},\"id\":1} trailing\n");
        let block = decode_block(&data, 1, &[]);
        assert_eq!(rows(&block.slow_ops), 1);
        let found = problems(&block);
        let lines: Vec<i64> = found.iter().map(|p| p.0).collect();
        assert_eq!(lines, [2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(found[0].1, "blank line");
        assert_eq!(found[1].1, "blank line");
        assert!(found[2].1.starts_with("not JSON"));
        assert_eq!(found[3].1, "not a log object");
        assert!(found[4].1.starts_with("not JSON: EOF"), "{}", found[4].1);
        assert!(found[5].1.starts_with("not JSON"));
        assert!(found[6].1.starts_with("not JSON"), "invalid UTF-8: {}", found[6].1);
        assert!(found[7].1.starts_with("not JSON: trailing"), "{}", found[7].1);
        assert!(block.problems[6].text.contains('\u{fffd}'));
    }

    #[test]
    fn snippets_are_cut_on_bytes_without_panicking_mid_character() {
        let line = "\u{e9}".repeat(300);
        let block = decode_block(line.as_bytes(), 1, &[]);
        assert_eq!(block.problems[0].text.chars().filter(|&c| c == '\u{e9}').count(), 100);
    }

    #[test]
    fn escaped_strings_and_crlf() {
        let line = SLOW.replace(r#""ns":"db.c""#, r#""ns":"db.\u0063\n""#) + "\r";
        let block = decode_block(line.as_bytes(), 1, &[]);
        assert_eq!(strs(&block.slow_ops, "ns"), [one("db.c\n")]);
        assert!(block.problems.is_empty());
    }

    #[test]
    #[should_panic(expected = "rows of column t")]
    fn finish_rejects_a_column_of_another_length() {
        let mut events = EventColumns::with_capacity(1);
        events.line.push(Some(1));
        events.finish();
    }

    #[test]
    fn deep_nesting_is_skipped_without_recursion() {
        let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
        let line = format!(r#"{{"t":{{"$date":"x"}},"id":51803,"attr":{{"command":{deep},"storage":{deep}}}}}"#);
        let cut = &line[..line.len() - 1000];
        let block = decode_block(format!("{line}\n{cut}").as_bytes(), 1, &[]);
        assert_eq!(strs(&block.slow_ops, "command_json"), [Some(deep)]);
        assert_eq!(problems(&block)[0], (1, "unexpected types, dropped: attr.storage"));
        assert!(problems(&block)[1].1.starts_with("not JSON: EOF"));
    }

    #[test]
    fn ranges_keep_line_numbers_and_order() {
        let mut data = String::new();
        for i in 0..500 {
            data.push_str(&if i % 7 == 3 { "junk".to_string() } else if i % 2 == 0 { SLOW.to_string() } else { EVENT.to_string() });
            data.push('\n');
        }
        data.push_str(SLOW); // no final newline
        let whole = decode_ranges(data.as_bytes(), 5, &[], usize::MAX);
        let split = decode_ranges(data.as_bytes(), 5, &[], 1000);
        for (a, b) in [(&whole.slow_ops, &split.slow_ops), (&whole.events, &split.events)] {
            assert_eq!(ints(a, "line"), ints(b, "line"));
            assert_eq!(strs(a, "t"), strs(b, "t"));
        }
        assert_eq!(strs(&whole.slow_ops, "shape"), strs(&split.slow_ops, "shape"));
        assert_eq!(problems(&whole), problems(&split));
        assert_eq!(rows(&whole.slow_ops) + rows(&whole.events) + whole.problems.len(), 501);
        assert_eq!(ints(&whole.slow_ops, "line").last(), Some(&Some(505)));
        assert_eq!(whole.problems[0].line, 8);
    }

    #[test]
    fn empty_and_newline_only_blocks() {
        assert_eq!(decode_block(b"", 1, &[]).problems.len(), 0);
        let block = decode_block(b"\n", 1, &[]);
        assert_eq!(problems(&block), [(1, "blank line")]);
        assert_eq!(rows(&block.slow_ops), 0);
    }

    #[test]
    fn timestamps_in_every_form_mongod_writes() {
        let at = |t: &str| utc_millis(t);
        assert_eq!(at("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(at("2024-01-02T03:04:05.678+01:00"), Some(1_704_161_045_678));
        assert_eq!(at("2024-01-02T03:04:05.678+0100"), Some(1_704_161_045_678));
        assert_eq!(at("2024-01-02T02:04:05.678+00:00"), Some(1_704_161_045_678));
        assert_eq!(at("2024-01-01T22:04:05.678-04:00"), Some(1_704_161_045_678));
        assert_eq!(at("2024-02-29T00:00:00.000Z"), Some(1_709_164_800_000));
        assert_eq!(at("1969-12-31T23:59:59.999Z"), Some(-1));
        // Left to polars: other forms, impossible dates, junk.
        for t in ["2024-02-30T00:00:00.000Z", "2023-02-29T00:00:00.000Z", "2024-01-02T03:04:05Z", "2024-01-02T03:04:05.6789Z",
                  "2024-01-02T24:00:00.000Z", "2024-01-02T03:04:05.678+24:00", "2024-01-02T03:04:05.678+01:0", "2024-01-02 03:04:05.678Z",
                  "2024-01-02T03:04:05.678", "2024-01-02T03:04:05.678Zx", "\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}", ""] {
            assert_eq!(at(t), None, "{t}");
        }
    }

    #[test]
    fn names_namespaces_and_plan_kinds() {
        assert_eq!(first_key(r#"{ "aggregate":"c"}"#), Some("aggregate"));
        assert_eq!(first_key(r#"{"a\"b":1}"#), Some("a\\"));
        assert_eq!(first_key(r#"{"":1}"#), None);
        assert_eq!(first_key("{}"), None);
        assert_eq!(first_key("null"), None);
        assert_eq!(db_and_coll(Some("a.b.c")), (Some("a"), Some("b.c")));
        let ns = |ns, command| operation_ns(Some(ns), Some(first_key(command).unwrap()), Some(command)).map(|c| c.into_owned());
        assert_eq!(ns("shop.$cmd", r#"{"update":"orders","updates":[]}"#).as_deref(), Some("shop.orders"));
        assert_eq!(ns("shop.$cmd", r#"{ "delete" : "a.b", "deletes":[]}"#).as_deref(), Some("shop.a.b"));
        assert_eq!(ns("admin.$cmd", r#"{"getLog":"startupWarnings"}"#).as_deref(), Some("admin.$cmd"));
        assert_eq!(ns("shop.$cmd", r#"{"update":"or\"ders"}"#).as_deref(), Some("shop.$cmd"));
        assert_eq!(ns("shop.orders", r#"{"update":"orders"}"#).as_deref(), Some("shop.orders"));
        assert_eq!(db_and_coll(Some("admin")), (Some("admin"), None));
        assert_eq!(db_and_coll(Some("x.")), (Some("x"), Some("")));
        assert_eq!(db_and_coll(None), (None, None));
        assert_eq!(plan_kind("COUNT_SCAN { a: 1 }"), Some("COUNT_SCAN"));
        assert_eq!(plan_kind("IDHACK"), Some("IDHACK"));
        assert_eq!(plan_kind("ixscan"), None);
    }

    #[test]
    fn write_statements_are_named_by_their_type() {
        let line = SLOW.replace(r#""c":"COMMAND""#, r#""c":"WRITE""#).replace(r#""type":"command""#, r#""type":"update""#);
        let block = decode_block(line.as_bytes(), 1, &[]);
        assert_eq!(strs(&block.slow_ops, "command"), [one("update")]);
        assert_eq!(bools(&block.slow_ops, "write_statement"), [Some(true)]);
    }

    #[test]
    fn long_strings_and_repeated_shapes_share_buffers() {
        let long = "n".repeat(40);
        let line = SLOW.replace(r#""ns":"db.c""#, &format!(r#""ns":"{long}.{long}""#));
        let block = decode_block(format!("{line}\n{line}\n").as_bytes(), 1, &[]);
        let slow = &block.slow_ops;
        assert_eq!(strs(slow, "ns"), [one(&format!("{long}.{long}")), one(&format!("{long}.{long}"))]);
        assert_eq!(strs(slow, "coll"), [one(&long), one(&long)]);
        let Column::Str { buffers, .. } = column(&slow[0], "shape") else { panic!() };
        assert_eq!(buffers.iter().map(Vec::len).sum::<usize>(), r#"{"filter":{"a":1}}"#.len());
    }
}
