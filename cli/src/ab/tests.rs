//! Unit tests of `ab`: its options, arms and baselines, and how it says a comparison.

use spinmutex_names::Strategy;

use super::*;

fn parse(args: &[&str]) -> Result<AbArgs, clap::Error> {
    crate::parse_args(args)
}

fn names(a: &AbArgs) -> Vec<String> {
    arms(a).unwrap().iter().map(Arm::to_string).collect()
}

#[test]
fn parses_arms_and_the_command() {
    let a = parse(&[
        "-s",
        "glibc",
        "-s",
        "futex,spin",
        "-n3",
        "--warmup",
        "0",
        "--metric",
        r"x=(\d+)",
        "--",
        "p",
    ])
    .unwrap();
    assert_eq!(names(&a), ["none", "glibc", "futex", "spin"]);
    assert_eq!((a.runs, a.warmup), (3, 0));
    let a = parse(&["p", "-n", "2"]).unwrap();
    assert_eq!(names(&a), ["none", "glibc", "spin"]);
    assert_eq!(a.command, ["p", "-n", "2"]);
    let a = parse(&["-s", "glibc,spin", "--without-none", "p"]).unwrap();
    assert_eq!(names(&a), ["glibc", "spin"]);
    let a = parse(&["--fair", "1", "p"]).unwrap();
    assert_eq!(a.command, ["p"]);
    assert!(a.settings.fair.unwrap().value);
    assert!(arms(&parse(&["-s", "spin", "-s", "spin", "p"]).unwrap()).is_err());
}

#[test]
fn rejects_bad_arguments() {
    for bad in [
        &["--"][..],
        &["-n", "0", "--", "p"],
        &["-s", "spinn", "--", "p"],
        &["-s", "glibc-adaptive", "--", "p"],
        &["--metric", "(", "--", "p"],
        &["--spin-limit", "10x", "--", "p"],
        &["--higher-is-better", "--", "p"],
        &["--frob", "--", "p"],
    ] {
        assert!(parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn pairs_compare_with_glibc_and_none() {
    let arms = [Arm::None, Arm::Strategy(Strategy::Glibc), Arm::Strategy(Strategy::Spin)];
    let refs = baselines(&arms);
    assert_eq!(refs, [1, 0]);
    assert_eq!(pairs(&arms, &refs), [(2, 1), (2, 0), (1, 0)]);
    let arms = [Arm::Strategy(Strategy::Spin), Arm::Strategy(Strategy::Futex)];
    assert_eq!(pairs(&arms, &baselines(&arms)), [(1, 0)]);
}

fn quantity(direction: Direction, time: bool, label: &'static str) -> Quantity {
    Quantity { key: "k", label, direction, get: |r| Some(r.wall_s), time }
}

#[test]
fn verdicts_say_which_way_and_how_surely() {
    let base = [10.0, 10.2, 9.8, 10.1, 9.9];
    let faster = [8.8, 8.9, 8.7, 8.8, 8.6];
    let c = stats::compare(&base, &faster).unwrap();
    let v = record("spin", "glibc", &quantity(Direction::LowerIsBetter, true, "wall time"), Some(&c));
    assert!(v.verdict.starts_with("spin is 12.4% faster than glibc (95% CI "), "{}", v.verdict);
    assert!(v.verdict.contains("significant"), "{}", v.verdict);
    assert_eq!(v.better, Some(true));
    let v = record("spin", "glibc", &quantity(Direction::LowerIsBetter, true, "CPU time"), Some(&c));
    assert!(v.verdict.starts_with("spin uses 12.4% less CPU than glibc"), "{}", v.verdict);
    let v = record("spin", "glibc", &quantity(Direction::HigherIsBetter, false, "metric"), Some(&c));
    assert!(v.verdict.starts_with("spin is 12.4% worse than glibc (metric lower"), "{}", v.verdict);
    assert_eq!(v.better, Some(false));
    let v = record("spin", "glibc", &quantity(Direction::Unknown, false, "metric"), Some(&c));
    assert!(v.verdict.contains("spin's metric is 12.4% lower than glibc's"), "{}", v.verdict);
    assert!(v.verdict.contains("--higher-is-better"), "{}", v.verdict);
    assert_eq!(v.better, None);

    let noisy = [9.0, 11.5, 10.0, 8.5, 11.0];
    let c = stats::compare(&base, &noisy).unwrap();
    let v = record("spin", "glibc", &quantity(Direction::LowerIsBetter, true, "wall time"), Some(&c));
    assert!(v.verdict.starts_with("spin vs glibc: no difference detectable at this noise"), "{}", v.verdict);
    assert!(v.verdict.contains("runs per arm would resolve a 5% difference"), "{}", v.verdict);
    assert_eq!(v.better, None);
    let v = record("spin", "glibc", &quantity(Direction::LowerIsBetter, true, "wall time"), None);
    assert!(v.verdict.contains("not enough successful runs"));
}
