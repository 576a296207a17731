//! pigz, zstd and xz compress a generated input under every strategy, and their output
//! must be byte for byte the unpreloaded run's.

use super::*;

/// Deterministic, semi-compressible text (about 3:1 for gzip): numbered lines of
/// words drawn at random from a small vocabulary, and a random hex field.
pub(crate) fn write_input(path: &Path, bytes: usize) {
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
pub(crate) fn pigz_round_trips() {
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
pub(crate) fn zstd_round_trips() {
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
pub(crate) fn xz_round_trips() {
    compressor_round_trips(&Compressor {
        name: "xz",
        suffix: ".xz",
        // -0: 256 KiB dictionary, 768 KiB blocks: about 32 blocks for 4 threads.
        compress: &["-q", "-T4", "-0", "-c"],
        decompress: &["-q", "-d", "-T4", "-c"],
        object: "liblzma.so",
    });
}

// python3
