//! `Resolution`: every stage's outcome as one value. A build makes it stopping at the first
//! error and takes `into_resolved()`; a report makes it with `describe`, which also surveys the
//! environment, and renders from it alone.

use std::path::PathBuf;

use crate::compile::wrapped_env::{self, Prepared};
use crate::config::wrapped::Wrapped;
use crate::config::{Config, ConfigError, Mode, PythonInfo, ToolConfig};
use crate::error::Error;

use super::pipeline::{self, Probes, Stop};
use super::preview::{Failure, Isolation};
use super::survey::Environment;
use super::{Request, Resolved};

/// A stage's outcome.
#[derive(Debug)]
pub(crate) enum Outcome<T> {
    Done(T),
    Failed(Error),
    /// Stopped at the toolchain, whose failure `Environment::toolchain` holds.
    BlockedAtToolchain,
    /// Stopped at jax, whose failure `Environment::jax` holds.
    BlockedAtJax,
    /// Not tried: there is no project.
    NoProject,
}

/// The project folder's pyproject.toml.
#[derive(Debug)]
pub(crate) enum Project {
    /// The folder has none.
    Missing,
    Loaded(Box<Config>),
    /// It cannot be read: `Resolution::wheel` holds the error.
    Unreadable,
}

/// Everything known before compiling, stage by stage.
#[derive(Debug)]
pub(crate) struct Resolution {
    /// The interpreter that runs the build.
    pub(crate) python: PythonInfo,
    pub(crate) source_tree: PathBuf,
    pub(crate) project: Project,
    /// The settings in effect: the project's, else the defaults with the overrides (`None`:
    /// a build whose pyproject.toml cannot be read).
    pub(crate) tool: Option<Result<ToolConfig, ConfigError>>,
    /// What this environment has (a report's survey; `None` for a build, or when the
    /// settings cannot be read).
    pub(crate) environment: Option<Environment>,
    /// The stages 1-5 for the wheel.
    pub(crate) wheel: Outcome<Resolved>,
    /// Wrap mode (`build-backend` set): the wrapped build instead of stages 2-5 (a report's;
    /// `None` for a build, which goes to `wrap.rs`).
    pub(crate) wrapped: Option<WrapView>,
}

/// What a report says of a wrapped build: the settings and the environment the wrapped
/// backend would get with the toolchain the survey found (the toolkit folder named, not made).
#[derive(Debug)]
pub(crate) struct WrapView {
    pub(crate) settings: Wrapped,
    /// The variables, or why they cannot be told yet (no nvcc here: it comes with the build's
    /// requirements), rendered.
    pub(crate) env: Result<Prepared, String>,
}

impl From<Result<Resolved, Stop>> for Outcome<Resolved> {
    fn from(r: Result<Resolved, Stop>) -> Self {
        match r {
            Ok(r) => Outcome::Done(r),
            Err(Stop::Error(e)) => Outcome::Failed(e),
            Err(Stop::Toolchain) => Outcome::BlockedAtToolchain,
            Err(Stop::Jax) => Outcome::BlockedAtJax,
        }
    }
}

impl Resolution {
    /// What a build resolves: the stages in order, each probed when reached, stopping at the
    /// first error.
    pub(crate) fn for_build(req: &Request<'_>, config: Config, split: bool) -> Resolution {
        let tool = Some(Ok(config.tool.clone()));
        let project = Project::Loaded(Box::new(config.clone()));
        let wheel = pipeline::run(req, config, split, Probes::Now).into();
        Resolution {
            python: req.python.clone(),
            source_tree: req.source_tree.to_path_buf(),
            project,
            tool,
            environment: None,
            wheel,
            wrapped: None,
        }
    }

