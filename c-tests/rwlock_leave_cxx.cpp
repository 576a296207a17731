// std::shared_timed_mutex (a pthread rwlock in libstdc++) after a shared waiter timed out:
// the mutex nobody holds must be free to try_lock, and to try_lock_until/try_lock_for
// with a time already past, on both clocks (clockwrlock and timedwrlock underneath).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <shared_mutex>
#include <thread>

using namespace std::chrono;

[[noreturn]] static void fail(const char *what) {
    std::fprintf(stderr, "rwlock_leave_cxx: FAIL: %s\n", what);
    std::_Exit(1);
}

// The mutex is held exclusively while another thread's try_lock_shared_for times out;
// then it is released. Returns with the mutex free.
static void shared_waiter_times_out(std::shared_timed_mutex &m) {
    m.lock();
    bool got = true;
    std::thread t([&] { got = m.try_lock_shared_for(milliseconds(30)); });
    t.join();
    if (got) fail("try_lock_shared_for succeeded while the mutex was held exclusively");
    m.unlock();
}

int main() {
    std::shared_timed_mutex m;

    shared_waiter_times_out(m);
    if (!m.try_lock()) fail("try_lock on a free mutex after a shared waiter timed out");
    m.unlock();

    shared_waiter_times_out(m);
    if (!m.try_lock_until(steady_clock::now() - seconds(1)))
        fail("try_lock_until(steady_clock, past) on a free mutex after a shared waiter timed out");
    m.unlock();

    shared_waiter_times_out(m);
    if (!m.try_lock_until(system_clock::now() - seconds(1)))
        fail("try_lock_until(system_clock, past) on a free mutex after a shared waiter timed out");
    m.unlock();

    shared_waiter_times_out(m);
    if (!m.try_lock_for(seconds(0))) fail("try_lock_for(0) on a free mutex after a shared waiter timed out");
    m.unlock();

    shared_waiter_times_out(m);
    if (!m.try_lock_shared()) fail("try_lock_shared on a free mutex after a shared waiter timed out");
    m.unlock_shared();
    return 0;
}
