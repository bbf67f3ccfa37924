//! Keeping secrets out of what blagent shows and stores. A [`Redactor`] holds the secrets of a
//! configuration (the API key, the base URL's password and the `user:password` pair sent as
//! basic authentication) and replaces every form a server could echo them in with
//! [`REDACTED`]: as written, percent-encoded (either hex case, `+` for a space), JSON-escaped,
//! and base64 (standard and URL-safe, with and without padding). Every text from a server
//! that is shown (errors, `llm-check`, fallbacks) or stored (cassettes) goes through one.

use std::fmt;
use std::fmt::Write as _;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What a [`Secret`] shows in `Debug` output and serialized configurations.
pub const REDACTED: &str = "<redacted>";

/// A string that never appears in `Debug` output, `Display` or serialized JSON: those show
/// [`REDACTED`]. Deserializes from a plain string; [`Secret::expose`] is the one way to read it.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret itself, for the `Authorization` header and nothing else.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({REDACTED})")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(REDACTED)
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        // Not `String`'s own reading: its error for another type quotes the value (a review:
        // `"api_key": 12345678901234` was shown in the message).
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::String(text) => Ok(Secret(text)),
            _ => Err(serde::de::Error::custom(
                "a secret must be a string (its value not shown)",
            )),
        }
    }
}

/// The standard base64 alphabet.
const BASE64_STANDARD: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
/// The URL- and file-name-safe base64 alphabet.
const BASE64_URL_SAFE: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
/// The most bytes of compiled pattern a redactor may use.
const PATTERN_SIZE_LIMIT: usize = 64 << 20;
/// Secrets longer than this (in characters) are matched as written and in base64 only: the
/// pattern of every encoded variant would grow too large.
const MAX_VARIANT_CHARS: usize = 1024;

/// Replaces secrets, in every form a server could send them back in, with [`REDACTED`]; then
/// the password of any URL in the text ([`redact_url_credentials`]). Its `Debug` output shows no
/// secret.
#[derive(Clone, Default)]
pub struct Redactor {
    /// One alternation of every form of every secret, longest secrets first; None: no secret.
    pattern: Option<regex::Regex>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redactor({REDACTED})")
    }
}

impl Redactor {
    /// A redactor of `secrets` (empty ones are ignored).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a Secret>) -> Self {
        let mut plain: Vec<&str> = secrets
            .into_iter()
            .map(Secret::expose)
            .filter(|s| !s.is_empty())
            .collect();
        plain.sort_by_key(|s| std::cmp::Reverse(s.len()));
        plain.dedup();
        if plain.is_empty() {
            return Redactor::default();
        }
        // Base64 before text (a padded form before its unpadded prefix), longest first: at one
        // position the first alternative that matches wins.
        let mut encoded: Vec<String> = plain
            .iter()
            .flat_map(|s| base64_forms(s.as_bytes()))
            .collect();
        encoded.sort_by_key(|s| std::cmp::Reverse(s.len()));
        encoded.dedup();
        let literal = |forms: &[String]| forms.iter().map(|f| regex::escape(f)).collect();
        let mut alternatives: Vec<String> = literal(&encoded);
        // Its bytes in hex, in either case (a review: an endpoint echoing the key so).
        alternatives.extend(
            plain
                .iter()
                .filter(|s| s.chars().count() <= MAX_VARIANT_CHARS)
                .map(|s| format!("(?i:{})", hex(s.as_bytes()))),
        );
        alternatives.extend(plain.iter().map(|s| text_pattern(s)));
        let pattern = build(&alternatives).or_else(|| {
            // Too large a pattern (a huge key): the forms as written, without the variants.
            let mut forms = encoded.clone();
            forms.extend(plain.iter().map(|s| (*s).to_owned()));
            build(&literal(&forms))
        });
        Redactor { pattern }
    }

    /// `text` with every form of every secret, and every URL password, replaced by
    /// [`REDACTED`].
    pub fn redact(&self, text: &str) -> String {
        let scrubbed = match &self.pattern {
            Some(pattern) => pattern.replace_all(text, REDACTED).into_owned(),
            None => text.to_owned(),
        };
        redact_url_credentials(&scrubbed)
    }
}

fn build(alternatives: &[String]) -> Option<regex::Regex> {
    regex::RegexBuilder::new(&alternatives.join("|"))
        .size_limit(PATTERN_SIZE_LIMIT)
        .build()
        .ok()
}

