// libstdc++'s std::shared_mutex and std::shared_timed_mutex are pthread rwlocks: lock and
// try_lock go to pthread_rwlock_wrlock/trywrlock, the shared side to rdlock/tryrdlock,
// try_lock_for and try_lock_until on steady_clock to clockwrlock/clockrdlock, on
// system_clock to timedwrlock/timedrdlock. Checked here through std::shared_lock,
// std::unique_lock and the timed members: exclusion with an exact count and untorn reads,
// try_lock failing while held, timed tries timing out (not early) on both clocks and
// succeeding once free.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include <unistd.h>

using namespace std::chrono;

[[noreturn]] static void fail(const char *what) {
    std::fprintf(stderr, "cxx_shared_mutex: FAIL: %s\n", what);
    std::_Exit(1);
}

static void check(bool ok, const char *what) {
    if (!ok) fail(what);
}

template <class M> static void exclusion(M &m, const char *name) {
    constexpr int kWords = 8, kIters = 20000;
    static long record[kWords];
    std::atomic<int> readers_in{0}, writers_in{0};
    long writes = 0;
    for (auto &w : record) w = 0;
    std::vector<std::thread> threads;
    for (int t = 0; t < 6; t++) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kIters; i++) {
                if ((i + t) % 8 == 0) {
                    std::unique_lock<M> lock(m);
                    check(++writers_in == 1, "two writers inside");
                    check(readers_in == 0, "a writer inside with readers");
                    for (auto &w : record) w++;
                    writes++;
                    writers_in--;
                } else {
                    std::shared_lock<M> lock(m);
                    readers_in++;
                    check(writers_in == 0, "a reader inside with a writer");
                    for (auto w : record) check(w == record[0], "torn record");
                    readers_in--;
                }
            }
        });
    }
    for (auto &t : threads) t.join();
    long expected = 0;
    for (int t = 0; t < 6; t++)
        for (int i = 0; i < kIters; i++) expected += (i + t) % 8 == 0;
    if (writes != expected || record[0] != expected) {
        std::fprintf(stderr, "%s: %ld writes, expected %ld\n", name, writes, expected);
        fail("lost write sections");
    }
}

template <class M> static void tries(M &m) {
    std::atomic<int> state{0};
    std::thread reader([&] {
        std::shared_lock<M> lock(m);
        state = 1;
        while (state != 2) usleep(100);
    });
    while (state != 1) usleep(100);
    check(!m.try_lock(), "try_lock succeeded while a reader held the lock");
    check(m.try_lock_shared(), "try_lock_shared failed next to a reader");
    m.unlock_shared();
    state = 2;
    reader.join();
    std::thread writer([&] {
        std::unique_lock<M> lock(m);
        state = 3;
        while (state != 4) usleep(100);
    });
    while (state != 3) usleep(100);
    check(!m.try_lock(), "try_lock succeeded while a writer held the lock");
    check(!m.try_lock_shared(), "try_lock_shared succeeded while a writer held the lock");
    state = 4;
    writer.join();
    check(m.try_lock(), "try_lock failed on a free lock");
    m.unlock();
}

template <class Clock, class F> static void times_out(F attempt, const char *what) {
    auto deadline = Clock::now() + milliseconds(30);
    bool got = attempt(deadline);
    if (got) {
        std::fprintf(stderr, "%s\n", what);
        fail("a timed try succeeded while the lock was held");
    }
    if (Clock::now() < deadline - milliseconds(1)) {
        std::fprintf(stderr, "%s\n", what);
        fail("a timed try gave up before its deadline");
    }
}

static void timed(std::shared_timed_mutex &m) {
    std::atomic<int> state{0};
    std::thread writer([&] {
        m.lock();
        state = 1;
        while (state != 2) usleep(100);
        m.unlock();
    });
    while (state != 1) usleep(100);
    times_out<steady_clock>([&](steady_clock::time_point t) { return m.try_lock_until(t); }, "try_lock_until(steady)");
    times_out<system_clock>([&](system_clock::time_point t) { return m.try_lock_until(t); }, "try_lock_until(system)");
    times_out<steady_clock>([&](steady_clock::time_point t) { return m.try_lock_shared_until(t); },
                            "try_lock_shared_until(steady)");
    times_out<system_clock>([&](system_clock::time_point t) { return m.try_lock_shared_until(t); },
                            "try_lock_shared_until(system)");
    times_out<steady_clock>([&](steady_clock::time_point t) { return m.try_lock_for(t - steady_clock::now()); },
                            "try_lock_for");
    times_out<steady_clock>([&](steady_clock::time_point t) { return m.try_lock_shared_for(t - steady_clock::now()); },
                            "try_lock_shared_for");
    state = 2;
    writer.join();
    check(m.try_lock_for(milliseconds(100)), "try_lock_for failed on a free lock");
    m.unlock();
    check(m.try_lock_shared_for(milliseconds(100)), "try_lock_shared_for failed on a free lock");
    check(m.try_lock_shared_until(system_clock::now() + milliseconds(100)), "try_lock_shared_until failed next to a reader");
    check(!m.try_lock_until(steady_clock::now() + milliseconds(20)), "try_lock_until succeeded next to readers");
    m.unlock_shared();
    m.unlock_shared();
    // Released part-way: a waiting timed writer gets in.
    std::thread holder([&] {
        std::shared_lock<std::shared_timed_mutex> lock(m);
        state = 5;
        std::this_thread::sleep_for(milliseconds(20));
    });
    while (state != 5) usleep(100);
    check(m.try_lock_for(seconds(10)), "try_lock_for did not get the lock after the reader left");
    m.unlock();
    holder.join();
}

int main() {
    alarm(60);
    std::shared_mutex sm;
    std::shared_timed_mutex stm;
    exclusion(sm, "shared_mutex");
    exclusion(stm, "shared_timed_mutex");
    tries(sm);
    tries(stm);
    timed(stm);
    return 0;
}
