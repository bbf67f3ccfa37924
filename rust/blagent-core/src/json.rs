//! Reading a JSON object into a struct.
//!
//! serde's derived `Deserialize` reads a struct from a JSON array too, field by field in
//! declaration order, and a struct whose fields all have defaults from `[]`: an LLM
//! configuration written `[]` passed as no LLM, a dataset line `["id", "repo", …]` as an
//! instance, and `{"index": []}` as a configuration with a default index section.
//! Configurations, records and profiles are JSON objects, and so is every struct inside them,
//! so a struct at any depth must be read from an object here ([`Strict`]). serde buffers the
//! fields of a `#[serde(flatten)]`ed struct and of an enum it reads by looking at the value
//! first (`#[serde(tag = …)]`, `untagged`) before it reads them, out of `Strict`'s reach: such
//! a field that holds a struct or such an enum is read with [`object`].

use serde::de::value::{MapAccessDeserializer, MapDeserializer, SeqDeserializer};
use serde::de::{DeserializeOwned, Error as _, IntoDeserializer, Visitor};
use serde::{forward_to_deserialize_any, Deserialize, Deserializer};
use serde_json::{Map, Value};

/// `T` from `text`, which must hold one JSON object, as must every struct within it.
pub fn from_object<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    let first = text
        .bytes()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    if first != Some(b'{') {
        // Text that is no JSON at all keeps serde_json's own message.
        let value: Value = serde_json::from_str(text).map_err(said_plainly)?;
        return Err(not_an_object(&value));
    }
    // serde_json reading the text itself refuses a repeated field and says where a mistake is
    // (its line and column: `Strict` reads the fields in another order, so it could name
    // another field than the one serde_json stopped at).
    let read = serde_json::from_str(text).map_err(said_plainly)?;
    // `Strict` then checks that every struct is an object, on a `Value` read with every key
    // once (a map's key repeated is refused there). A text a `Value` cannot hold (past its 128
    // levels, a number past f64, a lone surrogate), which serde_json read because it lies in a
    // field `T` skips, keeps serde_json's reading.
    match value(text) {
        Ok(value) => {
            T::deserialize(Strict::root(value))?;
        }
        Err(e) if e.classify() == serde_json::error::Category::Data => return Err(e),
        Err(_) => {}
    }
    Ok(read)
}

/// `serde_json`'s error said plainly where its words mislead: an escape of half a UTF-16
/// surrogate pair (`"\ud800 x"`: "unexpected end of hex escape"), and an integer past 64 bits
/// where a whole number is wanted (read as a float: "invalid type: floating point"); any
/// other error as it is.
fn said_plainly(e: serde_json::Error) -> serde_json::Error {
    let message = e.to_string();
    let halves = [
        "unexpected end of hex escape",
        "lone leading surrogate",
        "invalid unicode code point",
    ];
    if halves.iter().any(|h| message.starts_with(h)) {
        serde_json::Error::custom(format!(
            "{message}: a \\u escape of half a surrogate pair (a lone surrogate) is not text"
        ))
    } else if message.starts_with("invalid type: floating point") && message.contains("expected u")
    {
        serde_json::Error::custom(format!(
            "{message}: a whole number is wanted, and this one has a fraction or is too large"
        ))
    } else {
        e
    }
}

/// The JSON value `text` holds, refusing an object that repeats a key at any depth (a plain
/// `serde_json::Value` keeps the last, so `{"patch": A, "patch": B}` read as B without a word).
pub fn value(text: &str) -> serde_json::Result<Value> {
    serde_json::from_str::<Unique>(text).map(|Unique(value)| value)
}

/// A `Value` read with every object's keys once.
struct Unique(Value);

impl<'de> Deserialize<'de> for Unique {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueVisitor).map(Unique)
    }
}

struct UniqueVisitor;

impl<'de> Visitor<'de> for UniqueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Unique(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(A::Error::custom(format!("duplicate key `{key}`")));
            }
            let Unique(item) = map.next_value()?;
            object.insert(key, item);
        }
        Ok(Value::Object(object))
    }
}