/// The base64 encodings of `bytes`, standard and URL-safe: on its own (padded and not), and
/// inside a longer encoded text (`Bearer <key>`, `user:<key>`), where it may start at any of
/// the three byte offsets of a group: there only the characters that no byte around it
/// touches are matched, so a secret of fewer than [`MIN_EMBEDDED_BYTES`] bytes gets no such form
/// (it would match unrelated base64), nor one longer than [`MAX_VARIANT_CHARS`] (the pattern
/// would grow too large).
fn base64_forms(bytes: &[u8]) -> Vec<String> {
    let mut forms = Vec::with_capacity(10);
    for alphabet in [BASE64_STANDARD, BASE64_URL_SAFE] {
        let padded = base64(bytes, alphabet);
        forms.push(padded.trim_end_matches('=').to_owned());
        forms.push(padded);
        if bytes.len() < MIN_EMBEDDED_BYTES || bytes.len() > MAX_VARIANT_CHARS {
            continue;
        }
        for offset in 0..3usize {
            let mut shifted = vec![0u8; offset];
            shifted.extend_from_slice(bytes);
            let encoded = base64(&shifted, alphabet);
            let encoded = encoded.trim_end_matches('=');
            // Characters touched by the `offset` bytes before it (2 for one, 3 for two), and
            // the last one when the secret ends inside a group (it mixes in the next byte).
            let lead = [0, 2, 3][offset];
            let trail = usize::from(shifted.len() % 3 != 0);
            forms.push(encoded[lead..encoded.len() - trail].to_owned());
        }
    }
    forms
}

/// The fewest characters of an API key redacted: a shorter key (`EMPTY`, `test`, `none`, which
/// local servers such as vLLM or llama.cpp take) is a placeholder, not a credential, and
/// replacing it wherever it occurs would rewrite the model's answers (`tests/test_parser.py`
/// into `<redacted>s/<redacted>_parser.py`). A URL's or a proxy's credentials are redacted
/// whatever their length, except in a model's answers, where the same rule holds
/// ([`super::LlmConfig::answer_redactor`]).
pub const MIN_KEY_CHARS: usize = 8;

/// The fewest bytes of a secret matched inside longer base64 text (see [`base64_forms`]).
const MIN_EMBEDDED_BYTES: usize = 8;

/// `bytes` in lower-case hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut out, byte| {
        let _ = write!(out, "{byte:02x}");
        out
    })
}

/// `bytes` in base64 with `alphabet`, padded with `=`.
fn base64(bytes: &[u8], alphabet: &[u8; 64]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(alphabet[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A pattern matching `secret` with each character as written (in either case),
/// percent-encoded (either hex case; a space also as `+`) or JSON-escaped (`\uXXXX`, and `\"`,
/// `\\`, `\/`, `\n`, …); as written only past [`MAX_VARIANT_CHARS`].
fn text_pattern(secret: &str) -> String {
    if secret.chars().count() > MAX_VARIANT_CHARS {
        return regex::escape(secret);
    }
    let mut pattern = String::new();
    for c in secret.chars() {
        // In either case as written: a server may echo a key upper-cased (`SK-…`).
        let mut forms = vec![format!(
            "(?i:{})",
            regex::escape(c.encode_utf8(&mut [0; 4]))
        )];
        if c == ' ' {
            forms.push(r"\+".to_owned());
        }
        let mut percent = String::new();
        for &byte in c.encode_utf8(&mut [0; 4]).as_bytes() {
            percent.push('%');
            percent.push_str(&hex_pattern(byte >> 4));
            percent.push_str(&hex_pattern(byte & 15));
        }
        forms.push(percent);
        let mut unicode = String::new();
        for &unit in c.encode_utf16(&mut [0; 2]).iter() {
            unicode.push_str(r"\\u");
            for shift in [12, 8, 4, 0] {
                unicode.push_str(&hex_pattern((unit >> shift) as u8 & 15));
            }
        }
        forms.push(unicode);
        if let Some(short) = json_short_escape(c) {
            forms.push(regex::escape(short));
        }
        let _ = write!(pattern, "(?:{})", forms.join("|"));
    }
    pattern
}

/// One hex digit of `nibble`, matching either case.
fn hex_pattern(nibble: u8) -> String {
    if nibble < 10 {
        return char::from(b'0' + nibble).to_string();
    }
    let lower = char::from(b'a' + nibble - 10);
    format!("[{lower}{}]", lower.to_ascii_uppercase())
}

/// JSON's two-character escape of `c`, if it has one.
fn json_short_escape(c: char) -> Option<&'static str> {
    Some(match c {
        '"' => r#"\""#,
        '\\' => r"\\",
        '/' => r"\/",
        '\n' => r"\n",
        '\r' => r"\r",
        '\t' => r"\t",
        '\u{8}' => r"\b",
        '\u{c}' => r"\f",
        _ => return None,
    })
}

/// `text` with the credentials of every URL in it replaced by [`REDACTED`]: the password of
/// `scheme://user:password@host`, and the user of `scheme://user@host`, which is sent as basic
/// authentication too (`user:`), so a token given there is a credential.
pub fn redact_url_credentials(text: &str) -> String {
    static PASSWORD: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s:]*:)[^/?#\s]*@")
            .expect("a valid pattern")
    });
    static USER_ONLY: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s:<>]+@")
            .expect("a valid pattern")
    });
    let replacement = format!("${{head}}{REDACTED}@");
    let text = PASSWORD.replace_all(text, replacement.as_str());
    USER_ONLY
        .replace_all(&text, replacement.as_str())
        .into_owned()
}

