//! The one error type of the core. Every fallible public function returns [`Result`].

use std::path::PathBuf;

/// Everything that can go wrong in blagent-core.
///
/// The variants fall in three families that the bindings map to Python exceptions and the CLI
/// maps to exit codes: bad input from the caller (exit 1), I/O failures (exit 3), and internal
/// errors that indicate a bug.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The repository path does not exist.
    #[error("repository not found: {0}")]
    RepoNotFound(PathBuf),
    /// The repository path exists but is not a directory.
    #[error("repository path is not a directory: {0}")]
    NotADirectory(PathBuf),
    /// The caller passed something unusable (an empty issue, a zero top-k, …).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A dataset or query file has a malformed line.
    #[error("{path}:{line}: {message}")]
    Dataset {
        /// The file being read.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// Reading or writing a file failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A model folder is missing, malformed, or the model failed to run.
    #[error("model error: {0}")]
    Model(String),
    /// The LLM endpoint failed after retries, or no LLM is configured.
    #[error("LLM error: {0}")]
    Llm(String),
    /// JSON (de)serialization failed.
    #[error("JSON error: {0}")]
    Json(#[from] serde_json::Error),
    /// The run was interrupted (Ctrl-C): see [`crate::cancel`].
    #[error("interrupted")]
    Cancelled,
    /// A bug: an invariant that should hold did not.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// Which family the error is in: the one place that decides exit codes, Python exception
    /// classes and batch failure kinds.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::RepoNotFound(_)
            | Error::NotADirectory(_)
            | Error::InvalidInput(_)
            | Error::Dataset { .. } => ErrorKind::Input,
            // A path the system cannot even look up (a NUL byte in it: refused by Rust, not
            // by the system) is the caller's input.
            Error::Io { source, .. }
                if source.kind() == std::io::ErrorKind::InvalidInput
                    && source.raw_os_error().is_none() =>
            {
                ErrorKind::Input
            }
            Error::Io { .. } => ErrorKind::Io,
            Error::Model(_) => ErrorKind::Model,
            Error::Llm(_) => ErrorKind::Llm,
            Error::Cancelled => ErrorKind::Interrupted,
            Error::Json(_) | Error::Internal(_) => ErrorKind::Internal,
        }
    }

    /// Whether the error is the caller's fault (bad input) rather than the environment's.
    pub fn is_input_error(&self) -> bool {
        self.kind() == ErrorKind::Input
    }
}

/// The families of [`Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The caller's input is unusable (exit 1, `InputError`).
    Input,
    /// Reading or writing failed (exit 3, `BlagentIOError`).
    Io,
    /// The embedding model is missing, malformed or failed (exit 3, `ModelError`).
    Model,
    /// The LLM endpoint failed after retries (exit 3, `LlmError`).
    Llm,
    /// Interrupted by the user (exit 130, `KeyboardInterrupt`).
    Interrupted,
    /// A bug (exit 3, `InternalError`).
    Internal,
}

impl ErrorKind {
    /// Every kind.
    pub const ALL: [ErrorKind; 6] = [
        ErrorKind::Input,
        ErrorKind::Io,
        ErrorKind::Model,
        ErrorKind::Llm,
        ErrorKind::Interrupted,
        ErrorKind::Internal,
    ];

    /// The CLI's exit code for an error of this kind (the bindings export them as
    /// `EXIT_CODES`, which the CLI uses).
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorKind::Input => 1,
            ErrorKind::Interrupted => 130,
            ErrorKind::Io | ErrorKind::Model | ErrorKind::Llm | ErrorKind::Internal => 3,
        }
    }

    /// The `snake_case` name (batch failure records use it).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Input => "input",
            ErrorKind::Io => "io",
            ErrorKind::Model => "model",
            ErrorKind::Llm => "llm",
            ErrorKind::Interrupted => "interrupted",
            ErrorKind::Internal => "internal",
        }
    }
}

/// The message of a caught panic (its `&str` or `String` payload; `unknown panic` otherwise).
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

/// What `tokenize` returns, or, where the tokenizer panics on the text (a pre-tokenizer regex
/// that Oniguruma gives up on panics rather than failing), [`Error::Model`] saying that the
/// tokenizer of `source` failed, with the panic's message.
pub fn tokenize_or_refuse<T>(
    source: &std::path::Path,
    tokenize: impl FnOnce() -> Result<T>,
) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(tokenize)).unwrap_or_else(|panic| {
        Err(Error::Model(format!(
            "the tokenizer of {} failed on a text ({}); use another tokenizer",
            source.display(),
            panic_message(&*panic)
        )))
    })
}

/// `Result` with the core's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_with_a_nul_byte_is_bad_input_and_a_system_error_is_io() {
        let nul = std::fs::metadata("repo\0x").unwrap_err();
        assert_eq!(Error::io("repo\u{0}x", nul).kind(), ErrorKind::Input);
        let system = std::io::Error::from_raw_os_error(22); // EINVAL from the system
        assert_eq!(Error::io("x", system).kind(), ErrorKind::Io);
        let missing = std::fs::metadata("/nonexistent/blagent").unwrap_err();
        assert_eq!(Error::io("x", missing).kind(), ErrorKind::Io);
    }
}
