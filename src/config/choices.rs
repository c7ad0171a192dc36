//! The keys whose value is one of a few names. Each enum is declared once with `choice_enum!`,
//! variant by variant with its spelling; that one table gives the parser (`Field::choice`), the
//! schema's `enum` list and the reference's type column (`Ty::Choice(T::NAMES)`), and `name()`.

/// An enum whose values are written as one of a few names.
pub(crate) trait Choice: Copy + 'static {
    /// Each spelling with its variant, in declaration order.
    const SPELLINGS: &'static [(&'static str, Self)];
    /// The spellings alone, in declaration order.
    const NAMES: &'static [&'static str];
}

/// Declares an enum of named choices: `Variant = "spelling"`, one line per variant (attributes,
/// doc comments and `#[default]` pass through). Implements `Choice` and an inherent `name()`.
macro_rules! choice_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $spelling:literal, )+
        }
    ) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $(#[$meta])*
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $crate::config::choices::Choice for $name {
            const SPELLINGS: &'static [(&'static str, Self)] = &[$(($spelling, $name::$variant)),+];
            const NAMES: &'static [&'static str] = &[$($spelling),+];
        }

        impl $name {
            /// The spelling of this value in pyproject.toml.
            #[allow(dead_code)]
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $spelling, )+
                }
            }
        }
    };
}
pub(super) use choice_enum;

choice_enum! {
    /// `toolkit`: where nvcc comes from.
    pub(crate) enum ToolkitChoice {
        Auto = "auto",
        System = "system",
        Pip = "pip",
    }
}

choice_enum! {
    /// `ptx`: which PTX to embed.
    pub(crate) enum Ptx {
        Highest = "highest",
        None = "none",
        All = "all",
    }
}

choice_enum! {
    /// `cudart`: how the CUDA runtime is linked.
    pub(crate) enum Cudart {
        Shared = "shared",
        Static = "static",
    }
}

choice_enum! {
    /// `cuda-deps`: how the NVIDIA runtime wheels are declared.
    pub(crate) enum CudaDeps {
        Required = "required",
        Extra = "extra",
        None = "none",
    }
}

choice_enum! {
    /// The binding library an extension is written with.
    #[derive(Default)]
    pub(crate) enum Bindings {
        /// The CPython C API: nothing added.
        #[default]
        None = "none",
        Pybind11 = "pybind11",
        Nanobind = "nanobind",
        /// A PyTorch C++/CUDA extension (`bindings::torch`).
        Torch = "torch",
        /// A JAX extension through XLA FFI: a nanobind module plus jax's FFI headers on every
        /// target (`bindings::jax`).
        Jax = "jax",
    }
}

choice_enum! {
    /// Which driver a derived variant's `cuda_version_lower_bound` names.
    #[derive(Default)]
    pub(crate) enum DriverFloor {
        /// `<major>.0`: CUDA's minor-version compatibility.
        #[default]
        Mvc = "mvc",
        /// The toolkit's `major.minor`.
        Toolkit = "toolkit",
    }
}

choice_enum! {
    /// `target`: the CPU the wheel is for (`ToolConfig::target` keeps its spelling).
    pub(crate) enum TargetCpu {
        X86_64 = "x86_64",
        Aarch64 = "aarch64",
    }
}

choice_enum! {
    /// `split`: one wheel, or the GPU code in a wheel of its own (`ToolConfig::split` keeps
    /// where `"library"` was set).
    pub(crate) enum Split {
        None = "none",
        Library = "library",
    }
}

/// `cuda`: a CUDA major, or the one the toolkit found has, or several majors built into one
/// wheel (`majors`: the build makes one build per major, `Config::parts`, so the stages after
/// `config` only see one major). Not a `Choice`: any major parses, and the supported ones are
/// checked with their own message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CudaChoice {
    Auto,
    Major(u32),
    Several(Majors),
}

/// Distinct CUDA majors (a set: bit `m` for major `m`), lowest first when iterated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Majors(u32);

impl Majors {
    pub(crate) fn of(majors: &[u32]) -> Majors {
        Majors(majors.iter().fold(0, |bits, m| bits | (1 << m)))
    }

    pub(crate) fn iter(self) -> impl Iterator<Item = u32> {
        (0..32).filter(move |m| self.0 & (1 << m) != 0)
    }

    pub(crate) fn contains(self, major: u32) -> bool {
        major < 32 && self.0 & (1 << major) != 0
    }

    /// `12, 13`
    pub(crate) fn list(self) -> String {
        self.iter()
            .map(|m| m.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}
