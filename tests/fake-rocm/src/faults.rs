//! Fault rules: which call misbehaves, and how. The first rule whose library, phase, `when`
//! conditions, `env` values and `solvers` all match wins. Hangs, crashes and aborts are real (an
//! infinite loop, SIGSEGV, abort()) because the caller's watchdog is what is under test.

use crate::model::{self, RawRule};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// `when` keys every lib has: how many convolutions (MIOpen) and GEMMs (hipBLASLt, rocBLAS)
/// this process ran before the call, so a fault can need earlier calls in the same process
/// (TheRock#5581: a lock-up only after many convolutions).
pub const PRIOR_KEYS: [&str; 2] = ["prior_conv", "prior_gemm"];
static PRIOR_CONV: AtomicI64 = AtomicI64::new(0);
static PRIOR_GEMM: AtomicI64 = AtomicI64::new(0);

/// What a call that went ahead was, for the `prior_*` counts.
#[derive(Clone, Copy, Debug)]
pub enum Ran {
    Conv,
    Gemm,
}

/// Counts a call that went ahead (after its own rule was checked: a call does not count itself).
pub fn ran(what: Ran) {
    match what {
        Ran::Conv => PRIOR_CONV.fetch_add(1, Ordering::Relaxed),
        Ran::Gemm => PRIOR_GEMM.fetch_add(1, Ordering::Relaxed),
    };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lib {
    Miopen,
    Hipblaslt,
    Rocblas,
    Hiprand,
    Memcpy,
    Cast,
    Graph,
}

impl Lib {
    fn parse(s: &str) -> Option<Lib> {
        Some(match s {
            "miopen" => Lib::Miopen,
            "hipblaslt" => Lib::Hipblaslt,
            "rocblas" => Lib::Rocblas,
            "hiprand" => Lib::Hiprand,
            "memcpy" => Lib::Memcpy,
            "cast" => Lib::Cast,
            "graph" => Lib::Graph,
            _ => return None,
        })
    }

    /// The `when` keys each library's calls describe themselves with.
    fn keys(self) -> &'static [&'static str] {
        match self {
            Lib::Miopen => &[
                "n",
                "c_in",
                "c_out",
                "h",
                "w",
                "kh",
                "kw",
                "dtype",
                "direction",
                "solver",
                "groups",
                "layout",
            ],
            Lib::Hipblaslt | Lib::Rocblas => &["m", "n", "k", "batch", "dtype"],
            Lib::Hiprand => &["n"],
            Lib::Memcpy => &["kind", "bytes", "pinned"],
            Lib::Cast => &["from", "to", "n"],
            Lib::Graph => &["replay"],
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Hang,
    Segv,
    Abort,
    NotSupported,
    Error,
    Zeros,
    Nan,
    Stale,
}

impl Action {
    fn parse(s: &str, lib: Lib) -> Result<Action, String> {
        let a = match s {
            "hang" => Action::Hang,
            "segv" => Action::Segv,
            "abort" => Action::Abort,
            "not_supported" => Action::NotSupported,
            "error" => Action::Error,
            "zeros" => Action::Zeros,
            "nan" => Action::Nan,
            "stale" => Action::Stale,
            _ => {
                return Err(format!(
                    "unknown action `{s}` (expected hang, segv, abort, not_supported, error, zeros, nan or stale)"
                ));
            }
        };
        let graph = lib == Lib::Graph;
        let fits = match a {
            Action::Stale => graph,
            Action::Zeros | Action::Nan => !graph,
            _ => true,
        };
        if fits {
            Ok(a)
        } else {
            Err(format!("action `{s}` does not apply to lib `{lib}`"))
        }
    }

    /// Hang, crash and abort never return; data actions change the output.
    pub fn is_trap(self) -> bool {
        matches!(self, Action::Hang | Action::Segv | Action::Abort)
    }
}

impl fmt::Display for Lib {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format!("{self:?}").to_lowercase())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Compile,
    Run,
    Find,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cmp {
    Eq,
    Gt,
    Ge,
    Lt,
    Le,
}

#[derive(Debug)]
struct Cond {
    key: String,
    cmp: Cmp,
    num: Option<i64>,
    text: String,
}

impl Cond {
    fn parse(key: &str, v: &toml::Value) -> Result<Cond, String> {
        let raw = match v {
            toml::Value::String(s) => s.trim().to_string(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => {
                return Err(format!(
                    "`{key}`: expected a string, found a {}",
                    other.type_str()
                ));
            }
        };
        let (cmp, rest) = [
            (">=", Cmp::Ge),
            ("<=", Cmp::Le),
            ("==", Cmp::Eq),
            (">", Cmp::Gt),
            ("<", Cmp::Lt),
            ("=", Cmp::Eq),
        ]
        .iter()
        .find_map(|(p, c)| raw.strip_prefix(p).map(|r| (*c, r.trim())))
        .unwrap_or((Cmp::Eq, raw.as_str()));
        let num = rest.parse::<i64>().ok();
        if cmp != Cmp::Eq && num.is_none() {
            return Err(format!("`{key}`: `{raw}` compares with a non-number"));
        }
        Ok(Cond {
            key: key.to_string(),
            cmp,
            num,
            text: rest.to_string(),
        })
    }

    fn matches(&self, v: &V) -> bool {
        match (v, self.num) {
            (V::N(x), Some(c)) => match self.cmp {
                Cmp::Eq => *x == c,
                Cmp::Gt => *x > c,
                Cmp::Ge => *x >= c,
                Cmp::Lt => *x < c,
                Cmp::Le => *x <= c,
            },
            (V::N(x), None) => x.to_string() == self.text,
            (V::S(s), _) => self.cmp == Cmp::Eq && s.eq_ignore_ascii_case(&self.text),
        }
    }
}

/// A value a call describes itself with.
#[derive(Debug, Clone)]
pub enum V {
    N(i64),
    S(&'static str),
}

#[derive(Debug)]
pub struct Rule {
    index: usize,
    pub lib: Lib,
    pub action: Action,
    phase: Option<Phase>,
    when: Vec<Cond>,
    env: Vec<(String, String)>,
    solvers: Option<Vec<u64>>,
    announced: AtomicBool,
}

impl Rule {
    pub fn has_key(&self, key: &str) -> bool {
        self.when.iter().any(|c| c.key == key)
    }
}

pub fn compile(index: usize, r: RawRule) -> Result<Rule, String> {
    let lib = Lib::parse(&r.lib).ok_or_else(|| {
        format!(
            "unknown lib `{}` (expected miopen, hipblaslt, rocblas, hiprand, memcpy, cast or graph)",
            r.lib
        )
    })?;
    let action = Action::parse(&r.action, lib)?;
    let phase = match (lib, r.phase.as_deref()) {
        (Lib::Miopen, Some("compile")) => Some(Phase::Compile),
        (Lib::Miopen, Some("run")) => Some(Phase::Run),
        (Lib::Miopen, Some("find")) => Some(Phase::Find),
        (Lib::Miopen, Some(p)) => {
            return Err(format!(
                "unknown phase `{p}` (expected compile, run or find)"
            ));
        }
        _ => None,
    };
    let mut when = Vec::new();
    for (k, v) in &r.when {
        if !lib.keys().contains(&k.as_str()) && !PRIOR_KEYS.contains(&k.as_str()) {
            return Err(format!(
                "`when` key `{k}` is not one of lib `{lib}`'s keys ({}, {})",
                lib.keys().join(", "),
                PRIOR_KEYS.join(", ")
            ));
        }
        when.push(Cond::parse(k, v)?);
    }
    if r.solvers.is_some() && lib != Lib::Miopen {
        return Err("`solvers` applies to lib `miopen` only".into());
    }
    Ok(Rule {
        index,
        lib,
        action,
        phase,
        when,
        env: r.env.into_iter().collect(),
        solvers: r.solvers,
        announced: AtomicBool::new(false),
    })
}

fn env_matches(env: &[(String, String)]) -> bool {
    env.iter().all(|(k, want)| match std::env::var(k) {
        Ok(v) => v == *want,
        Err(_) => want.is_empty(),
    })
}

/// The first rule of `rules` that matches; pure apart from reading the environment.
pub fn first_match<'m>(
    rules: &'m [Rule],
    lib: Lib,
    phase: Option<Phase>,
    keys: &[(&str, V)],
    usable: impl Fn(&Rule) -> bool,
) -> Option<&'m Rule> {
    rules.iter().find(|r| {
        r.lib == lib
            && (r.phase.is_none() || r.phase == phase)
            && usable(r)
            && r.when.iter().all(|c| {
                keys.iter()
                    .find(|(k, _)| *k == c.key)
                    .is_some_and(|(_, v)| c.matches(v))
            })
            && r.solvers.as_ref().is_none_or(|ids| {
                keys.iter().any(|(k, v)| {
                    *k == "solver" && matches!(v, V::N(id) if ids.contains(&(*id as u64)))
                })
            })
            && env_matches(&r.env)
    })
}

/// The action of the first matching rule of the loaded model, announced on stderr the first time
/// each rule fires (so a worker log says why a unit failed).
pub fn check(
    lib: Lib,
    phase: Option<Phase>,
    keys: &[(&str, V)],
    usable: impl Fn(&Rule) -> bool,
) -> Option<Action> {
    let m = model::get().ok()?;
    let mut keys = keys.to_vec();
    keys.push(("prior_conv", V::N(PRIOR_CONV.load(Ordering::Relaxed))));
    keys.push(("prior_gemm", V::N(PRIOR_GEMM.load(Ordering::Relaxed))));
    let keys = keys.as_slice();
    let r = first_match(&m.rules, lib, phase, keys, usable)?;
    if r.action.is_trap() || !r.announced.swap(true, Ordering::Relaxed) {
        eprintln!(
            "fake-rocm: fault rule #{} ({} {:?}{}) matches {}",
            r.index + 1,
            r.lib,
            r.action,
            phase.map(|p| format!(" in {p:?}")).unwrap_or_default(),
            keys.iter()
                .map(|(k, v)| match v {
                    V::N(x) => format!("{k}={x}"),
                    V::S(s) => format!("{k}={s}"),
                })
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    Some(r.action)
}

/// Carries out a hang, crash or abort; returns for every other action.
pub fn trap(a: Action) {
    match a {
        Action::Hang => loop {
            std::hint::spin_loop();
        },
        Action::Segv => {
            // A handler installed by the host (Rust's own stack-overflow handler, for one) would
            // swallow a raised SIGSEGV: restore the default action and unblock it first.
            // SAFETY: plain libc signal calls on this thread.
            unsafe {
                libc::signal(libc::SIGSEGV, libc::SIG_DFL);
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, libc::SIGSEGV);
                libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
                libc::raise(libc::SIGSEGV);
            }
            std::process::abort();
        }
        Action::Abort => std::process::abort(),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Model;

    fn rules(text: &str) -> Vec<Rule> {
        Model::parse(text).unwrap().rules
    }

    #[test]
    fn a_prior_condition_needs_earlier_calls_and_is_a_key_of_every_lib() {
        let r = rules(
            r#"
[[fault]]
lib = "miopen"
action = "zeros"
phase = "run"
when = { c_in = "64", prior_gemm = ">=1" }
[[fault]]
lib = "memcpy"
action = "error"
when = { prior_conv = ">2" }
"#,
        );
        let conv = |gemms: i64| {
            vec![
                ("c_in", V::N(64)),
                ("prior_conv", V::N(0)),
                ("prior_gemm", V::N(gemms)),
            ]
        };
        let hit = |keys: &[(&str, V)]| {
            first_match(&r, Lib::Miopen, Some(Phase::Run), keys, |_| true).map(|r| r.action)
        };
        assert_eq!(hit(&conv(0)), None, "alone in its process");
        assert_eq!(hit(&conv(1)), Some(Action::Zeros));
        let copy = |convs: i64| [("prior_conv", V::N(convs)), ("prior_gemm", V::N(0))];
        let hit = |keys: &[(&str, V)]| {
            first_match(&r, Lib::Memcpy, None, keys, |_| true).map(|r| r.action)
        };
        assert_eq!(hit(&copy(2)), None);
        assert_eq!(hit(&copy(3)), Some(Action::Error));
        assert!(
            Model::parse(
                "[[fault]]\nlib = \"memcpy\"\naction = \"error\"\nwhen = { prior_x = \"1\" }\n"
            )
            .is_err()
        );
    }

    #[test]
    fn conditions_and_first_match() {
        let r = rules(
            r#"
[[fault]]
lib = "miopen"
action = "hang"
phase = "compile"
when = { c_in = "16", c_out = "32", h = ">32", dtype = "f32" }
[[fault]]
lib = "miopen"
action = "not_supported"
when = { h = "<=8" }
solvers = [53]
"#,
        );
        let keys = |c_in: i64, h: i64, solver: i64| {
            vec![
                ("c_in", V::N(c_in)),
                ("c_out", V::N(32)),
                ("h", V::N(h)),
                ("dtype", V::S("f32")),
                ("solver", V::N(solver)),
            ]
        };
        let hit = |phase, k: &[(&str, V)]| {
            first_match(&r, Lib::Miopen, Some(phase), k, |_| true).map(|r| r.action)
        };
        assert_eq!(hit(Phase::Compile, &keys(16, 33, 1)), Some(Action::Hang));
        assert_eq!(hit(Phase::Compile, &keys(16, 32, 1)), None);
        assert_eq!(hit(Phase::Run, &keys(16, 33, 1)), None, "phase must match");
        assert_eq!(
            hit(Phase::Compile, &keys(3, 8, 53)),
            Some(Action::NotSupported)
        );
        assert_eq!(hit(Phase::Run, &keys(3, 8, 54)), None, "solver filter");
        assert_eq!(
            first_match(&r, Lib::Rocblas, None, &keys(16, 33, 1), |_| true).map(|r| r.action),
            None
        );
    }

    #[test]
    fn env_conditions() {
        let r = rules(
            r#"
[[fault]]
lib = "hiprand"
action = "zeros"
when = { n = ">=1048576" }
env = { FAKE_ROCM_SURELY_UNSET_VARIABLE = "1" }
[[fault]]
lib = "hiprand"
action = "nan"
env = { FAKE_ROCM_SURELY_UNSET_VARIABLE = "" }
"#,
        );
        let k = [("n", V::N(1 << 20))];
        let a = first_match(&r, Lib::Hiprand, None, &k, |_| true).map(|r| r.action);
        assert_eq!(
            a,
            Some(Action::Nan),
            "unset variable matches only the empty value"
        );
    }

    #[test]
    fn bad_rules() {
        for (text, want) in [
            ("lib = \"graph\"\naction = \"zeros\"", "does not apply"),
            ("lib = \"cast\"\naction = \"stale\"", "does not apply"),
            ("lib = \"gpu\"\naction = \"hang\"", "unknown lib"),
            (
                "lib = \"miopen\"\naction = \"hang\"\nphase = \"link\"",
                "unknown phase",
            ),
            (
                "lib = \"memcpy\"\naction = \"zeros\"\nwhen = { bytes = \">big\" }",
                "non-number",
            ),
            (
                "lib = \"rocblas\"\naction = \"hang\"\nsolvers = [1]",
                "`miopen` only",
            ),
        ] {
            let e = Model::parse(&format!("[[fault]]\n{text}\n")).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
