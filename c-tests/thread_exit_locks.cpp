// Locks taken while a thread exits, after its thread-local storage starts being torn
// down: a C++ thread_local object constructed before the thread's first lock (so its
// destructor runs after any thread-local destructor the library registers later), and
// a pthread key destructor (run after all thread_local destructors, for several
// rounds as the key is set again). Both take contended mutexes (errorcheck, recursive,
// a std::mutex, and a timed lock); counts must be exact. Threads exit in waves so that
// exiting threads contend with each other and with running ones.
#include "check.h"

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

static pthread_mutex_t shared_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t shared_e = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_mutex_t shared_r = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static std::mutex std_m;
static long count_tls, count_key, count_run;
static std::atomic<long> count_std{0};
static pthread_key_t key;

static void locked_increment(long &c) {
    OK(pthread_mutex_lock(&shared_m));
    long v = c;
    sched_yield();
    c = v + 1;
    OK(pthread_mutex_unlock(&shared_m));
    OK(pthread_mutex_lock(&shared_e));
    EXPECT_RC(pthread_mutex_lock(&shared_e), EDEADLK);
    OK(pthread_mutex_unlock(&shared_e));
    OK(pthread_mutex_lock(&shared_r));
    OK(pthread_mutex_lock(&shared_r));
    OK(pthread_mutex_unlock(&shared_r));
    OK(pthread_mutex_unlock(&shared_r));
    struct timespec ts = deadline_in(CLOCK_REALTIME, 10000000000LL);
    OK(pthread_mutex_timedlock(&shared_m, &ts));
    OK(pthread_mutex_unlock(&shared_m));
}

struct ExitLocker {
    bool armed = false;
    ~ExitLocker() {
        if (!armed) return;
        locked_increment(count_tls);
        std::lock_guard<std::mutex> g(std_m);
        count_std++;
    }
};
static thread_local ExitLocker exit_locker;

static void key_destructor(void *value) {
    long rounds_left = (long)(intptr_t)value;
    locked_increment(count_key);
    if (rounds_left > 1) pthread_setspecific(key, (void *)(intptr_t)(rounds_left - 1));
}

static void *worker(void *) {
    exit_locker.armed = true; // constructed before this thread's first lock
    pthread_setspecific(key, (void *)(intptr_t)3);
    for (int i = 0; i < 20; i++) locked_increment(count_run);
    return nullptr;
}

int main() {
    test_begin("thread_exit_locks", 30);
    OK(pthread_key_create(&key, key_destructor));
    constexpr int WAVES = 30, PER_WAVE = 8;
    for (int w = 0; w < WAVES; w++) {
        pthread_t t[PER_WAVE];
        for (int i = 0; i < PER_WAVE; i++) t[i] = start_thread(worker, nullptr);
        for (int i = 0; i < PER_WAVE; i++) join_thread(t[i]);
    }
    // std::thread too (its own start routine).
    std::vector<std::thread> ts;
    for (int i = 0; i < PER_WAVE; i++) ts.emplace_back([] { worker(nullptr); });
    for (auto &t : ts) t.join();
    const long threads = WAVES * PER_WAVE + PER_WAVE;
    if (count_run != threads * 20) fail("running threads counted %ld, expected %ld", count_run, threads * 20);
    if (count_tls != threads) fail("thread_local destructors counted %ld, expected %ld", count_tls, threads);
    if (count_std.load() != threads) fail("std::mutex in thread_local destructors counted %ld, expected %ld", count_std.load(), threads);
    if (count_key != threads * 3) fail("pthread key destructors counted %ld, expected %ld", count_key, threads * 3);
    return 0;
}
