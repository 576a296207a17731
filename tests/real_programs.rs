//! Real programs under the library: sysbench, stress-ng, pigz, zstd, xz, python3, fio
//! (a process-shared rwlock around every I/O), and three programs of the test tree
//! (SQLite in serialized mode, jemalloc co-preloaded, a C++ program on the standard
//! library's mutexes).
//!
//! Every program runs first without the preload, then under `LD_PRELOAD` with each
//! strategy. A check fails on a wrong output, a non-zero exit or a hang (every run is
//! bounded by [`HANG_GUARD`]). Every preloaded run is made with
//! `LD_DEBUG=bindings`, and the dynamic loader's log must show the program's own
//! object (the binary, or the library that does its locking: liblzma, libsqlite3,
//! jemalloc, libstdc++) binding `pthread_mutex_lock` to `libspinmutex.so`, and no object
//! of the process binding `pthread_mutex_{lock,trylock,unlock}` anywhere else. For
//! lazily bound objects (python3, jemalloc, the test tree's programs, libstdc++) a
//! binding is logged only when the function is first called, so the log also proves
//! the calls; the distribution's binaries and libraries are linked with `-z now`, so
//! there it proves that every call made through their GOT reaches the library.
//!
//! A test whose program is not installed is skipped, and counted in the closing line
//! of the run; with `SPINMUTEX_TESTS_REQUIRE_ALL=1` (`.ci/run` installs them all) it
//! fails instead (see tests/common/harness.rs).

mod common;

use std::fs::{self, File};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::harness::{self, tests, Need, Suite};
use common::{c_test, lib_path, preloaded, run_bounded, scratch, stats, Outcome, STRATEGIES};

/// Only a hang guard: every run here takes a few seconds at most.
const HANG_GUARD: Duration = Duration::from_secs(120);

/// Size of the generated input of the compressors.
const INPUT_BYTES: usize = 24 << 20;

const JEMALLOC: &str = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
const PYTHON: &str = "/usr/bin/python3";

// ---------------------------------------------------------------------------------------
// Finding programs and scratch directories
// ---------------------------------------------------------------------------------------

/// A program on PATH; the test declared it as a [`Need`], so it is there.
fn tool(name: &str) -> PathBuf {
    harness::program(name).unwrap_or_else(|| panic!("{name} is not installed"))
}

/// A fresh temporary directory, removed when dropped.
struct Scratch(tempfile::TempDir);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = tempfile::Builder::new().prefix(&format!("spinmutex-real-{tag}-")).tempdir();
        Scratch(dir.expect("create a temporary directory"))
    }

    fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.0.path().join(name)
    }

    /// An empty subdirectory (replacing any earlier one of that name).
    fn subdir(&self, name: &str) -> PathBuf {
        let dir = self.join(name);
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        dir
    }
}

// ---------------------------------------------------------------------------------------
// Proof of interposition: the dynamic loader's binding log
// ---------------------------------------------------------------------------------------

/// The symbols whose bindings must all go to the library.
const LOCK_SYMBOLS: &[&str] = &["pthread_mutex_lock", "pthread_mutex_trylock", "pthread_mutex_unlock"];

/// One "binding file FROM [n] to TO [n]: normal symbol `SYM'" line of `LD_DEBUG=bindings`.
#[derive(Debug)]
struct Binding {
    from: String,
    to: String,
    symbol: String,
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Every binding logged in `dir` (one `ld.<pid>` file per process).
///
/// The loader writes a binding's message in pieces (the line, then its version and the
/// newline), so two threads binding at the same moment can leave two messages on one
/// line: every "binding file " starts a message, wherever it is.
fn bindings(dir: &Path) -> Vec<Binding> {
    let mut out = Vec::new();
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries.flatten() {
        let text =
            fs::read(entry.path()).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
        for message in text.split("binding file ").skip(1) {
            let Some((from, rest)) = message.split_once(" [") else { continue };
            let Some((_, rest)) = rest.split_once("] to ") else { continue };
            let Some((to, rest)) = rest.split_once(" [") else { continue };
            let Some((_, rest)) = rest.split_once("symbol `") else { continue };
            let Some((symbol, _)) = rest.split_once('\'') else { continue };
            out.push(Binding { from: from.to_string(), to: to.to_string(), symbol: symbol.to_string() });
        }
    }
    out
}

/// What the binding log of a run must show: an object (by the start of its file name)
/// that binds one of `symbols` to the library.
struct MustBind {
    object: &'static str,
    symbols: &'static [&'static str],
}

const fn must_bind(object: &'static str) -> MustBind {
    MustBind { object, symbols: &["pthread_mutex_lock"] }
}

/// Checks the binding log in `dir` of the run `what`: each of `musts` is there, and no
/// object but the library itself binds a lock symbol to anything but the library.
fn check_interposed(what: &str, dir: &Path, musts: &[MustBind]) -> Result<(), String> {
    let log = bindings(dir);
    let ours = |b: &Binding| file_name(&b.to) == "libspinmutex.so";
    for must in musts {
        let found = log.iter().any(|b| {
            file_name(&b.from).starts_with(must.object)
                && must.symbols.contains(&b.symbol.as_str())
                && ours(b)
        });
        if !found {
            let seen: Vec<String> = log
                .iter()
                .filter(|b| b.symbol.starts_with("pthread_mutex"))
                .map(|b| format!("{} -> {}: {}", b.from, b.to, b.symbol))
                .collect();
            return Err(format!(
                "{what}: the loader's log shows no binding of {:?} from {}* to libspinmutex.so, so the \
                 program never reached the library.\nmutex bindings seen ({} files in {}):\n{}",
                must.symbols,
                must.object,
                fs::read_dir(dir).map(|d| d.count()).unwrap_or(0),
                dir.display(),
                seen.join("\n")
            ));
        }
    }
    for b in &log {
        if LOCK_SYMBOLS.contains(&b.symbol.as_str()) && file_name(&b.from) != "libspinmutex.so" && !ours(b) {
            return Err(format!("{what}: {} binds {} to {}, not to libspinmutex.so", b.from, b.symbol, b.to));
        }
    }
    Ok(())
}

/// [`check_interposed`], panicking with its message.
fn assert_interposed(what: &str, dir: &Path, musts: &[MustBind]) {
    if let Err(e) = check_interposed(what, dir, musts) {
        panic!("{e}");
    }
}

