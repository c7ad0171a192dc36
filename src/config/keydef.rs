//! How a key is declared: `KeyDef` (what the schema and the reference say about it), `Ty` (the
//! type of its value) and `config_struct!`, which declares each key of a table once and makes
//! from it the struct field, the `KeyDef` and the call of the key's reader.

/// The type of a key's value: drives how `-C`/environment strings are read (`layered`), the
/// JSON schema and the configuration reference (`schema`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    Str,
    /// A string matching this regular expression (schema `pattern`).
    Pattern(&'static str),
    /// One of these strings (a `Choice` enum's `NAMES`).
    Choice(&'static [&'static str]),
    /// An integer >= 1.
    PositiveInt,
    /// Bytes: an integer >= 1, or a string such as `"100MB"`, `"50 MiB"`.
    Size,
    Bool,
    /// A list of strings.
    List,
    /// A list of strings, or one string split on `;` and whitespace.
    ListOrStr,
    /// `11`, `12`, `13` (integer or string) or `"auto"`.
    CudaMajor,
    /// A list of strings, or one string split on `;` only (items may hold spaces:
    /// `nvidia :: sm_arch :: 90_real`).
    SemicolonList,
}

/// One key of `[tool.cudawheel]` or of one of its tables, as the schema and the reference
/// describe it. Made by `config_struct!` from the key's declaration in `keys`.
#[derive(Clone, Copy, Debug)]
// `default`, `required` and `doc` are read by the schema and reference generator (`schema`,
// run by `cargo test`).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct KeyDef {
    pub(crate) name: &'static str,
    pub(crate) ty: Ty,
    /// The default as a user would write it (`"auto"`, `false`), or a phrase (`inferred`);
    /// `"required"` for a key the schema requires.
    pub(crate) default: &'static str,
    pub(crate) required: bool,
    pub(crate) doc: &'static str,
    /// A target key allowed in one kind of target only (`bindings`: `"extension"`).
    pub(crate) only_in: Option<&'static str>,
    /// Environment variables read after `CUDAWHEEL_<KEY>` and before pyproject.toml (a top-level
    /// key's; `archs`: CMake's `CUDAARCHS`).
    pub(crate) env_above: &'static [&'static str],
    /// Environment variables read when nothing else sets the key (`host-compiler`:
    /// `CUDAHOSTCXX`, `CXX`).
    pub(crate) env_below: &'static [&'static str],
}

impl KeyDef {
    /// The environment variable of a top-level key: `CUDAWHEEL_<KEY>` (`max-memory` ->
    /// `CUDAWHEEL_MAX_MEMORY`).
    pub(crate) fn env_var(&self) -> String {
        format!(
            "CUDAWHEEL_{}",
            self.name.to_ascii_uppercase().replace('-', "_")
        )
    }
}

/// Declares a struct read from one table, each key once:
///
/// ```text
/// /// A note for readers of the code (optional).
/// field: RustType {
///     key: "the-key", ty: Ty::..., default: "as written" | required,
///     [only_in: "extension",] [env_above: &[...],] [env_below: &[...],]
///     read: <reader>,
///     doc: "What the user reads in the schema and the reference.",
/// }
/// ```
///
/// then, after `derived`, the fields that are not keys, each with the expression that makes it.
/// Gives the struct, `$table: &[KeyDef]` in declaration order, and
/// `fn $read($src: &dyn Source, args...) -> Result<Self, ConfigError>`, which reads the keys in
/// declaration order with their readers (`field::optional`, `or`, `sourced`, ...), then the
/// derived fields (whose expressions may use `$src` and the args).
macro_rules! config_struct {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident;
        keys $table:ident;
        fn $read:ident($src:ident $(, $arg:ident: $argty:ty)*);
        {
            $(
                $(#[doc = $note:literal])*
                $field:ident: $fty:ty {
                    key: $key:literal,
                    ty: $ty:expr,
                    default: $default:tt,
                    $(only_in: $only:literal,)?
                    $(env_above: $above:expr,)?
                    $(env_below: $below:expr,)?
                    read: $reader:expr,
                    doc: $doc:literal $(,)?
                }
            )*
        }
        derived {
            $( $(#[doc = $xnote:literal])* $xfield:ident: $xty:ty = $xexpr:expr, )*
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $(
                #[doc = concat!("`", $key, "`: ", $doc)]
                $(#[doc = $note])*
                pub $field: $fty,
            )*
            $( $(#[doc = $xnote])* pub $xfield: $xty, )*
        }

        /// Every key of this table, in declaration order.
        pub(crate) const $table: &[$crate::config::keydef::KeyDef] = &[$(
            $crate::config::keydef::KeyDef {
                name: $key,
                ty: $ty,
                default: config_struct!(@default $default),
                required: config_struct!(@required $default),
                doc: $doc,
                only_in: config_struct!(@option $($only)?),
                env_above: config_struct!(@list $($above)?),
                env_below: config_struct!(@list $($below)?),
            },
        )*];

        impl $name {
            /// Reads every key of this table from `$src` (declaration order), then the
            /// derived fields.
            pub(super) fn $read(
                $src: &dyn $crate::config::field::Source $(, $arg: $argty)*
            ) -> Result<Self, $crate::config::error::ConfigError> {
                Ok($name {
                    $( $field: ($reader)($src, $key)?, )*
                    $( $xfield: $xexpr, )*
                })
            }
        }
    };
    (@default required) => { "required" };
    (@default $text:literal) => { $text };
    (@required required) => { true };
    (@required $text:literal) => { false };
    (@option) => { None };
    (@option $v:literal) => { Some($v) };
    (@list) => { &[] };
    (@list $v:expr) => { $v };
}
pub(super) use config_struct;
