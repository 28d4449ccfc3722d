//! `robit-sim`: runs robit's fault scenarios across seeds, and replays one run as a
//! timeline. `robit-sim --help` describes the commands and the exit status; the work is
//! done in [`robit_sim::cli`].

// A command-line tool reports on standard output and standard error: printing is its job.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use clap::Parser;
use robit_sim::cli::{Cli, Status, argument_error, execute};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version go to standard output, and are not errors.
        Err(error) if !error.use_stderr() => {
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        // No subcommand at all: show the help, as an error.
        Err(error)
            if error.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            let _ = error.print();
            return Status::BadInput.into();
        }
        Err(error) => {
            eprintln!("{}", argument_error(&error));
            return Status::BadInput.into();
        }
    };
    match execute(&cli, &mut std::io::stdout().lock()) {
        Ok(status) => status.into(),
        Err(error) => {
            eprintln!("error: {error}");
            Status::BadInput.into()
        }
    }
}
