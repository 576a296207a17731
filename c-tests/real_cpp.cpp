// Real-program test (tests/real_programs.rs): an ordinary multi-threaded C++ program
// built on the standard library's synchronisation, with deterministic output.
//
//   - std::mutex guarding a std::map that several threads fill (word counts);
//   - a bounded work queue of std::shared_ptr<Job> (std::mutex + two
//     std::condition_variable, wait with a predicate and wait_for), jobs shared between
//     the producer's list and the consumers, their use counts checked at the end;
//   - std::async tasks (std::launch::async) returning results through std::future;
//   - std::atomic_load / std::atomic_store on a std::shared_ptr, which libstdc++
//     implements with its own pool of mutexes (pthread_mutex_lock inside libstdc++);
//   - std::recursive_mutex taken recursively.
// libstdc++ calls pthread_mutex_lock/unlock for std::mutex through this program's PLT.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void fail(const std::string &msg) {
    std::fprintf(stderr, "real_cpp: %s\n", msg.c_str());
    std::exit(1);
}

uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

// ---- std::mutex around a std::map ----

const char *const WORDS[] = {"mutex", "futex", "spin", "lock", "wait", "wake", "owner", "queue"};

std::map<std::string, uint64_t> word_counts() {
    std::map<std::string, uint64_t> counts;
    std::mutex m;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 100000; i++) {
                const char *w = WORDS[mix(uint64_t(t) * 1000003 + i) % 8];
                std::lock_guard<std::mutex> g(m);
                counts[w] += 1;
            }
        });
    for (auto &th : threads)
        th.join();
    return counts;
}

// ---- a bounded queue of shared_ptr<Job> ----

struct Job {
    int id;
    std::vector<uint32_t> data;
    uint64_t result = 0;
};

class JobQueue {
  public:
    explicit JobQueue(size_t cap) : cap_(cap) {}

    void push(std::shared_ptr<Job> job) {
        std::unique_lock<std::mutex> g(m_);
        not_full_.wait(g, [&] { return q_.size() < cap_; });
        q_.push_back(std::move(job));
        not_empty_.notify_one();
    }

    void close() {
        std::lock_guard<std::mutex> g(m_);
        closed_ = true;
        not_empty_.notify_all();
    }

    // Waits with wait_for (pthread_cond_clockwait) in short slices.
    std::shared_ptr<Job> pop() {
        std::unique_lock<std::mutex> g(m_);
        while (q_.empty() && !closed_)
            not_empty_.wait_for(g, std::chrono::milliseconds(50));
        if (q_.empty())
            return nullptr;
        auto job = std::move(q_.front());
        q_.pop_front();
        not_full_.notify_one();
        return job;
    }

  private:
    std::mutex m_;
    std::condition_variable not_empty_, not_full_;
    std::deque<std::shared_ptr<Job>> q_;
    size_t cap_;
    bool closed_ = false;
};

uint64_t run_jobs(int n_jobs, int consumers) {
    JobQueue queue(16);
    std::vector<std::shared_ptr<Job>> all;
    std::mutex done_m;
    uint64_t done = 0;
    std::vector<std::thread> threads;
    for (int c = 0; c < consumers; c++)
        threads.emplace_back([&] {
            while (auto job = queue.pop()) {
                uint64_t h = 0;
                for (uint32_t v : job->data)
                    h = mix(h ^ v);
                job->result = h;
                std::lock_guard<std::mutex> g(done_m);
                done++;
            }
        });
    for (int i = 0; i < n_jobs; i++) {
        auto job = std::make_shared<Job>();
        job->id = i;
        job->data.resize(64 + mix(i) % 512);
        for (size_t k = 0; k < job->data.size(); k++)
            job->data[k] = uint32_t(mix(uint64_t(i) << 20 | k));
        all.push_back(job);
        queue.push(job);
    }
    queue.close();
    for (auto &th : threads)
        th.join();
    if (done != uint64_t(n_jobs))
        fail("jobs done " + std::to_string(done) + ", expected " + std::to_string(n_jobs));
    uint64_t sum = 0;
    for (auto &job : all) {
        if (job.use_count() != 1)
            fail("job " + std::to_string(job->id) + " still shared: use_count " + std::to_string(job.use_count()));
        sum += job->result;
    }
    return sum;
}

// ---- std::async ----

uint64_t async_sums() {
    std::vector<std::future<uint64_t>> futures;
    for (int t = 0; t < 8; t++)
        futures.push_back(std::async(std::launch::async, [t] {
            uint64_t s = 0;
            for (uint64_t i = 0; i < 200000; i++)
                s += mix(uint64_t(t) << 32 | i) % 1000;
            return s;
        }));
    uint64_t total = 0;
    for (auto &f : futures)
        total += f.get();
    return total;
}

// ---- atomic operations on a shared_ptr (libstdc++'s mutex pool) ----

struct Config {
    uint64_t version;
    uint64_t payload;
};

uint64_t shared_config() {
    std::shared_ptr<const Config> current = std::make_shared<const Config>(Config{0, mix(0)});
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> bad{0};
    std::vector<std::thread> readers;
    for (int r = 0; r < 3; r++)
        readers.emplace_back([&] {
            uint64_t last = 0;
            while (!stop.load()) {
                auto c = std::atomic_load(&current);
                if (c->payload != mix(c->version) || c->version < last)
                    bad++;
                last = c->version;
            }
        });
    for (uint64_t v = 1; v <= 100000; v++)
        std::atomic_store(&current, std::make_shared<const Config>(Config{v, mix(v)}));
    stop = true;
    for (auto &th : readers)
        th.join();
    if (bad.load() != 0)
        fail("readers saw " + std::to_string(bad.load()) + " torn or stale configs");
    return std::atomic_load(&current)->version;
}

// ---- std::recursive_mutex ----

std::recursive_mutex rm;
uint64_t rec_total = 0;

void rec_add(int depth, uint64_t v) {
    std::lock_guard<std::recursive_mutex> g(rm);
    rec_total += v;
    if (depth > 0)
        rec_add(depth - 1, v + 1);
}

uint64_t recursive_sum() {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++)
        threads.emplace_back([t] {
            for (int i = 0; i < 5000; i++)
                rec_add(4, uint64_t(t + i));
        });
    for (auto &th : threads)
        th.join();
    return rec_total;
}

} // namespace

int main() {
    auto counts = word_counts();
    uint64_t words = 0;
    for (auto &kv : counts) {
        std::printf("word %s %llu\n", kv.first.c_str(), (unsigned long long)kv.second);
        words += kv.second;
    }
    if (words != 4 * 100000)
        fail("word total " + std::to_string(words));

    std::printf("jobs %llu\n", (unsigned long long)run_jobs(10000, 3));
    std::printf("async %llu\n", (unsigned long long)async_sums());
    uint64_t version = shared_config();
    if (version != 100000)
        fail("final config version " + std::to_string(version));
    std::printf("config %llu\n", (unsigned long long)version);

    uint64_t expected = 0;
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 5000; i++)
            for (int d = 0; d <= 4; d++)
                expected += uint64_t(t + i + d);
    uint64_t rec = recursive_sum();
    if (rec != expected)
        fail("recursive sum " + std::to_string(rec) + ", expected " + std::to_string(expected));
    std::printf("recursive %llu\n", (unsigned long long)rec);
    std::printf("ok\n");
    return 0;
}