    /// What a report shows: the environment surveyed for the settings in effect (the
    /// project's, or the defaults where there is no readable pyproject.toml), then the stages
    /// for the wheel with what the survey probed.
    pub(crate) fn describe(req: &Request<'_>) -> Resolution {
        let has_pyproject = req.source_tree.join("pyproject.toml").is_file();
        let loaded = has_pyproject.then(|| Mode::load(req.source_tree, req.overrides));
        // Wrap mode: its `[tool.cudawheel]` are the settings (the project need not have a
        // `[project]` table, which is the wrapped backend's).
        let (project, unreadable, wrap_settings) = match loaded {
            None => (Project::Missing, None, None),
            Some(Ok(Mode::Native(c))) => (Project::Loaded(Box::new(one_major(*c))), None, None),
            Some(Ok(Mode::Wrapped(w))) => (Project::Unreadable, None, Some(*w)),
            Some(Err(e)) => (Project::Unreadable, Some(e), None),
        };
        let tool = match (&wrap_settings, &project) {
            (Some(s), _) => Ok(s.tool.clone()),
            (None, Project::Loaded(c)) => Ok(c.tool.clone()),
            _ => ToolConfig::parse(&toml::Table::new(), req.overrides),
        };
        let with_project = matches!(project, Project::Loaded(_)) && wrap_settings.is_none();
        let environment = tool
            .as_ref()
            .ok()
            .map(|t| Environment::survey(req, t, with_project));
        let wrapped = wrap_settings.map(|settings| WrapView {
            env: match environment.as_ref().map(|e| e.toolchain.toolchain()) {
                Some(Ok(tc)) => wrapped_env::plan(&settings, &tc, &req.overrides.env, req.python)
                    .map_err(|e| crate::render(&Error::from(e))),
                Some(Err(e)) => Err(e.to_string()),
                None => Err("the settings cannot be read (above)".into()),
            },
            settings,
        });
        let wheel = match (&project, unreadable, &environment) {
            _ if wrapped.is_some() => Outcome::NoProject,
            (_, Some(e), _) => Outcome::Failed(e.into()),
            (Project::Loaded(c), None, Some(env)) => {
                pipeline::run(req, (**c).clone(), false, Probes::Surveyed(env)).into()
            }
            _ => Outcome::NoProject,
        };
        Resolution {
            python: req.python.clone(),
            source_tree: req.source_tree.to_path_buf(),
            project,
            tool: Some(tool),
            environment,
            wheel,
            wrapped,
        }
    }

    /// Why the wheel's stages stopped, wherever that error is kept; `None` when they did not
    /// fail (done, or no project).
    pub(crate) fn failure(&self) -> Option<Failure<'_>> {
        let env = self.environment.as_ref();
        match &self.wheel {
            Outcome::Done(_) | Outcome::NoProject => None,
            Outcome::Failed(e) => Some(Failure::Error(e)),
            Outcome::BlockedAtToolchain => env?.toolchain.toolchain().err().map(Failure::Toolchain),
            Outcome::BlockedAtJax => match env?.jax.as_ref()? {
                Err(e) => Some(Failure::Jax(e)),
                Ok(_) => None,
            },
        }
    }

    /// What a build uses, or the first error a build meets.
    pub(crate) fn into_resolved(self) -> Result<Resolved, Error> {
        let path = self.source_tree.join("pyproject.toml");
        let missing = |message: &str| {
            Error::from(ConfigError::Io {
                path: path.clone(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, message.to_string()),
            })
        };
        let kept = |e: Option<Error>| e.unwrap_or_else(|| missing("no error was kept"));
        match self.wheel {
            Outcome::Done(r) => Ok(r),
            Outcome::Failed(e) => Err(e),
            Outcome::BlockedAtToolchain => Err(kept(
                self.environment
                    .and_then(|env| env.toolchain.into_error())
                    .map(Error::from),
            )),
            Outcome::BlockedAtJax => Err(kept(
                self.environment
                    .and_then(|env| env.jax)
                    .and_then(Result::err)
                    .map(Error::from),
            )),
            Outcome::NoProject => Err(missing("no such file")),
        }
    }
}

impl Resolution {
    /// What an isolated build installs, and whether that is what this environment lacks;
    /// `None` without a survey or when no toolkit fits the settings.
    pub(crate) fn isolation(&self) -> Option<Isolation<'_>> {
        let env = self.environment.as_ref()?;
        let requirements = env.requirements.as_deref()?;
        let tool = self.tool.as_ref()?.as_ref().ok()?;
        let toolkit = env.toolchain.toolkit_request()?;
        let supplies_missing = self
            .failure()
            .is_some_and(|f| f.supplied_by_isolation(tool, toolkit));
        Some(Isolation {
            requirements,
            supplies_missing,
        })
    }
}

/// A report describes one build: with `cuda` listing several majors, the highest's (said so).
fn one_major(config: Config) -> Config {
    let Some(majors) = config.several() else {
        return config;
    };
    let parts = config.parts().unwrap_or_default();
    match parts.into_iter().last() {
        Some(last) => {
            let major = last.part.as_ref().map_or(0, |p| p.major);
            crate::ui::status(&format!("`cuda` lists CUDA {}: this report describes the CUDA {major} build (`-C cuda=N` for another)", majors.list()));
            last
        }
        None => config,
    }
}