/// The shortest user name (of a URL without a password) redacted wherever it appears, not
/// only as the basic-authentication pair: a token is long, a short name would blot out words.
const MIN_USER_TOKEN_CHARS: usize = 8;

/// The credentials of a URL that must never show, each as written in the URL and
/// percent-decoded (the header carries the decoded pair): its password and the `user:password`
/// pair that goes out as basic authentication; without a password, the pair `user:` and (a
/// token given as the user name) the user itself. None without either.
pub fn url_secrets(url: &str) -> Vec<Secret> {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return Vec::new();
    };
    let user = parsed.username();
    let password = parsed.password().unwrap_or_default();
    if user.is_empty() && password.is_empty() {
        return Vec::new();
    }
    let mut out = vec![
        format!("{user}:{password}"),
        format!("{}:{}", percent_decode(user), percent_decode(password)),
    ];
    if !password.is_empty() {
        out.extend([password.to_owned(), percent_decode(password)]);
    } else if percent_decode(user).chars().count() >= MIN_USER_TOKEN_CHARS {
        out.extend([user.to_owned(), percent_decode(user)]);
    }
    out.sort();
    out.dedup();
    out.into_iter().map(Secret::new).collect()
}

/// Whether the user and password of `url` (percent-decoded) are printable ASCII (spaces
/// included: they travel base64-encoded), or absent.
pub(super) fn url_credentials_are_ascii(url: &str) -> bool {
    reqwest::Url::parse(url).map_or(true, |parsed| {
        let pair = format!(
            "{}:{}",
            parsed.username(),
            parsed.password().unwrap_or_default()
        );
        percent_decode(&pair)
            .bytes()
            .all(|b| b == b' ' || b.is_ascii_graphic())
    })
}