/// Turns on the binding log of `cmd`, into a fresh directory `dir`.
fn log_bindings(cmd: &mut Command, dir: &Path) {
    cmd.env("LD_DEBUG", "bindings").env("LD_DEBUG_OUTPUT", dir.join("ld"));
}

// ---------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------

/// "no preload" or "under STRATEGY", for messages.
fn label(strategy: Option<&str>) -> String {
    match strategy {
        None => "without the preload".to_string(),
        Some(s) => format!("under {s}"),
    }
}

/// The runs of every check: first without the preload, then under each strategy.
fn modes() -> impl Iterator<Item = Option<&'static str>> {
    std::iter::once(None).chain(STRATEGIES.iter().copied().map(Some))
}

/// Runs `cmd` (built by [`preloaded`]) with a binding log when it is preloaded, checks
/// that it exits 0 in time and that the log proves interposition. Returns its output.
fn run_checked(
    what: &str,
    scratch: &Scratch,
    strategy: Option<&str>,
    mut cmd: Command,
    musts: &[MustBind],
) -> Outcome {
    let what = format!("{what} {}", label(strategy));
    let log_dir = scratch.subdir("ld-debug");
    if strategy.is_some() {
        log_bindings(&mut cmd, &log_dir);
    }
    let start = Instant::now();
    let outcome = run_bounded(cmd, HANG_GUARD);
    eprintln!("{what}: {:.2} s", start.elapsed().as_secs_f64());
    outcome.assert_success(&what);
    if strategy.is_some() {
        assert_interposed(&what, &log_dir, musts);
    }
    outcome
}

/// Like [`run_checked`], with the program's stdout written to the file `stdout`.
fn run_checked_to_file(
    what: &str,
    scratch: &Scratch,
    strategy: Option<&str>,
    mut cmd: Command,
    stdout: &Path,
    musts: &[MustBind],
) {
    let what = format!("{what} {}", label(strategy));
    let log_dir = scratch.subdir("ld-debug");
    if strategy.is_some() {
        log_bindings(&mut cmd, &log_dir);
    }
    let file = File::create(stdout).unwrap_or_else(|e| panic!("create {}: {e}", stdout.display()));
    cmd.stdin(Stdio::null()).stdout(file).stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{what}: spawn {cmd:?}: {e}"));
    let mut err = child.stderr.take().expect("stderr");
    let err_reader = thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let status = loop {
        match child.try_wait().expect("try_wait") {
            Some(status) => break Some(status),
            None if start.elapsed() > HANG_GUARD => {
                // The child leads its own process group (see `preloaded`).
                // SAFETY: kill(2) only sends a signal.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            None => thread::sleep(Duration::from_millis(5)),
        }
    };
    let stderr = err_reader.join().expect("stderr reader");
    eprintln!("{what}: {:.2} s", start.elapsed().as_secs_f64());
    assert!(
        status.is_some_and(|s| s.success()),
        "{what}: status {status:?} (None: still running after {HANG_GUARD:?}, killed)\n--- stderr\n{stderr}"
    );
    if strategy.is_some() {
        assert_interposed(&what, &log_dir, musts);
    }
}

/// Panics unless the files `a` and `b` hold the same bytes.
fn assert_same_bytes(what: &str, a: &Path, b: &Path) {
    let x = fs::read(a).unwrap_or_else(|e| panic!("read {}: {e}", a.display()));
    let y = fs::read(b).unwrap_or_else(|e| panic!("read {}: {e}", b.display()));
    if x != y {
        let at = x.iter().zip(&y).position(|(p, q)| p != q).unwrap_or(x.len().min(y.len()));
        panic!(
            "{what}: {} ({} bytes) and {} ({} bytes) differ, first at byte {at}",
            a.display(),
            x.len(),
            b.display(),
            y.len()
        );
    }
}

// ---------------------------------------------------------------------------------------
// Output parsing
// ---------------------------------------------------------------------------------------

/// The number after `key` on the first line of `text` that contains `key`.
fn number_after(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.contains(key))?;
    let rest = &line[line.find(key)? + key.len()..];
    rest.split_whitespace().next()?.parse().ok()
}

/// stress-ng's "metrc: [pid] NAME   BOGO-OPS ..." line for `stressor`: its bogo ops.
fn stress_ng_bogo_ops(text: &str, stressor: &str) -> Option<u64> {
    text.lines().filter(|l| l.contains("metrc:")).find_map(|l| {
        let after_pid = l.split_once("] ")?.1;
        let mut words = after_pid.split_whitespace();
        if words.next()? != stressor {
            return None;
        }
        words.next()?.parse().ok()
    })
}

// ---------------------------------------------------------------------------------------
// sysbench
// ---------------------------------------------------------------------------------------

