// C++ standard library mutexes (libstdc++ calls pthread_mutex_* through the PLT;
// try_lock_for uses pthread_mutex_clocklock, condition_variable::wait_for uses
// pthread_cond_clockwait):
//   std::mutex and std::recursive_mutex: exact counts under contention, try_lock
//   std::timed_mutex::try_lock_for / try_lock_until: time out (not early) while another
//   thread holds it; succeed at once when free; succeed when released part-way
//   std::recursive_timed_mutex::try_lock_for on the own lock
//   std::condition_variable::wait_for: times out (cv_status::timeout, mutex held), and
//   is woken by notify_one well before its timeout; notify_all producer/consumer counts
#include "check.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

using namespace std::chrono;
using namespace std::chrono_literals;

static constexpr int THREADS = 4;
static constexpr long ITERS = 20000;

template <class M>
static void count_under(M &m, const char *name, bool nested) {
    long counter = 0;
    std::atomic<int> inside{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < THREADS; t++) {
        ts.emplace_back([&, t] {
            for (long i = 0; i < ITERS; i++) {
                if ((i + t) % 8 == 0) {
                    while (!m.try_lock()) std::this_thread::yield();
                } else {
                    m.lock();
                }
                if (nested) m.lock();
                if (inside.fetch_add(1) != 0) fail("%s: two threads inside", name);
                long v = counter;
                if ((i & 127) == 0) std::this_thread::yield();
                counter = v + 1;
                inside.fetch_sub(1);
                if (nested) m.unlock();
                m.unlock();
            }
        });
    }
    for (auto &t : ts) t.join();
    if (counter != THREADS * ITERS) fail("%s: counter %ld, expected %ld", name, counter, THREADS * ITERS);
}

template <class M>
static void held_elsewhere(M &m, const std::function<void()> &while_held) {
    std::atomic<int> state{0};
    std::thread h([&] {
        m.lock();
        state = 1;
        while (state != 2) std::this_thread::sleep_for(100us);
        m.unlock();
    });
    while (state != 1) std::this_thread::sleep_for(100us);
    while_held();
    state = 2;
    h.join();
}

static void timed_mutex_checks() {
    std::timed_mutex tm;
    // Free: at once.
    auto t0 = steady_clock::now();
    if (!tm.try_lock_for(2s)) fail("timed_mutex::try_lock_for failed on a free mutex");
    if (steady_clock::now() - t0 > 1s) fail("try_lock_for on a free mutex was slow");
    tm.unlock();
    if (!tm.try_lock_until(system_clock::now() - 1s)) fail("try_lock_until(past) failed on a free mutex");
    tm.unlock();
    // Held by another thread: times out, not early.
    held_elsewhere(tm, [&] {
        if (tm.try_lock()) fail("timed_mutex::try_lock succeeded while held elsewhere");
        auto start = steady_clock::now();
        if (tm.try_lock_for(50ms)) fail("try_lock_for succeeded while held elsewhere");
        auto took = steady_clock::now() - start;
        if (took < 49ms) fail("try_lock_for(50ms) gave up after %lld us", (long long)duration_cast<microseconds>(took).count());
        if (took > 2050ms) fail("try_lock_for(50ms) took %lld ms", (long long)duration_cast<milliseconds>(took).count());
        auto deadline = system_clock::now() + 50ms;
        if (tm.try_lock_until(deadline)) fail("try_lock_until succeeded while held elsewhere");
        if (system_clock::now() < deadline - 1ms) fail("try_lock_until returned early");
        auto sdeadline = steady_clock::now() + 50ms;
        if (tm.try_lock_until(sdeadline)) fail("try_lock_until(steady) succeeded while held elsewhere");
        if (steady_clock::now() < sdeadline - 1ms) fail("try_lock_until(steady) returned early");
    });
    // Released part-way: succeeds.
    std::thread h([&] {
        tm.lock();
        std::this_thread::sleep_for(30ms);
        tm.unlock();
    });
    std::this_thread::sleep_for(5ms);
    auto start = steady_clock::now();
    if (!tm.try_lock_for(5s)) fail("try_lock_for(5s) failed though the holder released after 30 ms");
    if (steady_clock::now() - start > 2500ms) fail("try_lock_for took too long to notice the release");
    tm.unlock();
    h.join();
    count_under(tm, "std::timed_mutex", false);

    std::recursive_timed_mutex rtm;
    if (!rtm.try_lock_for(1s)) fail("recursive_timed_mutex: first try_lock_for failed");
    if (!rtm.try_lock_for(1s)) fail("recursive_timed_mutex: try_lock_for of own lock failed");
    std::thread o([&] {
        if (rtm.try_lock_for(20ms)) fail("recursive_timed_mutex: other thread got it");
    });
    o.join();
    rtm.unlock();
    rtm.unlock();
    std::thread o2([&] {
        if (!rtm.try_lock_for(1s)) fail("recursive_timed_mutex: other thread could not get the released mutex");
        rtm.unlock();
    });
    o2.join();
}

