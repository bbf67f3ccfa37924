//! Reading a JSON object into a struct.
//!
//! serde's derived `Deserialize` reads a struct from a JSON array too, field by field in
//! declaration order, and a struct whose fields all have defaults from `[]`: an LLM
//! configuration written `[]` passed as no LLM, and a dataset line `["id", "repo", …]` as an
//! instance. Configurations, records and profiles are JSON objects, so anything else is
//! refused here, before serde reads it. Only the top level is checked: a nested struct written
//! as an array (`{"index": []}`) is still read field by field.

use serde::de::{DeserializeOwned, Error as _};
use serde_json::Value;

/// `T` from `text`, which must hold one JSON object.
pub fn from_object<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    let first = text
        .bytes()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    if first == Some(b'{') {
        return serde_json::from_str(text);
    }
    // Text that is no JSON at all keeps serde_json's own message.
    let value: Value = serde_json::from_str(text)?;
    Err(not_an_object(&value))
}

/// `T` from `value`, which must be a JSON object.
pub fn from_object_value<T: DeserializeOwned>(value: Value) -> serde_json::Result<T> {
    if value.is_object() {
        serde_json::from_value(value)
    } else {
        Err(not_an_object(&value))
    }
}

fn not_an_object(value: &Value) -> serde_json::Error {
    let found = match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    serde_json::Error::custom(format!("expected a JSON object, found {found}"))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default, deny_unknown_fields)]
    struct Config {
        model: String,
        seed: u64,
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
}