fn sysbench_mutex_and_threads() {
    let sysbench = tool("sysbench");
    let scratch = Scratch::new("sysbench");
    let musts = [must_bind("sysbench")];
    let threads = 4;
    // `mutex`: each thread takes one of 4 mutexes 1e6 times; an event is one thread's
    // whole loop, so exactly `threads` events. `threads`: each event locks one of 2
    // mutexes and yields 10 times while holding it; bounded by 10000 events.
    let cases: [(&str, Vec<String>, u64); 2] = [
        (
            "mutex",
            vec![
                "mutex".into(),
                format!("--threads={threads}"),
                "--mutex-num=4".into(),
                "--mutex-locks=1000000".into(),
                "--mutex-loops=50".into(),
                "run".into(),
            ],
            threads,
        ),
        (
            "threads",
            vec![
                "threads".into(),
                format!("--threads={threads}"),
                "--thread-locks=2".into(),
                "--thread-yields=10".into(),
                "--events=10000".into(),
                "--time=0".into(),
                "run".into(),
            ],
            10000,
        ),
    ];
    for (name, args, events) in &cases {
        for strategy in modes() {
            let mut cmd = preloaded(&sysbench, strategy);
            cmd.args(args);
            let what = format!("sysbench {name}");
            let out = run_checked(&what, &scratch, strategy, cmd, &musts);
            let all = format!("{}\n{}", out.stdout, out.stderr);
            assert!(
                !all.contains("FATAL") && !all.to_lowercase().contains("error"),
                "{what} {}: reported an error\n{all}",
                label(strategy)
            );
            assert_eq!(
                number_after(&out.stdout, "total number of events:"),
                Some(*events),
                "{what} {}: wrong number of events\n{}",
                label(strategy),
                out.stdout
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// stress-ng
// ---------------------------------------------------------------------------------------

/// stress-ng's stressors that take pthread mutexes (checked with a counting preload on
/// Debian 12's 0.15.06: the others that sound related use futexes, SysV or POSIX
/// semaphores, file locks, or only the parent's bookkeeping):
/// `mutex` (two threads on one mutex, changing their SCHED_FIFO priority around it, as
/// root for real), `pthread` (creates threads that wait on a condition variable with a
/// mutex). `--mutex-affinity` also moves the threads between CPUs at random, which puts
/// a spinner and a preempted owner on the same CPU.
fn stress_ng_mutex_and_pthread() {
    let stress_ng = tool("stress-ng");
    let scratch = Scratch::new("stress-ng");
    let musts = [must_bind("stress-ng")];
    // (stressor, its arguments, ops, whether stress-ng itself runs as SCHED_FIFO)
    let cases: [(&str, &[&str], u64, bool); 3] = [
        ("mutex", &["--mutex", "1", "--mutex-ops", "200000"], 200_000, true),
        ("mutex", &["--mutex", "1", "--mutex-ops", "200000", "--mutex-affinity"], 200_000, true),
        ("pthread", &["--pthread", "1", "--pthread-ops", "3000"], 3000, false),
    ];
    for (stressor, args, ops, realtime) in cases {
        for strategy in modes() {
            let mut cmd = preloaded(&stress_ng, strategy);
            cmd.args(args).args(["--verify", "--metrics-brief", "--timeout", "90s"]);
            cmd.arg("--temp-path").arg(scratch.0.path());
            if realtime {
                realtime_parent(&mut cmd);
            }
            let what = format!("stress-ng {}", args.join(" "));
            let out = run_checked(&what, &scratch, strategy, cmd, &musts);
            let all = format!("{}\n{}", out.stdout, out.stderr);
            let context = format!("{what} {}\n{all}", label(strategy));
            assert!(all.contains("successful run completed"), "{context}");
            assert!(!all.lines().any(|l| l.contains(" fail:") || l.contains("failed")), "{context}");
            // Bounded by ops, not by the timeout: the stressor did all its work.
            let done = stress_ng_bogo_ops(&all, stressor);
            assert!(done.is_some_and(|n| n >= ops), "{stressor} bogo ops {done:?}: {context}");
        }
    }
}

/// Starts `cmd` as SCHED_FIFO at the highest priority, where that is allowed (root).
///
/// For stress-ng's `mutex` stressor: its threads raise themselves to SCHED_FIFO (below
/// 7/8 of the top priority) and may run all their ops before the stressor's main thread,
/// preempted on its CPU, gets back to check that it created a thread at all; it then
/// fails with "could not create any pthreads" (exit 3) -- a race in stress-ng 0.15.06
/// itself, seen without any preload on a loaded machine. A main thread that outranks
/// its threads cannot be preempted by them. stress-ng's own processes only sleep and
/// wait; the threads that take the mutex still set their own priorities.
fn realtime_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure only makes two system calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let param = libc::sched_param { sched_priority: libc::sched_get_priority_max(libc::SCHED_FIFO) };
            // Not allowed (not root, no CAP_SYS_NICE): then stress-ng's threads cannot
            // use SCHED_FIFO either, and there is no race to avoid.
            let _ = libc::sched_setscheduler(0, libc::SCHED_FIFO, &param);
            Ok(())
        });
    }
}

// ---------------------------------------------------------------------------------------
// Compressors
// ---------------------------------------------------------------------------------------

/// Deterministic, semi-compressible text (about 3:1 for gzip): numbered lines of
/// words drawn at random from a small vocabulary, and a random hex field.
fn write_input(path: &Path, bytes: usize) {
    const WORDS: &[&str] = &[
        "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda",
        "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega",
        "mutex", "futex", "spin", "lock", "wait", "wake", "owner", "queue",
    ];
    let mut state: u64 = 0x853c_49e6_748f_ea9b;
    let mut next = || {
        // xorshift64*
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let mut out =
        BufWriter::new(File::create(path).unwrap_or_else(|e| panic!("create {}: {e}", path.display())));
    let mut written = 0;
    let mut line_no = 0u64;
    let mut line = String::with_capacity(128);
    while written < bytes {
        line.clear();
        use std::fmt::Write as _;
        let _ = write!(line, "{line_no:010}");
        let r = next();
        for k in 0..8 {
            line.push(' ');
            line.push_str(WORDS[((r >> (k * 5)) & 31) as usize]);
        }
        let _ = writeln!(line, " {:08x}", next() >> 32);
        out.write_all(line.as_bytes()).expect("write input");
        written += line.len();
        line_no += 1;
    }
    out.flush().expect("flush input");
}

/// A compressor's command lines, as arguments after the program name.
struct Compressor {
    name: &'static str,
    suffix: &'static str,
    compress: &'static [&'static str],
    decompress: &'static [&'static str],
    /// The object whose pthread_mutex_lock binding proves interposition.
    object: &'static str,
}

/// Compresses a generated input without the preload, decompresses it (the round trip),
/// then under each strategy compresses it (output identical to the first) and
/// decompresses that (identical to the input).
fn compressor_round_trips(c: &Compressor) {
    let program = tool(c.name);
    let scratch = Scratch::new(c.name);
    let input = scratch.join("input.txt");
    write_input(&input, INPUT_BYTES);
    let musts = [must_bind(c.object)];
    let reference = scratch.join(format!("reference{}", c.suffix));
    for strategy in modes() {
        let tag = strategy.unwrap_or("none");
        let packed = scratch.join(format!("{tag}{}", c.suffix));
        let mut cmd = preloaded(&program, strategy);
        cmd.args(c.compress).arg(&input);
        run_checked_to_file(&format!("{} compress", c.name), &scratch, strategy, cmd, &packed, &musts);
        match strategy {
            None => fs::rename(&packed, &reference).expect("keep the reference output"),
            Some(_) => {
                assert_same_bytes(
                    &format!("{} output {} vs without the preload", c.name, label(strategy)),
                    &packed,
                    &reference,
                );
                fs::remove_file(&packed).expect("remove output");
            }
        }
        let unpacked = scratch.join(format!("{tag}.out"));
        let mut cmd = preloaded(&program, strategy);
        cmd.args(c.decompress).arg(&reference);
        run_checked_to_file(&format!("{} decompress", c.name), &scratch, strategy, cmd, &unpacked, &musts);
        assert_same_bytes(&format!("{} round trip {}", c.name, label(strategy)), &unpacked, &input);
        fs::remove_file(&unpacked).expect("remove decompressed output");
    }
}

