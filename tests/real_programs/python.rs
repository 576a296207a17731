//! python3's threads (its GIL and its locks are pthread mutexes and condition variables)
//! under every strategy.

use super::*;

/// Threads in CPython 3.11: the GIL is a pthread mutex and condition variable (handed
/// over every 10 µs here), `threading.Lock` a semaphore; `RLock`, `Condition`,
/// `queue.Queue` and `ThreadPoolExecutor` are built on them. The output depends only on
/// the work, never on the interleaving.
pub(crate) const PYTHON_SCRIPT: &str = r#"
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

pub(crate) fn python_threads() {
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

// Programs of the test tree
