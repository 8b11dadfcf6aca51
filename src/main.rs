//! Thin entry point: parse the CLI, run one command, map its error to an exit code.

use clap::Parser;
use rocsweep::cli::{Cli, Command};
use rocsweep::exec::run::{self, CmdError, Stop};
use rocsweep::exit;

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::BAD_INPUT
            } else {
                exit::OK
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let is_run = matches!(cli.command, Command::Run(_));
    if cli.rocm.len() > 1 && !is_run {
        rocsweep::noteln!(
            "error: --rocm given {} times: only `run` takes several ROCm trees",
            cli.rocm.len()
        );
        std::process::exit(exit::BAD_INPUT);
    }
    // Several trees are the run's to resolve (each its workers' own); one is every process's.
    if let [value] = cli.rocm.as_slice() {
        use rocsweep::rocm_tree::discover;
        match discover::resolve_flag(value) {
            // Workers inherit it, so the backend they open uses the same tree.
            // SAFETY: set once at start-up, before any thread is spawned.
            Ok(path) => unsafe { std::env::set_var(discover::ROCM_ENV, path) },
            Err(why) => {
                rocsweep::noteln!("error: {why}");
                std::process::exit(exit::BAD_INPUT);
            }
        }
    }
    if let Some(python) = &cli.python {
        match python_flag(python) {
            // Workers inherit it: the torch backend starts its Python side with it.
            // SAFETY: set once at start-up, before any thread is spawned.
            Ok(path) => unsafe { std::env::set_var(rocsweep::backend::torch::PYTHON_VAR, path) },
            Err(why) => {
                rocsweep::noteln!("error: {why}");
                std::process::exit(exit::BAD_INPUT);
            }
        }
    }
    let keeps_going = matches!(cli.command, Command::Run(_) | Command::Merge { .. });
    let code = dispatch(cli.command, &cli.rocm);
    // A run or merge whose stdout went away kept going (its progress was dropped, its results
    // were not); any other command's output is what it is for, so losing it is a failure.
    if rocsweep::console::stdout_gone() && !keeps_going && code != exit::FAILURE {
        rocsweep::noteln!(
            "error: stdout: the command's output could not be written (closed or full)"
        );
        std::process::exit(exit::FAILURE);
    }
    std::process::exit(code);
}

/// `--python`: an executable file, by path or found on PATH, made absolute so that every worker
/// (whatever its directory) starts the same one.
fn python_flag(value: &std::path::Path) -> Result<std::path::PathBuf, String> {
    let found = if value.components().count() > 1 {
        Some(value.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(value))
                .find(|p| p.is_file())
        })
    };
    match found.filter(|p| p.is_file()) {
        Some(p) => {
            std::path::absolute(&p).map_err(|e| format!("--python {}: {e}", value.display()))
        }
        None => {
            let why = if value.is_dir() {
                format!(
                    "a directory, not a Python executable (e.g. {})",
                    value.join("bin/python").display()
                )
            } else {
                rocsweep::error::path_problem(value).unwrap_or_else(|| "not a regular file".into())
            };
            Err(format!(
                "--python {}: {why} (give the path of a python executable whose environment has torch)",
                value.display()
            ))
        }
    }
}

fn dispatch(command: Command, rocm: &[std::path::PathBuf]) -> i32 {
    match command {
        c @ Command::Run(_) => run_command(c, rocm),
        Command::Merge {
            dirs,
            out,
            allow_missing,
            no_report,
            quiet,
        } => merge_command(&dirs, &out, allow_missing, no_report, quiet),
        c @ (Command::Report { .. }
        | Command::Compare { .. }
        | Command::Recommend { .. }
        | Command::Repro { .. }
        | Command::Import { .. }) => analysis_command(c),
        Command::Tune {
            run_dir,
            out,
            verify,
        } => {
            let o = rocsweep::tune::Options {
                run_dir,
                out,
                verify,
            };
            match rocsweep::tune::command(&o) {
                Ok(code) => code,
                Err(e) => report(e),
            }
        }
        c => device_command(c),
    }
}

/// `run`: the sweep, then the report unless `--no-report`; the exit code says how it ended.
fn run_command(command: Command, rocm: &[std::path::PathBuf]) -> i32 {
    let Command::Run(mut opts) = command else {
        return exit::FAILURE;
    };
    opts.command_line = std::env::args().collect();
    opts.rocm = rocm.iter().map(|p| p.display().to_string()).collect();
    let result = run::run(&opts);
    if let Ok(run::RunReport { dir: Some(dir), .. }) = &result
        && !opts.no_report
    {
        rocsweep::report::write_after(dir, "run", opts.quiet);
    }
    match result {
        Ok(r) if r.stopped == Some(Stop::Interrupted) => exit::INTERRUPTED,
        Ok(r) if r.stopped == Some(Stop::DeviceUnhealthy) => exit::DEVICE_UNHEALTHY,
        Ok(r) if r.disagreements > 0 => exit::CONFIRM_DISAGREED,
        Ok(r) if opts.fail_on_failure && r.failures > 0 => exit::UNITS_FAILED,
        Ok(_) => exit::OK,
        Err(e) => report(e),
    }
}