/// pigz: compression threads and its read/write/check threads hand buffers over with
/// pthread mutexes and condition variables (its `yarn` layer).
fn pigz_round_trips() {
    compressor_round_trips(&Compressor {
        name: "pigz",
        suffix: ".gz",
        compress: &["-p", "4", "-6", "-n", "-c"],
        decompress: &["-d", "-c"],
        object: "pigz",
    });
}

/// zstd -T: the multi-threaded compressor's job queue and thread pool (libzstd, linked
/// into the zstd binary); decompression uses the asynchronous I/O thread pool.
fn zstd_round_trips() {
    compressor_round_trips(&Compressor {
        name: "zstd",
        suffix: ".zst",
        // 1 MiB jobs: two dozen of them, queued to 4 workers.
        compress: &["-q", "-T4", "-3", "-B1048576", "-c"],
        decompress: &["-q", "-d", "-T4", "-c"],
        object: "zstd",
    });
}

/// xz -T: liblzma's multi-threaded encoder and (since 5.4) decoder, whose workers
/// synchronise with the main thread through pthread mutexes and condition variables.
fn xz_round_trips() {
    compressor_round_trips(&Compressor {
        name: "xz",
        suffix: ".xz",
        // -0: 256 KiB dictionary, 768 KiB blocks: about 32 blocks for 4 threads.
        compress: &["-q", "-T4", "-0", "-c"],
        decompress: &["-q", "-d", "-T4", "-c"],
        object: "liblzma.so",
    });
}

// ---------------------------------------------------------------------------------------
// python3
// ---------------------------------------------------------------------------------------

/// Threads in CPython 3.11: the GIL is a pthread mutex and condition variable (handed
/// over every 10 µs here), `threading.Lock` a semaphore; `RLock`, `Condition`,
/// `queue.Queue` and `ThreadPoolExecutor` are built on them. The output depends only on
/// the work, never on the interleaving.
const PYTHON_SCRIPT: &str = r#"
import concurrent.futures
import hashlib
import queue
import sys
import threading

sys.setswitchinterval(1e-5)
N = 4

def run(target, args_list):
    threads = [threading.Thread(target=target, args=a) for a in args_list]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

counter = 0
lock = threading.Lock()
def bump(n):
    global counter
    for _ in range(n):
        with lock:
            counter += 1
run(bump, [(20000,)] * N)
assert counter == 20000 * N, counter
print("lock", counter)

rlock = threading.RLock()
rtotal = 0
def radd(depth, v):
    global rtotal
    with rlock:
        rtotal += v
        if depth:
            radd(depth - 1, v + 1)
def rworker(t):
    for i in range(3000):
        radd(3, t + i)
run(rworker, [(t,) for t in range(N)])
print("rlock", rtotal)

cond = threading.Condition()
buf, cap, consumed = [], 8, []
def produce(t):
    for i in range(3000):
        with cond:
            while len(buf) >= cap:
                cond.wait()
            buf.append(t * 100000 + i)
            cond.notify_all()
def consume(n):
    got = 0
    for _ in range(n):
        with cond:
            while not buf:
                cond.wait()
            got += buf.pop(0)
            cond.notify_all()
    with cond:
        consumed.append(got)
