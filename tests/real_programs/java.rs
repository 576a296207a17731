//! The JVM (OpenJDK's HotSpot): its monitors and thread parking are pthread mutexes
//! and condition variables, its safepoints and null checks run on signal handlers it
//! installs with `sigaction`, and it ends by its own shutdown sequence.

use super::*;

/// What a Java program exercises of the library, through HotSpot: `ReentrantLock` and
/// `Condition` park threads (a pthread mutex taken by `trylock`, a condition variable
/// waited on with a timeout on CLOCK_MONOTONIC), `synchronized` and `wait`/`notify`
/// inflate monitors that park the same way, the thread pool and the G1 collector's
/// threads wait on HotSpot's own monitors (pthread mutexes and condition variables).
/// The output depends only on the work, never on the interleaving.
const HAMMER_JAVA: &str = r#"
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.locks.*;

public class Hammer {
    static long plain = 0, fair = 0, sync = 0;

    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]), iters = Integer.parseInt(args[1]);
        ReentrantLock lock = new ReentrantLock();
        ReentrantLock fairLock = new ReentrantLock(true);
        Condition cond = lock.newCondition();
        Object monitor = new Object();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<Long>> results = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final int id = t;
            results.add(pool.submit(() -> {
                long allocated = 0;
                for (int i = 0; i < iters; i++) {
                    if ((i & 1) == 0) {
                        lock.lock();
                        try { plain++; if (i % 1000 == 0) cond.signalAll(); } finally { lock.unlock(); }
                    } else {
                        fairLock.lock();
                        try { fair++; } finally { fairLock.unlock(); }
                    }
                    synchronized (monitor) { sync++; if (i % 5000 == 0) monitor.notifyAll(); }
                    if (i % 10000 == id) {
                        lock.lock();
                        try { cond.await(1, TimeUnit.MILLISECONDS); } finally { lock.unlock(); }
                        synchronized (monitor) { monitor.wait(1); }
                    }
                    if (i % 64 == 0) allocated += new byte[1024 + (i % 4096)].length;
                }
                return allocated;
            }));
        }
        System.err.println("ready");
        long allocated = 0;
        for (Future<Long> f : results) allocated += f.get();
        pool.shutdown();
        if (!pool.awaitTermination(1, TimeUnit.MINUTES)) throw new IllegalStateException("pool");
        long want = (long) threads * iters;
        System.out.println("locked " + (plain + fair) + " synchronized " + sync + " of " + want
                + ", allocated " + allocated);
        if (plain + fair != want || sync != want) System.exit(1);
        System.out.println("ok");
    }
}
"#;

/// The compiler and the JVM: Debian's default JDK.
pub(crate) fn java_needs() -> [Need; 2] {
    [Need::Program("javac", "default-jdk-headless"), Need::Program("java", "default-jdk-headless")]
}

/// The JVM's options: the G1 collector (the one of a server; a 2-CPU machine would get
/// the serial one) with its concurrent threads, in a heap small enough to collect often.
const JVM_OPTIONS: &[&str] = &["-XX:+UseG1GC", "-Xmx128m", "-Xshare:auto"];

/// Compiles the program into `scratch`, without the preload; returns the class path.
pub(crate) fn compiled_hammer(scratch: &Scratch) -> PathBuf {
    let dir = scratch.subdir("java");
    fs::write(dir.join("Hammer.java"), HAMMER_JAVA).expect("write Hammer.java");
    let mut javac = preloaded(tool("javac"), None);
    javac.arg("-d").arg(&dir).arg(dir.join("Hammer.java"));
    run_bounded(javac, HANG_GUARD).assert_success("javac Hammer.java");
    dir
}

/// The arguments of `java` that run the program: 4 threads, `iterations` each.
pub(crate) fn hammer_args(classes: &Path, iterations: u32) -> Vec<String> {
    let mut args: Vec<String> = JVM_OPTIONS.iter().map(|s| s.to_string()).collect();
    args.extend(["-cp".into(), classes.display().to_string(), "Hammer".into(), "4".into()]);
    args.push(iterations.to_string());
    args
}

pub(crate) fn java_threads() {
    let scratch = Scratch::new("java");
    let classes = compiled_hammer(&scratch);
    // libjvm is linked lazily: the binding proves HotSpot called the library.
    let musts = [must_bind("libjvm.so")];
    let mut reference: Option<String> = None;
    for strategy in modes() {
        let mut cmd = preloaded(tool("java"), strategy);
        cmd.args(hammer_args(&classes, 100_000));
        let out = run_checked("java threads", &scratch, strategy, cmd, &musts);
        assert!(out.stdout.ends_with("ok\n"), "java {}: incomplete output\n{}", label(strategy), out.stdout);
        match &reference {
            None => reference = Some(out.stdout),
            Some(r) => {
                assert_eq!(&out.stdout, r, "java output {} differs from the run without it", label(strategy))
            }
        }
    }
}