fn merge_command(
    dirs: &[std::path::PathBuf],
    out: &std::path::Path,
    allow_missing: bool,
    no_report: bool,
    quiet: bool,
) -> i32 {
    let opts = rocsweep::merge::MergeOptions {
        dirs,
        out,
        allow_missing,
        no_report,
        quiet,
        command_line: std::env::args().collect(),
    };
    match rocsweep::merge::command(&opts) {
        Ok(code) => code,
        Err(e) => report(e),
    }
}

/// The commands that read run directories or logs: report, compare, recommend, repro, import.
fn analysis_command(command: Command) -> i32 {
    match command {
        Command::Report { run_dir } if is_sequence_run(&run_dir) => {
            rocsweep::sayln!(
                "{}: a sequence run; the run itself wrote its summary.md and report.html",
                run_dir.display()
            );
            exit::OK
        }
        Command::Repro { run_dir, unit_id } if is_sequence_run(&run_dir) => {
            match rocsweep::exec::sequence::repro::command(&run_dir, &unit_id) {
                Ok(text) => {
                    rocsweep::console::say(&text);
                    exit::OK
                }
                Err(e) => report(e),
            }
        }
        Command::Compare { run_a, run_b, .. }
            if is_sequence_run(&run_a) || is_sequence_run(&run_b) =>
        {
            report(CmdError::BadInput(format!(
                "compare reads sweep runs; {} is a sequence run (its summary.md says what it found)",
                if is_sequence_run(&run_a) {
                    &run_a
                } else {
                    &run_b
                }
                .display()
            )))
        }
        Command::Recommend { run_dir, .. } if is_sequence_run(&run_dir) => {
            report(CmdError::BadInput(format!(
                "recommend reads sweep runs; {} is a sequence run (its summary.md says what it found)",
                run_dir.display()
            )))
        }
        Command::Report { run_dir } => match rocsweep::report::write(&run_dir) {
            Ok(files) => {
                for f in files {
                    rocsweep::sayln!("{}", f.display());
                }
                exit::OK
            }
            Err(e) => report(e),
        },
        Command::Compare {
            run_a,
            run_b,
            out,
            force,
            fail_on,
        } => {
            match rocsweep::analyze::compare::command(
                &run_a,
                &run_b,
                out.as_deref(),
                force,
                fail_on.is_some(),
            ) {
                Ok(code) => code,
                Err(e) => report(e),
            }
        }
        Command::Recommend { run_dir, out } => {
            match rocsweep::analyze::recommend::command(&run_dir, out.as_deref()) {
                Ok(()) => exit::OK,
                Err(e) => report(e),
            }
        }
        Command::Repro { run_dir, unit_id } => {
            match rocsweep::analyze::repro::command(&run_dir, &unit_id) {
                Ok(text) => {
                    rocsweep::console::say(&text);
                    exit::OK
                }
                Err(e) => report(e),
            }
        }
        Command::Import { files, out, quiet } => match rocsweep::import::command(&files, &out) {
            Ok(summary) => {
                if !quiet {
                    rocsweep::console::say(&summary);
                }
                exit::OK
            }
            Err(e) => report(e),
        },
        _ => exit::FAILURE,
    }
}

/// The commands that ask a backend: worker, probe, solvers, selftest, compile-check, list-ops.
fn device_command(command: Command) -> i32 {
    match command {
        Command::Worker { backend } => rocsweep::exec::worker::serve::main(&backend),
        Command::Probe { backend } => {
            let (text, available) = rocsweep::commands::probe_text(backend.as_deref());
            rocsweep::console::say(&text);
            if available {
                exit::OK
            } else {
                exit::BACKEND_UNAVAILABLE
            }
        }
        Command::Solvers { params } => match rocsweep::commands::solvers_text(&params) {
            Ok((text, complete)) => {
                rocsweep::console::say(&text);
                if complete {
                    exit::OK
                } else {
                    exit::BACKEND_UNAVAILABLE
                }
            }
            Err(e) => report(e),
        },
        Command::Selftest { backend, arch } => rocsweep::selftest::command(&backend, &arch),
        Command::CompileCheck { arch } => rocsweep::selftest::compile_check_command(&arch),
        Command::ListOps => {
            rocsweep::console::say(&rocsweep::commands::list_ops_text());
            exit::OK
        }
        _ => exit::FAILURE,
    }
}

fn report(e: CmdError) -> i32 {
    rocsweep::noteln!("{e}");
    match e {
        CmdError::Spec(_) | CmdError::BadInput(_) => exit::BAD_INPUT,
        CmdError::Failure(_) => exit::FAILURE,
    }
}

/// A run directory that a sequence made (`sequence.json`), which the sweep commands do not read.
fn is_sequence_run(dir: &std::path::Path) -> bool {
    rocsweep::exec::sequence::resume::is_sequence_run(dir)
}
