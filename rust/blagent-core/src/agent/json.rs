//! Tolerant reading of a model's JSON: `<think>` blocks stripped, the JSON found in a fenced
//! block or bare in prose, common slips repaired (trailing commas, single quotes, Python
//! literals, smart quotes), then checked against the expected [`Shape`]. Every failure is a
//! precise message meant to be sent back to the model.

use serde_json::Value;
use std::borrow::Cow;

/// What a value must look like. Object fields not listed are ignored; listed ones may be
/// optional (absent or `null`).
#[derive(Debug, Clone)]
pub enum Shape {
    /// Any string.
    Str,
    /// A list of items of one shape.
    List(Box<Shape>),
    /// An object with these fields: `(name, shape, required)`.
    Object(Vec<(&'static str, Shape, bool)>),
}

impl Shape {
    /// Checks `value`; the error names the JSON path and what was expected.
    pub fn check(&self, value: &Value) -> Result<(), String> {
        self.check_at(value, "$")
    }

    fn check_at(&self, value: &Value, at: &str) -> Result<(), String> {
        let got = || describe(value);
        match self {
            Shape::Str => value
                .is_string()
                .then_some(())
                .ok_or_else(|| format!("{at} must be a string, got {}", got())),
            Shape::List(item) => {
                let items = value
                    .as_array()
                    .ok_or_else(|| format!("{at} must be a list, got {}", got()))?;
                items
                    .iter()
                    .enumerate()
                    .try_for_each(|(i, v)| item.check_at(v, &format!("{at}[{i}]")))
            }
            Shape::Object(fields) => {
                let map = value
                    .as_object()
                    .ok_or_else(|| format!("{at} must be an object, got {}", got()))?;
                for (name, shape, required) in fields {
                    match map.get(*name) {
                        None | Some(Value::Null) if *required => {
                            return Err(format!("{at} is missing the key \"{name}\""));
                        }
                        None | Some(Value::Null) => {}
                        Some(v) => shape.check_at(v, &format!("{at}.{name}"))?,
                    }
                }
                Ok(())
            }
        }
    }
}

/// A number, or a string holding one (`"7"`), as models often write scores.
pub fn as_number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn describe(value: &Value) -> String {
    let text = value.to_string();
    if text.len() > 40 {
        format!("{}…", crate::text::head(&text, 40))
    } else {
        text
    }
}

/// The text after the last `</think>`, or before an unclosed `<think>`.
fn strip_think(text: &str) -> &str {
    if let Some(end) = text.rfind("</think>") {
        return &text[end + "</think>".len()..];
    }
    text.find("<think>").map_or(text, |start| &text[..start])
}

/// Contents of fenced code blocks, in order (an unclosed fence runs to the end).
fn fenced_blocks(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let body_start = after.find('\n').map_or(after.len(), |i| i + 1);
        let body = &after[body_start..];
        let close = body.find("```").unwrap_or(body.len());
        out.push(&body[..close]);
        rest = &body[(close + 3).min(body.len())..];
    }
    out
}

/// The first balanced `{…}` or `[…]` of `text` (string-aware), or why there is none. A
/// reply cut off by the completion cap keeps its complete part: it is cut after the last
/// complete element or member (at the last `,` outside strings) and the brackets still open
/// there are closed; the schema check then says what is missing, if anything.
fn balanced(text: &str) -> Result<Cow<'_, str>, String> {
    let start = text
        .find(['{', '['])
        .ok_or("the reply contains no JSON object")?;
    let whole = scan(&text[start..]);
    if let Some(end) = whole.balanced_end {
        return Ok(Cow::Borrowed(&text[start..=start + end]));
    }
    let Some(end) = whole.last_comma else {
        return Err("the JSON is truncated: a `{`, `[` or string is never closed".to_owned());
    };
    // Scanned again up to the cut for the brackets open there (keeping a copy of the stack at
    // every comma made a reply of nested brackets and commas take quadratic time).
    let open = scan(&text[start..start + end]).open;
    let mut closed = text[start..start + end].to_owned();
    closed.extend(open.iter().rev().map(|&c| if c == '{' { '}' } else { ']' }));
    Ok(Cow::Owned(closed))
}