threads = [threading.Thread(target=produce, args=(t,)) for t in range(2)]
threads += [threading.Thread(target=consume, args=(2000,)) for _ in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("condition", sum(consumed), len(consumed), len(buf))

q1, q2 = queue.Queue(maxsize=16), queue.Queue()
def stage1():
    while True:
        item = q1.get()
        if item is None:
            q1.task_done()
            break
        q2.put(hashlib.sha256(str(item).encode()).hexdigest())
        q1.task_done()
workers = [threading.Thread(target=stage1) for _ in range(N)]
for w in workers:
    w.start()
for i in range(8000):
    q1.put(i)
for _ in workers:
    q1.put(None)
q1.join()
for w in workers:
    w.join()
digests = []
while not q2.empty():
    digests.append(q2.get())
print("queue", len(digests), hashlib.sha256("".join(sorted(digests)).encode()).hexdigest()[:16])

def work(i):
    h = hashlib.sha256()
    for k in range(50):
        h.update(f"{i}:{k}".encode())
    return h.hexdigest()[:8]
with concurrent.futures.ThreadPoolExecutor(max_workers=N) as ex:
    results = list(ex.map(work, range(3000)))
print("pool", len(results), hashlib.sha256("".join(results).encode()).hexdigest()[:16])
print("ok")
"#;

fn python_threads() {
    let python = PathBuf::from(PYTHON);
    let scratch = Scratch::new("python");
    // python3 is linked lazily: the binding proves the interpreter called the library.
    let musts = [must_bind("python3")];
    let mut reference: Option<String> = None;
    for strategy in modes() {
        let mut cmd = preloaded(&python, strategy);
        cmd.args(["-I", "-c", PYTHON_SCRIPT]);
        let out = run_checked("python3 threads", &scratch, strategy, cmd, &musts);
        assert!(
            out.stdout.ends_with("ok\n"),
            "python3 {}: incomplete output\n{}",
            label(strategy),
            out.stdout
        );
        match &reference {
            None => reference = Some(out.stdout),
            Some(r) => assert_eq!(
                &out.stdout,
                r,
                "python3 output {} differs from the run without it",
                label(strategy)
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Programs of the test tree
// ---------------------------------------------------------------------------------------

/// Runs `program args` without the preload and under each strategy (with `extra_preload`
/// before or after the library, when given); every run exits 0 with the output of the
/// first, which ends in "ok".
fn same_output_everywhere(
    what: &str,
    program: &Path,
    args: &[&Path],
    preload_orders: &[Option<&str>],
    musts: &[MustBind],
    scratch: &Scratch,
) {
    let mut reference: Option<String> = None;
    for strategy in modes() {
        let orders: &[Option<&str>] = if strategy.is_some() { preload_orders } else { &[None] };
        for order in orders {
            let mut cmd = preloaded(program, strategy);
            cmd.args(args);
            let mut what = what.to_string();
            if let Some(order) = order {
                let lib = lib_path();
                let preload = match *order {
                    "before" => format!("{JEMALLOC}:{}", lib.display()),
                    _ => format!("{}:{JEMALLOC}", lib.display()),
                };
                cmd.env("LD_PRELOAD", preload);
                what = format!("{what} (jemalloc {order} the library)");
            }
            let out = run_checked(&what, scratch, strategy, cmd, musts);
            assert!(
                out.stdout.ends_with("ok\n"),
                "{what} {}: incomplete output\n{}",
                label(strategy),
                out.stdout
            );
            match &reference {
                None => reference = Some(out.stdout),
                Some(r) => {
                    assert_eq!(
                        &out.stdout,
                        r,
                        "{what}: output {} differs from the run without it",
                        label(strategy)
                    )
                }
            }
        }
    }
}

/// SQLite in serialized mode: one shared connection used by four threads, then one
/// connection per thread to a WAL file database (see c-tests/real_sqlite.c). Row counts,
/// sums and checksums are exact (the program checks them and prints them).
fn sqlite_serialized_threads() {
    let program = c_test("real_sqlite");
    let scratch = Scratch::new("sqlite");
    let db_dir = scratch.subdir("db");
    // libsqlite3 does the locking (its connection, static and VFS mutexes).
    let musts = [must_bind("libsqlite3.so")];
    same_output_everywhere("real_sqlite", &program, &[&db_dir], &[None], &musts, &scratch);
}

/// jemalloc co-preloaded, in both orders: a malloc-heavy program whose threads exchange
/// buffers through a mutex + condition variable queue (see c-tests/real_jemalloc.c).
/// jemalloc must be the allocator and must take its own locks through the library.
fn jemalloc_co_preloaded() {
    let program = c_test("real_jemalloc");
    let scratch = Scratch::new("jemalloc");
    let musts = [
        must_bind("real_jemalloc"),
        // jemalloc tries first and locks only when contended; it is linked lazily, so
        // either binding proves that it called the library.
        MustBind { object: "libjemalloc.so", symbols: &["pthread_mutex_trylock", "pthread_mutex_lock"] },
    ];
    same_output_everywhere(
        "real_jemalloc",
        &program,
        &[],
        &[Some("before"), Some("after")],
        &musts,
        &scratch,
    );

    // And jemalloc really is the allocator in those runs.
    let log_dir = scratch.subdir("ld-debug");
    let mut cmd = preloaded(&program, Some("spin"));
    cmd.env("LD_PRELOAD", format!("{JEMALLOC}:{}", lib_path().display()));
    log_bindings(&mut cmd, &log_dir);
    run_bounded(cmd, HANG_GUARD).assert_success("real_jemalloc under spin with jemalloc");
    assert!(
        bindings(&log_dir).iter().any(|b| file_name(&b.from).starts_with("real_jemalloc")
            && b.symbol == "malloc"
            && file_name(&b.to).starts_with("libjemalloc.so")),
        "real_jemalloc's malloc is not jemalloc's"
    );
}

/// A C++ program on std::mutex, std::recursive_mutex, std::condition_variable,
/// std::shared_ptr (and its atomic operations, which lock inside libstdc++) and
/// std::async (see c-tests/real_cpp.cpp).
fn cpp_standard_library() {
    let program = c_test("real_cpp");
    let scratch = Scratch::new("cpp");
    let musts = [must_bind("real_cpp"), must_bind("libstdc++.so")];
    same_output_everywhere("real_cpp", &program, &[], &[None], &musts, &scratch);
}

// ---------------------------------------------------------------------------------------
// The checker itself
// ---------------------------------------------------------------------------------------

fn binding_log_lines_are_parsed() {
    let scratch = Scratch::new("parse");
    let dir = scratch.subdir("log");
    fs::write(
        dir.join("ld.123"),
        "     123:\tbinding file /lib/x86_64-linux-gnu/liblzma.so.5 [0] to /t/target/release/libspinmutex.so [0]: \
         normal symbol `pthread_mutex_lock' [GLIBC_2.2.5]\n\
         \x20    123:\tbinding file /t/libspinmutex.so [0] to /lib/x86_64-linux-gnu/libc.so.6 [0]: normal symbol \
         `pthread_mutex_unlock'\n\
         \x20    123:\tsymbol=malloc;  lookup in file=/usr/bin/xz [0]\n\
         \x20    123:\tbinding file /x/real_cpp [0] to /t/libspinmutex.so [0]: normal symbol `pthread_mutex_unlock'\
         \x20    124:\tbinding file /x/real_cpp [0] to /t/libspinmutex.so [0]: normal symbol `pthread_mutex_lock' \
         [GLIBC_2.2.5]\n [GLIBC_2.2.5]\n",
    )
    .expect("write log");
    let log = bindings(&dir);
    assert_eq!(log.len(), 4, "{log:?}");
    // Two threads' messages interleaved on one line: both are found.
    assert_eq!(
        (log[2].symbol.as_str(), log[3].symbol.as_str()),
        ("pthread_mutex_unlock", "pthread_mutex_lock")
    );
    assert_eq!(log[0].from, "/lib/x86_64-linux-gnu/liblzma.so.5");
    assert_eq!(log[0].to, "/t/target/release/libspinmutex.so");
    assert_eq!(log[0].symbol, "pthread_mutex_lock");
    // The library's own look-up of glibc's function is not a failed interposition.
    assert_interposed("sample", &dir, &[must_bind("liblzma.so")]);
}

/// The binding check fails a program that never reached the library: run one without
/// the preload, with the log on.
fn binding_check_rejects_a_run_without_the_preload() {
    let program = c_test("real_cpp");
    let scratch = Scratch::new("no-preload");
    let dir = scratch.subdir("ld-debug");
    let mut cmd = preloaded(&program, None);
    log_bindings(&mut cmd, &dir);
    run_bounded(cmd, HANG_GUARD).assert_success("real_cpp without the preload");
    assert!(!bindings(&dir).is_empty(), "LD_DEBUG=bindings logged nothing in {}", dir.display());
    let check = check_interposed("no preload", &dir, &[must_bind("real_cpp")]);
    assert!(check.is_err(), "the binding check passed a run without the preload");
    // And a binding to glibc's own function is caught even when the required one is there.
    let dir = scratch.subdir("sample");
    fs::write(
        dir.join("ld.1"),
        "1:\tbinding file /x/real_cpp [0] to /t/libspinmutex.so [0]: normal symbol `pthread_mutex_lock'\n\
         1:\tbinding file /x/libfoo.so [0] to /lib/libc.so.6 [0]: normal symbol `pthread_mutex_unlock'\n",
    )
    .expect("write log");
    let check = check_interposed("partial", &dir, &[must_bind("real_cpp")]);
    assert!(
        check.is_err_and(|e| e.contains("libfoo.so binds pthread_mutex_unlock")),
        "mixed bindings passed"
    );
}

fn input_generator_is_deterministic_and_compressible() {
    let scratch = Scratch::new("input");
    let (a, b) = (scratch.join("a"), scratch.join("b"));
    write_input(&a, 1 << 20);
    write_input(&b, 1 << 20);
    assert_same_bytes("generated input", &a, &b);
    let data = fs::read(&a).expect("read input");
    assert!(data.len() >= 1 << 20 && data.len() < (1 << 20) + 128);
    // Not constant, not random: a few dozen distinct bytes.
    let mut seen = [false; 256];
    data.iter().for_each(|&c| seen[c as usize] = true);
    let distinct = seen.iter().filter(|&&s| s).count();
    assert!((20..=64).contains(&distinct), "{distinct} distinct bytes");
}

// ---------------------------------------------------------------------------------
// A real program: fio with `--lockfile=readwrite` takes a process-shared rwlock (in a
// MAP_SHARED mapping, fio's rwlock.c) around every I/O: rdlock for reads, wrlock for
// writes. Its jobs run as threads (`--thread`) or as forked processes.

const FIO: &str = "/usr/bin/fio";

/// fio's JSON report, reduced to what the test checks: per job, its error and the I/Os
/// it completed.
fn fio_jobs(json: &str) -> Vec<(u64, u64, u64)> {
    // A small scan instead of a JSON parser: each job object has "error" : N, then its
    // "read" object with "total_ios" : N, then its "write" object with the same.
    let number_after = |text: &str, key: &str| -> Option<(u64, usize)> {
        let at = text.find(key)? + key.len();
        let rest = text[at..].trim_start_matches([' ', ':', '"']);
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        Some((digits.parse().ok()?, at))
    };
    let mut jobs = Vec::new();
    let mut rest = json;
    while let Some((error, at)) = number_after(rest, "\"error\"") {
        rest = &rest[at..];
        let Some((reads, at)) = number_after(rest, "\"total_ios\"") else { break };
        rest = &rest[at..];
        let Some((writes, at)) = number_after(rest, "\"total_ios\"") else { break };
        rest = &rest[at..];
        jobs.push((error, reads, writes));
    }
    jobs
}

fn fio_with_a_process_shared_rwlock_around_every_io() {
    let dir = scratch();
    let data = dir.path().join("data");
    let jobs = 4u64;
    let ios_per_job = 4096u64; // --size / --bs
    for threads in [true, false] {
        for strategy in std::iter::once(None).chain(STRATEGIES.iter().copied().map(Some)) {
            let mut cmd = preloaded(FIO, strategy);
            // --lockfile must come before --filename: fio reads it when it adds the file.
            cmd.args(["--name=rw", "--lockfile=readwrite"])
                .arg(format!("--filename={}", data.display()))
                .args(["--size=4m", "--bs=1k", "--rw=randrw", "--rwmixread=75", "--ioengine=psync"])
                .args(["--randseed=7", "--output-format=json", "--group_reporting=0"])
                .arg(format!("--numjobs={jobs}"));
            if threads {
                cmd.arg("--thread");
            }
            let log = dir.path().join("ld");
            if strategy.is_some() {
                let _ = std::fs::remove_dir_all(&log);
                std::fs::create_dir_all(&log).expect("create log directory");
                cmd.env("LD_DEBUG", "bindings").env("LD_DEBUG_OUTPUT", log.join("ld"));
            }
            let what = format!("fio {} under {strategy:?}", if threads { "threads" } else { "processes" });
            let o = run_bounded(cmd, Duration::from_secs(120));
            o.assert_success(&what);
            let report = fio_jobs(&o.stdout);
            assert_eq!(
                report.len() as u64,
                jobs,
                "{what}: expected {jobs} jobs in the report:\n{}",
                o.stdout
            );
            for (error, reads, writes) in &report {
                assert_eq!(*error, 0, "{what}: a job reported error {error}");
                assert_eq!(
                    reads + writes,
                    ios_per_job,
                    "{what}: a job did {reads} reads and {writes} writes"
                );
                assert!(*reads > 0 && *writes > 0, "{what}: a job did {reads} reads and {writes} writes");
            }
            if strategy.is_some() {
                // fio binds at load time (-z now): its rwlock calls reach the library.
                let mut bound = std::collections::BTreeSet::new();
                for entry in std::fs::read_dir(&log).expect("read log directory").flatten() {
                    let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                    for message in text.split("binding file ").skip(1) {
                        if !message.starts_with("/usr/bin/fio ") {
                            continue;
                        }
                        let Some(sym) = message.split('`').nth(1).and_then(|r| r.split('\'').next()) else {
                            continue;
                        };
                        if sym.starts_with("pthread_rwlock_") {
                            assert!(
                                message.contains("libspinmutex.so"),
                                "{what}: fio binds {sym} elsewhere: {}",
                                message.lines().next().unwrap_or("")
                            );
                            bound.insert(sym.to_string());
                        }
                    }
                }
                for sym in ["pthread_rwlock_rdlock", "pthread_rwlock_wrlock", "pthread_rwlock_unlock"] {
                    assert!(bound.contains(sym), "{what}: fio does not bind {sym} to the library: {bound:?}");
                }
            }
        }
    }
}

/// fio's rwlock under statistics: with its jobs as threads (one process, one report),
/// its rwlock is the top rwlock class, made by fio's own `fio_rwlock_init`, process-shared,
/// with every read and every write I/O counted in its mode.
fn fio_rwlock_is_the_top_rwlock_class_under_statistics() {
    let dir = scratch();
    let data = dir.path().join("data");
    let stats = dir.path().join("stats.json");
    for strategy in STRATEGIES {
        let _ = std::fs::remove_file(&stats);
        let mut cmd = preloaded(FIO, Some(strategy));
        cmd.args(["--name=rw", "--lockfile=readwrite"])
            .arg(format!("--filename={}", data.display()))
            .args(["--size=4m", "--bs=1k", "--rw=randrw", "--rwmixread=75", "--ioengine=psync"])
            .args(["--randseed=7", "--output-format=json", "--group_reporting=0", "--numjobs=4", "--thread"])
            .env("SPINMUTEX_STATS", "json")
            .env("SPINMUTEX_STATS_FILE", &stats);
        let what = format!("fio threads under {strategy} with statistics");
        let o = run_bounded(cmd, Duration::from_secs(120));
        o.assert_success(&what);
        let jobs = fio_jobs(&o.stdout);
        assert_eq!(jobs.len(), 4, "{what}: {}", o.stdout);
        let (reads, writes) = jobs.iter().fold((0, 0), |(r, w), (_, jr, jw)| (r + jr, w + jw));
        let report = stats::json_report(&stats);
        stats::assert_rows_add_up(&report);
        let top = *stats::classes_of(&report, "rwlock")
            .first()
            .unwrap_or_else(|| panic!("{what}: no rwlock class in {report:#}"));
        assert_eq!(top["type"], "rwlock,pshared", "{what}: {top:#}");
        assert_eq!(top["frames"][0]["symbol"], "fio_rwlock_init", "{what}: {top:#}");
        assert_eq!(top["read"]["locked"], reads, "{what}: {top:#}");
        assert_eq!(top["write"]["locked"], writes, "{what}: {top:#}");
    }
}

// ---------------------------------------------------------------------------------
// Statistics: each real program's hot lock, named after the program exited.
//
// Every program runs under SPINMUTEX_STATS=json and =1. Both reports' rows add up to
// their totals exactly, and the top class by contended acquisitions has some whenever
// the totals do. Then `spinmutex report` names the top class's call sites from the
// files on this machine. How far it can is a property of the files, and asserted as
// such: Debian's pigz, zstd, xz, sysbench and python3 are stripped (pigz and zstd, PIEs
// that export no function, cannot name a frame of their own without their -dbgsym
// package, which is not installed), but liblzma's, libsqlite3's, python3's and
// sysbench's exported functions have names, the test tree's programs have DWARF, and
// glibc's frames are named by libc6-dbg's files under /usr/lib/debug/.build-id when it
// is installed. Whatever has a debug file there must be named from it; a frame with no
// name must be told as module+offset with the reason and the hint to get names, and the
// row must name the first caller that has one.

/// The `spinmutex` command of this build.
fn spinmutex_command() -> PathBuf {
    common::target_dir().join("spinmutex")
}

/// What the statistics tests need besides their program.
fn command_need() -> Need {
    Need::Built(spinmutex_command(), "the spinmutex command (cargo build -p spinmutex-cli)")
}

/// How far the files of a stock Debian 12 machine name a program's hot lock.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Naming {
    /// Some frame of the top class is named by a function.
    SomeFrame,
    /// Maybe none: every frame of the program's own is in a stripped executable that
    /// exports no function.
    MaybeNone,
}

struct StatsCase {
    what: &'static str,
    program: PathBuf,
    args: Vec<String>,
    /// Run through `sh -c` (output to /dev/null): the shell, which locks nothing, must
    /// print no report.
    shell: bool,
    naming: Naming,
}

/// The debug file of build-id `id` that libc6-dbg and -dbgsym packages install.
fn installed_debug_file(id: &str) -> Option<PathBuf> {
    let p = PathBuf::from(format!("/usr/lib/debug/.build-id/{}/{}.debug", id.get(..2)?, id.get(2..)?));
    p.is_file().then_some(p)
}

/// Runs the case with SPINMUTEX_STATS=`format` into a fresh `file`; returns the file's text.
fn stats_run(case: &StatsCase, format: &str, file: &Path) -> String {
    let _ = fs::remove_file(file);
    let mut cmd = if case.shell {
        let mut c = preloaded("sh", Some("spin"));
        c.arg("-c").arg("\"$0\" \"$@\" > /dev/null").arg(&case.program).args(&case.args);
        c
    } else {
        let mut c = preloaded(&case.program, Some("spin"));
        c.args(&case.args);
        c
    };
    cmd.env("SPINMUTEX_STATS", format).env("SPINMUTEX_STATS_FILE", file);
    let what = format!("{} under SPINMUTEX_STATS={format}", case.what);
    let start = Instant::now();
    run_bounded(cmd, HANG_GUARD).assert_success(&what);
    eprintln!("{what}: {:.2} s", start.elapsed().as_secs_f64());
    fs::read_to_string(file).unwrap_or_else(|e| panic!("{what}: no report in {}: {e}", file.display()))
}

fn spinmutex_report(args: &[&str]) -> String {
    let mut cmd = Command::new(spinmutex_command());
    cmd.arg("report").args(args).env_remove("LD_PRELOAD");
    let o = run_bounded(cmd, HANG_GUARD);
    o.assert_success(&format!("spinmutex report {args:?}"));
    o.stdout
}

fn check_statistics(case: &StatsCase) {
    let scratch = Scratch::new("stats");
    let file = scratch.join("stats.json");
    let what = case.what;

    // The library's own text report: its rows add up, and the top row is contended if
    // anything is.
    let text = stats_run(case, "1", &file);
    let rows = common::stats::text_rows_add_up(&text).unwrap_or_else(|e| panic!("{what}: {e}"));
    let totals = rows.iter().find(|r| r.0 == "=").unwrap();
    assert_eq!(
        text.matches("lock statistics for pid").count(),
        1,
        "{what}: one report, from the program:\n{text}"
    );
    if totals.3 > 0 {
        assert!(rows[0].0 == "1" && rows[0].3 > 0, "{what}: the top class is not contended:\n{text}");
    }

    // The JSON report: the same, and named by `spinmutex report`.
    let json = stats_run(case, "json", &file);
    let reports: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {l}")))
        .collect();
    assert_eq!(reports.len(), 1, "{what}: one report, from the program:\n{json}");
    let raw = &reports[0];
    common::stats::json_rows_add_up(raw).unwrap_or_else(|e| panic!("{what}: {e}:\n{raw:#}"));
    let contended = |v: &serde_json::Value| v["counters"]["contended"].as_u64().unwrap();
    if contended(&raw["totals"]) > 0 {
        assert!(contended(&raw["classes"][0]) > 0, "{what}: the top class is not contended:\n{raw:#}");
    }

    let named: serde_json::Value =
        serde_json::from_str(&spinmutex_report(&["--json", file.to_str().unwrap()])).expect("report --json");
    let text = spinmutex_report(&[file.to_str().unwrap()]);
    let class = &named["statistics"][0]["classes"][0];
    let frames = class["frames"].as_array().unwrap();
    assert!(!frames.is_empty(), "{what}: no frames:\n{class:#}");
    let row = text.lines().find(|l| l.starts_with("1 ")).unwrap_or_else(|| panic!("{what}: no row:\n{text}"));
    let name = |f: &serde_json::Value| f["function"].as_str().map(str::to_string);
    // Whatever has a debug file installed is named from it.
    for f in frames {
        if let Some(debug) = f["build_id"].as_str().and_then(installed_debug_file) {
            assert_eq!(
                f["named_by"],
                "dwarf",
                "{what}: {} has {} yet is not named by it: {f:#}",
                f["module"],
                debug.display()
            );
        }
    }
    let first = &frames[0];
    match name(first) {
        Some(function) => assert!(
            row.contains(&format!(" at {function}")),
            "{what}: the row does not name {function}:\n{text}"
        ),
        None => {
            let module = first["module"].as_str().unwrap();
            let base = module.rsplit('/').next().unwrap();
            assert!(
                row.contains(&format!(" at {base}+{}", first["offset"].as_str().unwrap())),
                "{what}: the row does not give module+offset:\n{text}"
            );
            let problem = first["problem"].as_str().unwrap_or_else(|| panic!("{what}: no reason: {first:#}"));
            assert!(problem.contains(module), "{what}: {problem}");
            assert!(text.contains("To get names: "), "{what}: no hint:\n{text}");
            // The row names the first caller that has a name.
            if let Some(caller) = frames.iter().find_map(name) {
                assert!(row.contains(&caller), "{what}: the row does not walk up to {caller}:\n{text}");
            }
            // Nothing was missed: the module's debug file is not installed.
            if let Some(id) = first["build_id"].as_str() {
                assert!(
                    installed_debug_file(id).is_none(),
                    "{what}: {module}'s debug file is installed: {first:#}"
                );
            }
        }
    }
    if case.naming == Naming::SomeFrame {
        assert!(
            frames.iter().any(|f| name(f).is_some()),
            "{what}: no frame of the top class is named:\n{class:#}"
        );
    }
    eprintln!("{what}: {row}");
}

/// The compressors on a generated input, with their threads at full width.
fn compressor_statistics() {
    let scratch = Scratch::new("stats-input");
    let input = scratch.join("input.txt");
    write_input(&input, 8 << 20);
    let input = input.display().to_string();
    let case = |what, name: &str, args: &[&str], naming| StatsCase {
        what,
        program: tool(name),
        args: args.iter().map(|s| s.to_string()).chain([input.clone()]).collect(),
        shell: true,
        naming,
    };
    for c in [
        case("pigz -p 8", "pigz", &["-p", "8", "-c"], Naming::MaybeNone),
        case("zstd -T0", "zstd", &["-q", "-T0", "-B1048576", "-c"], Naming::MaybeNone),
        case("xz -T0", "xz", &["-q", "-T0", "-0", "-c"], Naming::SomeFrame),
    ] {
        check_statistics(&c);
    }
}

fn sysbench_statistics() {
    for (what, args) in [
        (
            "sysbench threads",
            "threads --threads=4 --thread-locks=2 --thread-yields=10 --events=4000 --time=0 run",
        ),
        ("sysbench mutex", "mutex --threads=4 --mutex-num=4 --mutex-locks=200000 --mutex-loops=50 run"),
    ] {
        check_statistics(&StatsCase {
            what,
            program: tool("sysbench"),
            args: args.split(' ').map(str::to_string).collect(),
            shell: false,
            naming: Naming::SomeFrame,
        });
    }
}

fn sqlite_statistics() {
    let scratch = Scratch::new("stats-sqlite");
    let db = scratch.subdir("db");
    check_statistics(&StatsCase {
        what: "real_sqlite",
        program: c_test("real_sqlite"),
        args: vec![db.display().to_string()],
        shell: false,
        naming: Naming::SomeFrame,
    });
}

fn python_statistics() {
    check_statistics(&StatsCase {
        what: "python3",
        program: PathBuf::from(PYTHON),
        args: vec!["-I".into(), "-c".into(), PYTHON_SCRIPT.into()],
        shell: false,
        naming: Naming::SomeFrame,
    });
}

fn main() -> std::process::ExitCode {
    let mut suite = Suite::new();
    suite.needs(
        "sysbench_mutex_and_threads",
        &[Need::Program("sysbench", "sysbench")],
        sysbench_mutex_and_threads,
    );
    suite.needs(
        "stress_ng_mutex_and_pthread",
        &[Need::Program("stress-ng", "stress-ng")],
        stress_ng_mutex_and_pthread,
    );
    suite.needs("pigz_round_trips", &[Need::Program("pigz", "pigz")], pigz_round_trips);
    suite.needs("zstd_round_trips", &[Need::Program("zstd", "zstd")], zstd_round_trips);
    suite.needs("xz_round_trips", &[Need::Program("xz", "xz-utils")], xz_round_trips);
    suite.needs("python_threads", &[Need::File(PYTHON, "python3")], python_threads);
    suite.needs(
        "sqlite_serialized_threads",
        &[Need::Built(c_test("real_sqlite"), "sqlite3.h (libsqlite3-dev)")],
        sqlite_serialized_threads,
    );
    suite.needs("jemalloc_co_preloaded", &[Need::File(JEMALLOC, "libjemalloc2")], jemalloc_co_preloaded);
    suite.needs(
        "fio_with_a_process_shared_rwlock_around_every_io",
        &[Need::File(FIO, "fio")],
        fio_with_a_process_shared_rwlock_around_every_io,
    );
    suite.needs(
        "fio_rwlock_is_the_top_rwlock_class_under_statistics",
        &[Need::File(FIO, "fio")],
        fio_rwlock_is_the_top_rwlock_class_under_statistics,
    );
    suite.needs(
        "compressor_statistics",
        &[
            Need::Program("pigz", "pigz"),
            Need::Program("zstd", "zstd"),
            Need::Program("xz", "xz-utils"),
            command_need(),
        ],
        compressor_statistics,
    );
    suite.needs(
        "sysbench_statistics",
        &[Need::Program("sysbench", "sysbench"), command_need()],
        sysbench_statistics,
    );
    suite.needs(
        "sqlite_statistics",
        &[Need::Built(c_test("real_sqlite"), "sqlite3.h (libsqlite3-dev)"), command_need()],
        sqlite_statistics,
    );
    suite.needs("python_statistics", &[Need::File(PYTHON, "python3"), command_need()], python_statistics);
    tests!(
        suite,
        cpp_standard_library,
        binding_log_lines_are_parsed,
        binding_check_rejects_a_run_without_the_preload,
        input_generator_is_deterministic_and_compressible,
    );
    suite.run()
}