/// The credentials of the proxies the HTTP client takes from the environment (`HTTP_PROXY`,
/// `HTTPS_PROXY`, `ALL_PROXY`, in either case): a proxy may echo them, as an endpoint may.
pub fn proxy_secrets() -> Vec<Secret> {
    ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"]
        .iter()
        .flat_map(|name| [name.to_string(), name.to_lowercase()])
        .filter_map(|name| std::env::var(name).ok())
        .flat_map(|url| url_secrets(&url))
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by a review: a key of another JSON type was quoted in the error.
    #[test]
    fn a_secret_of_another_type_is_not_shown() {
        for text in [
            "12345678901234",
            "true",
            r#"["sk-abcdef123"]"#,
            r#"{"k": "sk-abcdef123"}"#,
        ] {
            let err = serde_json::from_str::<Secret>(text)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("value not shown") && !err.contains("1234") && !err.contains("sk-"),
                "{err}"
            );
        }
        let key: Secret = serde_json::from_str(r#""sk-abc""#).unwrap();
        assert_eq!(key.expose(), "sk-abc");
    }

    fn redactor(secrets: &[&str]) -> Redactor {
        let secrets: Vec<Secret> = secrets.iter().map(|s| Secret::new(*s)).collect();
        Redactor::new(&secrets)
    }

    #[test]
    fn a_secret_in_hex_is_redacted() {
        let key = "sk-REV62hexkey";
        let hex_key = hex(key.as_bytes());
        assert_eq!(&hex_key[..6], "736b2d");
        let r = redactor(&[key]);
        for text in [hex_key.clone(), hex_key.to_uppercase()] {
            let shown = r.redact(&format!("bad key {text}!"));
            assert_eq!(shown, format!("bad key {REDACTED}!"));
        }
    }

    #[test]
    fn base64_matches_the_reference_encodings() {
        assert_eq!(base64(b"", BASE64_STANDARD), "");
        assert_eq!(base64(b"f", BASE64_STANDARD), "Zg==");
        assert_eq!(base64(b"fo", BASE64_STANDARD), "Zm8=");
        assert_eq!(base64(b"foo", BASE64_STANDARD), "Zm9v");
        assert_eq!(
            base64(b"alice:hunter2", BASE64_STANDARD),
            "YWxpY2U6aHVudGVyMg=="
        );
        assert_eq!(base64(&[0xfb, 0xff], BASE64_STANDARD), "+/8=");
        assert_eq!(base64(&[0xfb, 0xff], BASE64_URL_SAFE), "-_8=");
    }

    /// Found by a review: an endpoint that echoed the key upper-cased got it into the error.
    #[test]
    fn a_secret_echoed_in_another_case_is_redacted() {
        let r = redactor(&["sk-SecretAbc123"]);
        for echoed in ["SK-SECRETABC123", "sk-secretabc123", "sK-sEcReTaBc123"] {
            assert_eq!(
                r.redact(&format!("bad key {echoed}!")),
                "bad key <redacted>!"
            );
        }
        assert_eq!(r.redact("sk-SecretAbc124"), "sk-SecretAbc124");
    }

    #[test]
    fn every_form_of_a_secret_is_redacted() {
        let r = redactor(&["p@ss/w rd\"?", "alice:p@ss/w rd\"?"]);
        let forms = [
            "p@ss/w rd\"?",
            "p%40ss%2Fw%20rd%22%3F",
            "p%40ss%2fw+rd%22%3f",
            "p%40ss/w%20rd\"?",
            r#"p@ss\/w rd\"?"#,
            r"p\u0040ss\u002Fw\u0020rd\u0022\u003f",
            "YWxpY2U6cEBzcy93IHJkIj8=",
            "YWxpY2U6cEBzcy93IHJkIj8",
            "YWxpY2U6cEBzcy93IHJkIj8=",
            "cEBzcy93IHJkIj8=",
            "cEBzcy93IHJkIj8",
        ];
        for form in forms {
            let text = format!("before {form} after");
            assert_eq!(r.redact(&text), "before <redacted> after", "{form}");
        }
        // URL-safe base64 differs from the standard one where `+` and `/` appear.
        let r = redactor(&["???>>>??", "???>>>???"]);
        for form in [
            "Pz8/Pj4+Pz8=",
            "Pz8_Pj4-Pz8",
            "Pz8/Pj4+Pz8/",
            "Pz8_Pj4-Pz8_",
        ] {
            assert_eq!(r.redact(&format!("x {form} y")), "x <redacted> y", "{form}");
        }
        assert_eq!(redactor(&[]).redact("nothing secret"), "nothing secret");
        assert!(redactor(&["", ""]).pattern.is_none());
        assert!(!format!("{r:?}").contains('?'));
    }

    #[test]
    fn a_secret_inside_longer_base64_is_redacted_at_every_offset() {
        let key = "sk-SECRETKEY-1234567890abcdef";
        let r = redactor(&[key]);
        for before in ["", "B", "Be", "Bearer ", "Bearer  ", "user:"] {
            for after in ["", "!", "!!", "\n"] {
                for alphabet in [BASE64_STANDARD, BASE64_URL_SAFE] {
                    let encoded = base64(format!("{before}{key}{after}").as_bytes(), alphabet);
                    let shown = r.redact(&format!("b64:{encoded}"));
                    assert!(shown.contains(REDACTED), "{before:?} {after:?}: {shown}");
                    // What is left of the encoding no longer decodes to the key.
                    let left = shown.replace(REDACTED, "");
                    assert!(left.len() + 6 < encoded.len() + 4, "{shown}");
                }
            }
        }
    }

    #[test]
    fn a_huge_secret_still_redacts_as_written() {
        let key = "k".repeat(200_000);
        let r = redactor(&[&key]);
        assert_eq!(r.redact(&format!("a {key} b")), "a <redacted> b");
    }

    #[test]
    fn url_secrets_cover_the_password_and_the_pair_as_written_and_decoded() {
        let secrets: Vec<String> = url_secrets("http://al%20ice:s%40cret@h:1")
            .iter()
            .map(|s| s.expose().to_owned())
            .collect();
        assert_eq!(
            secrets,
            ["al ice:s@cret", "al%20ice:s%40cret", "s%40cret", "s@cret"]
        );
        let token: Vec<String> = url_secrets("http://sk-USERTOKEN123@h/")
            .iter()
            .map(|s| s.expose().to_owned())
            .collect();
        assert_eq!(token, ["sk-USERTOKEN123", "sk-USERTOKEN123:"]);
        let name: Vec<String> = url_secrets("http://al@h/")
            .iter()
            .map(|s| s.expose().to_owned())
            .collect();
        assert_eq!(name, ["al:"], "a short name is redacted as the pair only");
        assert!(url_secrets("http://h/").is_empty());
        assert!(url_secrets("not a url").is_empty());
    }
}