/// What a string-aware pass over `text` (starting at a bracket) finds.
struct Scan {
    /// Where the first bracket closes, if it does.
    balanced_end: Option<usize>,
    /// The last `,` outside strings (when the first bracket never closes).
    last_comma: Option<usize>,
    /// The brackets still open at the end.
    open: Vec<char>,
}

fn scan(text: &str) -> Scan {
    let mut open: Vec<char> = Vec::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut last_comma = None;
    for (i, c) in text.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '{' | '[' => open.push(c),
            '}' | ']' => {
                open.pop();
                if open.is_empty() {
                    return Scan {
                        balanced_end: Some(i),
                        last_comma,
                        open,
                    };
                }
            }
            ',' => last_comma = Some(i),
            _ => {}
        }
    }
    Scan {
        balanced_end: None,
        last_comma,
        open,
    }
}

/// Repairs single-quoted strings, smart quotes, Python literals and trailing commas, leaving
/// the insides of strings untouched.
fn repair(json: &str) -> String {
    let json = json.replace(['\u{201c}', '\u{201d}'], "\"");
    let mut out = String::with_capacity(json.len());
    let mut chars = json.chars().peekable();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        out.push_str(match word.as_str() {
            "True" => "true",
            "False" => "false",
            "None" => "null",
            w => w,
        });
        word.clear();
    };
    while let Some(c) = chars.next() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        flush(&mut word, &mut out);
        match c {
            '"' | '\'' => {
                out.push('"');
                let mut escaped = false;
                for d in chars.by_ref() {
                    if escaped {
                        // `\'` is not a JSON escape: keep the quote alone.
                        if d != '\'' {
                            out.push('\\');
                        }
                        out.push(d);
                        escaped = false;
                    } else if d == '\\' {
                        escaped = true;
                    } else if d == c {
                        break;
                    } else if d == '"' {
                        out.push_str("\\\"");
                    } else if d == '\n' {
                        out.push_str("\\n");
                    } else {
                        out.push(d);
                    }
                }
                out.push('"');
            }
            ',' => {
                let mut ahead = chars.clone();
                while ahead.peek().is_some_and(|d| d.is_whitespace()) {
                    ahead.next();
                }
                if !matches!(ahead.peek(), Some('}' | ']')) {
                    out.push(',');
                }
            }
            _ => out.push(c),
        }
    }
    flush(&mut word, &mut out);
    out
}

/// The JSON value in a model's reply (see the module documentation).
pub fn extract_json(reply: &str) -> Result<Value, String> {
    let text = strip_think(reply);
    let mut candidates: Vec<&str> = fenced_blocks(text);
    candidates.push(text);
    let mut first_error: Option<String> = None;
    for candidate in candidates {
        let found = match balanced(candidate) {
            Ok(found) => found,
            Err(e) => {
                first_error.get_or_insert(e);
                continue;
            }
        };
        match serde_json::from_str::<Value>(&found)
            .or_else(|_| serde_json::from_str::<Value>(&repair(&found)))
        {
            Ok(value) => return Ok(value),
            Err(e) => {
                first_error.get_or_insert(format!("invalid JSON: {e}"));
            }
        }
    }
    Err(first_error.unwrap_or_else(|| "the reply contains no JSON object".to_owned()))
}