/// `T` from `value`, which must be a JSON object, as must every struct within it.
pub fn from_object_value<T: DeserializeOwned>(value: Value) -> serde_json::Result<T> {
    if value.is_object() {
        T::deserialize(Strict::root(value))
    } else {
        Err(not_an_object(&value))
    }
}

/// A field serde reads from content it has buffered, where [`Strict`] does not reach (the
/// fields of a `#[serde(flatten)]`ed struct, an internally tagged enum), held to the same rule:
/// `#[serde(deserialize_with = "crate::json::object")]`.
pub fn object<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<T, D::Error> {
    from_object_value(Value::deserialize(d)?).map_err(D::Error::custom)
}

fn not_an_object(value: &Value) -> serde_json::Error {
    serde_json::Error::custom(format!("expected a JSON object, found {}", kind(value)))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The most characters of a value's place an error message names.
const MAX_PLACE_CHARS: usize = 200;

/// A JSON value that serde reads as `serde_json::Value` does, except that a struct must be an
/// object: the arrays and objects within are read as `Strict` again, so the rule holds at every
/// depth. `at` is where the value lies (`models.mine`, `list[2]`), for the message.
struct Strict {
    value: Value,
    at: String,
}

impl Strict {
    fn root(value: Value) -> Self {
        Strict {
            value,
            at: String::new(),
        }
    }

    fn within(&self, value: Value, step: std::fmt::Arguments<'_>) -> Self {
        let at = if self.at.is_empty() {
            step.to_string().trim_start_matches('.').to_owned()
        } else {
            format!("{}{step}", self.at)
        };
        Strict { value, at }
    }

    /// `error` with where the value lies, where it lies within an object or array (a place
    /// past [`MAX_PLACE_CHARS`] is cut: a key may be megabytes long).
    fn placed(&self, error: serde_json::Error) -> serde_json::Error {
        if self.at.is_empty() {
            return error;
        }
        serde_json::Error::custom(format!("{error}{}", self.at_suffix()))
    }

    /// [`Self::placed`] for an error from reading an object or array: one that a value within
    /// it raised already names that value's place, which starts with this one's and is kept.
    fn placed_once(&self, error: serde_json::Error) -> serde_json::Error {
        let message = error.to_string();
        let within = message.contains(&format!(" (at {}", self.place().trim_end_matches('…')));
        if within {
            error
        } else {
            self.placed(error)
        }
    }

    /// Where the value lies, cut at [`MAX_PLACE_CHARS`].
    fn place(&self) -> String {
        crate::text::cut_chars(self.at.chars(), MAX_PLACE_CHARS)
    }

    /// ` (at PLACE)` for a message, nothing at the root.
    fn at_suffix(&self) -> String {
        if self.at.is_empty() {
            String::new()
        } else {
            format!(" (at {})", self.place())
        }
    }

    fn not_an_object(&self, what: &str) -> serde_json::Error {
        serde_json::Error::custom(format!(
            "{what}expected a JSON object, found {}{}",
            kind(&self.value),
            self.at_suffix()
        ))
    }
}

impl IntoDeserializer<'_, serde_json::Error> for Strict {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

impl Strict {
    /// An object's entries, each value read as `Strict` where it lies.
    fn entries(&self, map: Map<String, Value>) -> impl Iterator<Item = (String, Strict)> + '_ {
        map.into_iter().map(|(k, v)| {
            let value = self.within(v, format_args!(".{k}"));
            (k, value)
        })
    }

    /// The value read as an object (a struct named in `what`, or a map), or refused.
    fn object<'de, V: Visitor<'de>>(
        mut self,
        what: &str,
        visitor: V,
    ) -> serde_json::Result<V::Value> {
        match std::mem::take(&mut self.value) {
            // An object where something else is wanted (`"gold_files": {}`), or a field
            // missing from it, is named by where it lies too.
            Value::Object(map) => {
                let mut entries = MapDeserializer::new(self.entries(map));
                let read = visitor
                    .visit_map(&mut entries)
                    .and_then(|read| entries.end().map(|()| read));
                read.map_err(|e| self.placed_once(e))
            }
            other => {
                self.value = other;
                Err(self.not_an_object(what))
            }
        }
    }
}

