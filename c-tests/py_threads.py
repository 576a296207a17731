# CPython threads under the preload (run by tests/core.rs; not compiled). The GIL and
# threading primitives use pthread mutexes and condition variables. Output is
# deterministic: the same under every strategy and without preload.
import queue
import threading

N_WORKERS = 4
ITEMS = 2000

counter = 0
counter_lock = threading.Lock()


def add(n):
    global counter
    for _ in range(n):
        with counter_lock:
            counter += 1


threads = [threading.Thread(target=add, args=(5000,)) for _ in range(N_WORKERS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("lock counter", counter)

# Condition: a bounded buffer.
cond = threading.Condition()
buf = []
done_producing = [False]
consumed = []


def producer(base):
    for i in range(ITEMS):
        with cond:
            while len(buf) >= 8:
                cond.wait()
            buf.append(base + i)
            cond.notify_all()


def consumer():
    got = 0
    while True:
        with cond:
            while not buf and not done_producing[0]:
                cond.wait(timeout=10)
            if not buf:
                break
            got += buf.pop()
            cond.notify_all()
    with counter_lock:
        consumed.append(got)


producers = [threading.Thread(target=producer, args=(k * 100000,)) for k in range(2)]
consumers = [threading.Thread(target=consumer) for _ in range(3)]
for t in consumers + producers:
    t.start()
for t in producers:
    t.join()
with cond:
    done_producing[0] = True
    cond.notify_all()
for t in consumers:
    t.join()
print("condition sum", sum(consumed))

# queue.Queue: work items and results.
tasks = queue.Queue()
results = queue.Queue()


def qworker():
    while True:
        item = tasks.get()
        if item is None:
            tasks.task_done()
            return
        results.put(item * item)
        tasks.task_done()


workers = [threading.Thread(target=qworker) for _ in range(N_WORKERS)]
for w in workers:
    w.start()
for i in range(ITEMS):
    tasks.put(i)
for _ in workers:
    tasks.put(None)
tasks.join()
for w in workers:
    w.join()
total = 0
while not results.empty():
    total += results.get()
print("queue sum of squares", total)

# Event and RLock, with a timed wait that must time out.
ev = threading.Event()
print("event wait timed out", ev.wait(0.02) is False)
rl = threading.RLock()
with rl:
    with rl:
        print("rlock nested ok")
sem = threading.Semaphore(2)
hits = []


def sem_user(k):
    with sem:
        with counter_lock:
            hits.append(k)


sts = [threading.Thread(target=sem_user, args=(k,)) for k in range(10)]
for t in sts:
    t.start()
for t in sts:
    t.join()
print("semaphore users", sorted(hits))