/// [`extract_json`] then [`Shape::check`].
pub fn parse_checked(reply: &str, shape: &Shape) -> Result<Value, String> {
    let value = extract_json(reply)?;
    shape.check(&value)?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A cut-off reply is closed at its last comma with the brackets open there; deeply
    /// nested brackets followed by many commas (once quadratic: 600 KB took 103 s) too.
    #[test]
    fn a_truncated_reply_is_closed_at_its_last_comma() {
        assert_eq!(
            balanced(r#"x {"a": [1, 2, {"b": 3}, 4"#).unwrap(),
            r#"{"a": [1, 2, {"b": 3}"#.to_owned() + "]}"
        );
        let depth = 50_000;
        let hostile = "[".repeat(depth) + &",".repeat(depth);
        let closed = balanced(&hostile).unwrap();
        assert_eq!(
            closed,
            "[".repeat(depth) + &",".repeat(depth - 1) + &"]".repeat(depth)
        );
    }

    #[test]
    fn finds_json_fenced_bare_and_after_thinking() {
        let fenced = "Sure!\n```json\n{\"query\": \"a b\"}\n```\nDone.";
        assert_eq!(extract_json(fenced).unwrap(), json!({"query": "a b"}));
        let bare = "The answer is {\"query\": \"x\"} as requested.";
        assert_eq!(extract_json(bare).unwrap(), json!({"query": "x"}));
        let think = "<think>maybe {\"query\": \"wrong\"}</think>\n{\"query\": \"right\"}";
        assert_eq!(extract_json(think).unwrap(), json!({"query": "right"}));
        let list = "```\n[\"a.py\", \"b.py\"]\n```";
        assert_eq!(extract_json(list).unwrap(), json!(["a.py", "b.py"]));
    }

    #[test]
    fn repairs_common_slips() {
        let trailing = "{\"paths\": [\"a.py\", \"b.py\",], }";
        assert_eq!(
            extract_json(trailing).unwrap(),
            json!({"paths": ["a.py", "b.py"]})
        );
        let single = "{'query': 'it\\'s \"x\", y', 'ok': True, 'n': None}";
        assert_eq!(
            extract_json(single).unwrap(),
            json!({"query": "it's \"x\", y", "ok": true, "n": null})
        );
        let smart = "{\u{201c}query\u{201d}: \u{201c}x\u{201d}}";
        assert_eq!(extract_json(smart).unwrap(), json!({"query": "x"}));
        assert_eq!(
            extract_json("{\"a\": \"True, ]\"}").unwrap(),
            json!({"a": "True, ]"})
        );
    }

    #[test]
    fn says_precisely_what_is_wrong() {
        let truncated = extract_json("{\"ranking\": [{\"path\": \"a.py\"").unwrap_err();
        assert!(truncated.contains("truncated"), "{truncated}");
        // Cut off after complete elements: those are kept.
        let cut = extract_json("{\"scores\": {\"a.py\": 7, \"b.py\": 3, \"c/d").unwrap();
        assert_eq!(cut, serde_json::json!({"scores": {"a.py": 7, "b.py": 3}}));
        let cut = extract_json("[{\"path\": \"a.py\"}, {\"path\": \"b,c\", \"why\": \"x").unwrap();
        // Commas inside strings do not count; complete members of an open object are kept.
        assert_eq!(cut, serde_json::json!([{"path": "a.py"}, {"path": "b,c"}]));
        assert!(extract_json("no json here")
            .unwrap_err()
            .contains("no JSON"));
        let bad = extract_json("{\"a\": 1 \"b\": 2}").unwrap_err();
        assert!(bad.starts_with("invalid JSON: expected"), "{bad}");
        assert!(extract_json("<think>{\"q\": 1}").is_err(), "unclosed think");
    }

    #[test]
    fn checks_shapes_with_paths_in_messages() {
        let shape = Shape::Object(vec![
            ("query", Shape::Str, true),
            (
                "file",
                Shape::Object(vec![("path", Shape::Str, true)]),
                false,
            ),
            ("paths", Shape::List(Box::new(Shape::Str)), false),
        ]);
        assert!(shape
            .check(&json!({"query": "x", "file": {"path": "a.py"}, "paths": null}))
            .is_ok());
        assert_eq!(
            shape.check(&json!({"file": {}})).unwrap_err(),
            "$ is missing the key \"query\""
        );
        assert_eq!(
            shape
                .check(&json!({"query": "x", "file": {"path": 11}}))
                .unwrap_err(),
            "$.file.path must be a string, got 11"
        );
        assert_eq!(
            shape
                .check(&json!({"query": "x", "paths": ["a", 3]}))
                .unwrap_err(),
            "$.paths[1] must be a string, got 3"
        );
        assert_eq!(
            shape.check(&json!(["x"])).unwrap_err(),
            "$ must be an object, got [\"x\"]"
        );
        let err = parse_checked("{\"query\": 5}", &shape).unwrap_err();
        assert_eq!(err, "$.query must be a string, got 5");
    }
}
