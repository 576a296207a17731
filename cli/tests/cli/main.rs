//! Integration tests of the `spinmutex` command, one module per thing proved: the
//! command as a whole (help, usage errors before anything runs, messages, completions,
//! man pages, the install script), `run`, `ab` (verdicts, JSON, a static binary, failed
//! runs and metrics, memory), `bench`, and interruption. This file holds the helpers
//! they share and lists every test.

#[path = "../../../tests/common/mod.rs"]
mod common;

mod ab;
mod bench;
mod interrupt;
mod run;
mod usage;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::harness::{tests, Need, Suite};
use common::{c_test, default_signal_actions, lib_path, preloaded, run_bounded, scratch, Outcome};
use spinmutex_cli::ab::AbReport;
use spinmutex_cli::bench::rwlock::RwBenchReport;
use spinmutex_cli::bench::BenchReport;
use spinmutex_cli::Direction;

use ab::*;
use bench::*;
use interrupt::*;
use run::*;
use usage::*;

const LIMIT: Duration = Duration::from_secs(180);

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_spinmutex"))
}

/// The command with a clean environment (no SPINMUTEX_*, no LD_PRELOAD) and the
/// library of this build.
fn spinmutex(args: &[&str]) -> Command {
    let mut cmd = preloaded(bin(), None);
    cmd.env("SPINMUTEX_LIB", lib_path()).args(args);
    cmd
}

fn run(args: &[&str]) -> Outcome {
    run_bounded(spinmutex(args), LIMIT)
}

fn code(o: &Outcome) -> Option<i32> {
    o.status.and_then(|s| s.code())
}

fn ab_tiny() -> PathBuf {
    c_test("ab_tiny")
}

fn ab_tiny_static() -> PathBuf {
    c_test("ab_tiny_static")
}

fn run_in(dir: &Path, args: &[&str]) -> Outcome {
    let mut cmd = spinmutex(args);
    cmd.current_dir(dir);
    run_bounded(cmd, LIMIT)
}

fn main() -> std::process::ExitCode {
    let static_prog = || Need::Built(ab_tiny_static(), "glibc's static libraries (libc6-dev)");
    let mut suite = Suite::new();
    tests!(
        suite,
        output_into_a_reader_that_leaves_ends_quietly,
        help_lists_every_subcommand_and_the_shared_settings,
        bad_arguments_exit_2_with_a_message,
        bad_settings_exit_2_before_anything_runs,
        fair_takes_its_value,
        run_passes_exit_status_through,
        run_reports_a_signal_and_exits_128_plus_signo,
        run_preloads_the_library_and_sets_the_settings,
        run_stats_prints_the_named_report_after_exit,
        run_stats_says_when_a_report_was_cut,
        run_appends_to_an_existing_ld_preload,
        run_strategy_none_does_not_preload,
        run_missing_command_exits_127,
        library_location_comes_from_spinmutex_lib,
        ab_compares_in_words_and_writes_json,
        ab_reports_failed_runs_and_keeps_times_without_a_metric,
        ab_stops_when_every_warmup_fails,
        metric_direction_from_flags_units_or_unknown,
        bench_reduced_grid_writes_csv_json_svg,
        bench_scenarios_run_and_clean_up,
        bench_rwlock_grid_writes_csv_and_json,
        bench_with_a_hog_cleans_up,
        completions_and_man_pages_generate,
        ab_interrupted_stops_the_program_and_keeps_the_finished_runs,
        the_hot_lock_is_ranked_by_time_waited,
        help_and_messages_speak_of_what_applies,
        errors_name_the_real_cause,
        report_fails_loudly_on_a_file_without_reports_or_events,
        run_stats_file_dash_pipes_the_report_alone,
        run_stats_file_that_is_a_fifo_is_not_read_back,
        ab_json_dash_writes_json_alone_on_stdout,
        bench_json_dash_writes_json_alone_on_stdout,
        classes_are_labelled_by_their_real_maker_and_caller,
        run_interrupted_stops_the_program_and_its_group,
        run_killed_takes_the_program_with_it,
        run_stats_interrupted_prints_the_statistics,
        run_stats_in_a_terminal_prints_the_statistics_after_ctrl_c,
        run_stats_interrupted_says_why_there_are_none,
        bench_interrupted_reports_the_finished_runs,
        ab_memory_stays_flat_however_much_the_program_writes,
        ab_show_output_passes_the_output_through,
        install_script_places_bin_and_lib_and_the_command_finds_the_lib,
    );
    suite.needs(
        "run_of_a_static_program_fails_with_the_causes",
        &[static_prog()],
        run_of_a_static_program_fails_with_the_causes,
    );
    suite.needs(
        "run_stats_of_a_static_program_names_only_the_cause",
        &[static_prog()],
        run_stats_of_a_static_program_names_only_the_cause,
    );
    suite.needs(
        "ab_of_a_static_program_fails_with_the_causes",
        &[static_prog()],
        ab_of_a_static_program_fails_with_the_causes,
    );
    suite.run()
}