impl<'de> Deserializer<'de> for Strict {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(mut self, visitor: V) -> serde_json::Result<V::Value> {
        match std::mem::take(&mut self.value) {
            map @ Value::Object(_) => Strict { value: map, ..self }.object("", visitor),
            Value::Array(items) => {
                let items = items
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| self.within(v, format_args!("[{i}]")));
                let mut items = SeqDeserializer::new(items);
                let read = visitor
                    .visit_seq(&mut items)
                    .and_then(|read| items.end().map(|()| read));
                read.map_err(|e| self.placed_once(e))
            }
            // A scalar of the wrong type is named by where it lies (`problem_statement`).
            scalar => scalar.deserialize_any(visitor).map_err(|e| self.placed(e)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> serde_json::Result<V::Value> {
        self.object(&format!("{name}: "), visitor)
    }

    /// A map, and the fields of an enum's struct variant, which serde asks for as a map.
    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> serde_json::Result<V::Value> {
        self.object("", visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> serde_json::Result<V::Value> {
        if self.value.is_null() {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> serde_json::Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        mut self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> serde_json::Result<V::Value> {
        match std::mem::take(&mut self.value) {
            // `{"Variant": content}`: the content is read as `Strict` too.
            Value::Object(map) if map.len() == 1 => {
                let entry = MapDeserializer::new(self.entries(map));
                visitor.visit_enum(MapAccessDeserializer::new(entry))
            }
            other => other
                .deserialize_enum(name, variants, visitor)
                .map_err(|e| self.placed(e)),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default, deny_unknown_fields)]
    struct Config {
        model: String,
        seed: u64,
    }

    /// Found by a review: half a surrogate pair was "unexpected end of hex escape".
    #[test]
    fn half_a_surrogate_pair_is_named() {
        for text in [
            "{\"model\": \"a \\ud800 b\"}",
            "{\"model\": \"\\ud800\\u0041\"}",
            "[\"\\ud800 b\"]",
        ] {
            let err = from_object::<Config>(text).expect_err(text).to_string();
            assert!(
                err.contains("(a lone surrogate) is not text") && err.contains("line 1 column"),
                "{text}: {err}"
            );
        }
        // Found by a later review: an integer past 64 bits was "invalid type: floating point".
        let err = from_object::<Config>("{\"seed\": 18446744073709551616}").unwrap_err();
        assert!(
            err.to_string().contains("has a fraction or is too large"),
            "{err}"
        );
        let paired = from_object::<Config>("{\"model\": \"\\ud83d\\ude00\"}").unwrap();
        assert_eq!(paired.model, "\u{1F600}");
    }

    #[test]
    fn a_value_of_the_wrong_type_is_named_by_where_it_lies() {
        // Found by a review: a dataset line's `"problem_statement": null` was "invalid type:
        // null, expected a string", naming no field.
        let read = |text: &str| serde_json::from_str::<Value>(text).unwrap();
        let err = from_object_value::<Config>(read(r#"{"model": null}"#))
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("expected a string (at model)"), "{err}");
        let err = from_object_value::<BTreeMap<String, Vec<u64>>>(read(r#"{"a": [1, "x"]}"#))
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("(at a[1])"), "{err}");
        // A long key is cut in the message (a second review found a 900 KB key copied whole).
        let text = format!(r#"{{"{}": ["x"]}}"#, "k".repeat(100_000));
        let err = from_object_value::<BTreeMap<String, Vec<u64>>>(read(&text))
            .unwrap_err()
            .to_string();
        assert!(err.len() < 400 && err.ends_with("k…)"), "{}", &err[..200]);
        // A container of the wrong type, and a field missing from an object, are named too
        // (a third review: `"gold_files": {"a": 1}` named no field); an error within one names
        // the innermost place only.
        let err = from_object_value::<BTreeMap<String, Vec<u64>>>(read(r#"{"a": {"x": 1}}"#))
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("expected a sequence (at a)"), "{err}");
        let err = from_object_value::<BTreeMap<String, String>>(read(r#"{"a": ["x"]}"#))
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("expected a string (at a)"), "{err}");
        let err = from_object_value::<BTreeMap<String, Open>>(read(r#"{"o": {}}"#))
            .unwrap_err()
            .to_string();
        assert_eq!(err, "missing field `seed` (at o)");
        let err =
            from_object_value::<BTreeMap<String, Vec<Vec<u64>>>>(read(r#"{"a": [[1, "x"]]}"#))
                .unwrap_err()
                .to_string();
        assert!(
            err.ends_with("(at a[0][1])") && err.matches("(at ").count() == 1,
            "{err}"
        );
        let text = format!(r#"{{"{}": {{"seed": 1, "x": 2}}}}"#, "k".repeat(100_000));
        let err = from_object_value::<BTreeMap<String, Config>>(read(&text))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("unknown field `x`")
                && err.len() < 600
                && err.matches("(at ").count() == 1,
            "{}",
            &err[..200.min(err.len())]
        );
        // Text serde_json reads keeps its line and column and names no field: `Strict` reads
        // the fields in another order, and named another than the one serde_json stopped at.
        let err = from_object::<Config>(r#"{"seed": "x", "model": null}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("at line 1 column 12") && !err.contains("(at "),
            "{err}"
        );
    }

    #[test]
    fn only_an_object_is_read_as_a_struct() {
        // What serde alone does: an array is read field by field.
        assert!(serde_json::from_str::<Config>("[]").is_ok());
        assert!(serde_json::from_str::<Config>(r#"["m", 3]"#).is_ok());
        let read = from_object::<Config>(" \n{\"model\": \"m\", \"seed\": 3}").unwrap();
        assert_eq!((read.model.as_str(), read.seed), ("m", 3));
        for text in ["[]", r#"["m", 3]"#, "null", "3", "\"x\"", "true", " [ ] "] {
            let err = from_object::<Config>(text).expect_err(text).to_string();
            assert!(
                err.starts_with("expected a JSON object, found"),
                "{text}: {err}"
            );
        }
        // Text that is no JSON keeps serde_json's own message.
        for text in ["", "{", "[", "x", "nope"] {
            let err = from_object::<Config>(text).expect_err(text).to_string();
            assert!(!err.contains("expected a JSON object"), "{text}: {err}");
        }
        assert!(from_object::<Config>(r#"{"modle": "m"}"#).is_err());
        assert!(from_object_value::<Config>(serde_json::json!([])).is_err());
        let value = serde_json::json!({"seed": 2});
        assert_eq!(from_object_value::<Config>(value).unwrap().seed, 2);
    }

    /// A struct that skips the fields it does not know.
    #[derive(Debug, Deserialize)]
    struct Open {
        seed: u64,
    }

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default, deny_unknown_fields)]
    struct Outer {
        name: String,
        inner: Config,
        maybe: Option<Config>,
        list: Vec<Config>,
        by_key: BTreeMap<String, Config>,
        pairs: Vec<(String, u32)>,
        kind: Kind,
        wrapped: Wrapped,
    }

    #[derive(Debug, Default, Deserialize, PartialEq)]
    struct Wrapped(Config);

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        #[default]
        Plain,
        Tuned(Config),
        Named {
            inner: Config,
        },
    }

    #[test]
    fn a_struct_at_any_depth_is_read_only_from_an_object() {
        let text = r#"{"name": "n", "inner": {"seed": 1}, "maybe": {"model": "m"},
            "list": [{"seed": 2}, {}], "by_key": {"a": {"seed": 3}}, "pairs": [["x", 4]],
            "kind": {"named": {"inner": {"seed": 5}}}, "wrapped": {"seed": 6}}"#;
        let read = from_object::<Outer>(text).unwrap();
        assert_eq!(read, serde_json::from_str::<Outer>(text).unwrap());
        assert_eq!(read.inner.seed, 1);
        assert_eq!(read.maybe.as_ref().unwrap().model, "m");
        assert_eq!(read.list.len(), 2);
        assert_eq!(read.by_key["a"].seed, 3);
        assert_eq!(read.pairs, vec![("x".to_owned(), 4)]);
        assert!(matches!(read.kind, Kind::Named { ref inner } if inner.seed == 5));
        assert_eq!(read.wrapped.0.seed, 6);
        for (kind, expected) in [
            (r#""plain""#, Kind::Plain),
            (
                r#"{"tuned": {"seed": 7}}"#,
                Kind::Tuned(Config {
                    model: String::new(),
                    seed: 7,
                }),
            ),
        ] {
            let text = format!(r#"{{"kind": {kind}, "maybe": null}}"#);
            let read = from_object::<Outer>(&text).unwrap();
            assert_eq!((read.kind, read.maybe), (expected, None));
        }
        // Each of these is read by serde alone, a struct taken field by field from an array;
        // the message says which struct and where it lies.
        for (text, place) in [
            (
                r#"{"inner": []}"#,
                "Config: expected a JSON object, found an array (at inner)",
            ),
            (r#"{"inner": ["m", 3]}"#, "(at inner)"),
            (r#"{"maybe": []}"#, "(at maybe)"),
            (r#"{"list": [{}, []]}"#, "(at list[1])"),
            (r#"{"by_key": {"a": []}}"#, "(at by_key.a)"),
            (r#"{"kind": {"tuned": []}}"#, "(at kind.tuned)"),
            (
                r#"{"kind": {"named": {"inner": []}}}"#,
                "(at kind.named.inner)",
            ),
            (r#"{"kind": {"named": [{}]}}"#, "(at kind.named)"),
            (r#"{"wrapped": ["m"]}"#, "(at wrapped)"),
        ] {
            assert!(serde_json::from_str::<Outer>(text).is_ok(), "{text}");
            let err = from_object::<Outer>(text).expect_err(text).to_string();
            assert!(
                err.contains("expected a JSON object, found an array") && err.contains(place),
                "{text}: {err}"
            );
            let value: Value = serde_json::from_str(text).unwrap();
            assert!(from_object_value::<Outer>(value).is_err(), "{text}");
        }
        // A repeated key is refused, as serde_json refuses it.
        let twice = r#"{"inner": {"seed": 1, "seed": 2}}"#;
        let err = from_object::<Outer>(twice).unwrap_err();
        assert!(err.to_string().contains("duplicate field `seed`"), "{err}");
        // So is a key repeated where serde_json keeps the last: in a map, in a `Value`, at
        // any depth.
        let in_a_map = r#"{"by_key": {"a": {"seed": 1}, "a": {"seed": 2}}}"#;
        let skipped = r#"{"seed": 1, "note": [{"x": 1, "x": 2}]}"#;
        for (text, err) in [
            (in_a_map, from_object::<Outer>(in_a_map).map(drop)),
            (skipped, from_object::<Open>(skipped).map(drop)),
        ] {
            let err = err.expect_err(text).to_string();
            assert!(err.contains("duplicate key `"), "{text}: {err}");
            let err = from_object::<Value>(text).expect_err(text).to_string();
            assert!(err.contains("duplicate key `"), "{text}: {err}");
            assert!(value(text).is_err(), "{text}");
        }
        assert_eq!(
            value(r#"{"a": {"a": 1}, "b": [{"a": 2}]}"#).unwrap()["b"][0]["a"],
            2
        );
        // Found by a review: text a `Value` cannot hold, in a field the struct skips, was
        // refused once read through a `Value`; serde_json alone reads it.
        let deep = format!(
            r#"{{"seed": 1, "note": {}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        for text in [
            deep.as_str(),
            r#"{"seed": 1, "as_of": 1e400}"#,
            r#"{"seed": 1, "note": "\ud83d cut"}"#,
        ] {
            assert_eq!(from_object::<Open>(text).expect(text).seed, 1);
        }
        // Other mistakes keep serde_json's message, with where they are.
        let err = from_object::<Outer>("{\n\"inner\": {\"seed\": \"x\"}}").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
    }
}