static void condvar_checks() {
    std::mutex m;
    std::condition_variable cv;
    bool flag = false;
    {
        std::unique_lock<std::mutex> lk(m);
        auto start = steady_clock::now();
        std::cv_status st;
        do {
            st = cv.wait_for(lk, 50ms);
        } while (st == std::cv_status::no_timeout && steady_clock::now() - start < 50ms);
        auto took = steady_clock::now() - start;
        if (st != std::cv_status::timeout) fail("wait_for did not time out");
        if (took < 49ms) fail("wait_for(50ms) timed out after %lld us", (long long)duration_cast<microseconds>(took).count());
        if (took > 2050ms) fail("wait_for(50ms) took %lld ms", (long long)duration_cast<milliseconds>(took).count());
        if (!lk.owns_lock()) fail("unique_lock lost ownership");
        // The mutex is really held: another thread cannot take it.
        std::thread o([&] {
            if (m.try_lock()) fail("mutex free after wait_for timed out");
        });
        o.join();
        if (cv.wait_for(lk, 20ms, [&] { return flag; })) fail("wait_for(pred) returned true with the predicate false");
    }
    // Woken by notify_one well before the timeout.
    std::thread n([&] {
        std::this_thread::sleep_for(20ms);
        std::lock_guard<std::mutex> g(m);
        flag = true;
        cv.notify_one();
    });
    {
        std::unique_lock<std::mutex> lk(m);
        auto start = steady_clock::now();
        if (!cv.wait_for(lk, 10s, [&] { return flag; })) fail("wait_for(10s) not woken by notify_one");
        if (steady_clock::now() - start > 5s) fail("notify_one took too long");
    }
    n.join();

    // notify_all producer/consumer with exact totals.
    constexpr long ITEMS = 20000;
    long produced = 0, consumed_sum = 0, consumed_n = 0;
    bool done = false;
    std::vector<long> queue;
    std::vector<std::thread> consumers;
    for (int c = 0; c < 3; c++) {
        consumers.emplace_back([&] {
            std::unique_lock<std::mutex> lk(m);
            for (;;) {
                while (queue.empty() && !done) cv.wait_for(lk, 10s);
                if (queue.empty()) return;
                consumed_sum += queue.back();
                queue.pop_back();
                consumed_n++;
            }
        });
    }
    std::thread p([&] {
        for (long i = 1; i <= ITEMS; i++) {
            std::lock_guard<std::mutex> g(m);
            queue.push_back(i);
            produced++;
            if (i % 3 == 0) cv.notify_all();
            else cv.notify_one();
        }
        std::lock_guard<std::mutex> g(m);
        done = true;
        cv.notify_all();
    });
    p.join();
    for (auto &c : consumers) c.join();
    if (consumed_n != ITEMS || consumed_sum != ITEMS * (ITEMS + 1) / 2)
        fail("condition_variable: consumed %ld items summing to %ld, expected %ld and %ld", consumed_n, consumed_sum, ITEMS,
             ITEMS * (ITEMS + 1) / 2);
}

int main() {
    test_begin("cxx_mutex", 30);
    std::mutex m;
    count_under(m, "std::mutex", false);
    std::recursive_mutex rm;
    count_under(rm, "std::recursive_mutex", true);
    m.lock();
    if (m.try_lock()) fail("std::mutex::try_lock succeeded on own lock");
    m.unlock();
    rm.lock();
    if (!rm.try_lock()) fail("std::recursive_mutex::try_lock failed on own lock");
    std::thread o([&] {
        if (rm.try_lock()) fail("std::recursive_mutex::try_lock by another thread succeeded");
    });
    o.join();
    rm.unlock();
    rm.unlock();
    timed_mutex_checks();
    condvar_checks();
    return 0;
}
