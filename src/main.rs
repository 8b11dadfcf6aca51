//! Thin entry point: parse the CLI, run one command, map its error to an exit code.

use clap::Parser;
use rocsweep::cli::{Cli, Command};
use rocsweep::exec::run::{self, CmdError, RunOptions, Stop};
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
    let code = match cli.command {
        Command::Run {
            sweep,
            backend,
            out,
            axes,
            dry_run,
            force,
            max_units,
            quiet,
            fail_on_failure,
            resume,
            retry_interrupted,
        } => {
            let opts = RunOptions {
                sweep,
                backend,
                out,
                axes,
                dry_run,
                force,
                max_units,
                quiet,
                command_line: std::env::args().collect(),
                resume,
                retry_interrupted,
                worker_exe: None,
            };
            match run::run(&opts) {
                Ok(r) if r.stopped == Some(Stop::Interrupted) => exit::INTERRUPTED,
                Ok(r) if r.stopped == Some(Stop::DeviceUnhealthy) => exit::DEVICE_UNHEALTHY,
                Ok(r) if fail_on_failure && r.failures > 0 => exit::UNITS_FAILED,
                Ok(_) => exit::OK,
                Err(e) => report(e),
            }
        }
        Command::Worker { backend } => rocsweep::exec::worker::main(&backend),
        Command::Probe => {
            print!("{}", rocsweep::commands::probe_text());
            exit::OK
        }
        Command::ListOps => {
            print!("{}", rocsweep::commands::list_ops_text());
            exit::OK
        }
    };
    std::process::exit(code);
}

fn report(e: CmdError) -> i32 {
    eprintln!("{e}");
    match e {
        CmdError::Spec(_) | CmdError::BadInput(_) => exit::BAD_INPUT,
        CmdError::Failure(_) => exit::FAILURE,
    }
}
