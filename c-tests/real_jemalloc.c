// Real-program test (tests/real_programs.rs), run with jemalloc preloaded next to the
// library. jemalloc guards its arenas, bins and extent structures with pthread mutexes
// (trylock first, lock when contended), so every malloc/free here can reach the
// library's pthread_mutex_* through jemalloc, as well as through this program's own
// queue. jemalloc also initialises and locks its mutexes very early, possibly before the
// library's constructor has run, and the library's own lazy symbol resolution
// (dlsym) calls malloc, i.e. jemalloc, i.e. pthread_mutex_lock again.
//
// PRODUCERS threads allocate ITEMS buffers each, of varied sizes (16 B to 256 KiB),
// fill them with a pattern that depends on (producer, sequence), and hand them over
// through a bounded queue (one mutex, two condition variables). CONSUMERS threads take
// them, check the pattern, sometimes realloc them, and free them. Every thread also
// churns through private allocations. The sums of all buffers' checksums, computed on
// both sides, must agree and are the same in every run (addition commutes).
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRODUCERS 3
#define CONSUMERS 3
#define ITEMS 5000   /* per producer */
#define QUEUE_CAP 64
#define CHURN 64     /* private allocations kept live per thread */

struct item {
    uint32_t producer, seq;
    size_t size;
    unsigned char *data;
};

static struct item *queue[QUEUE_CAP];
static size_t q_head, q_len;
static int producers_left = PRODUCERS;
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t q_not_full = PTHREAD_COND_INITIALIZER;

static pthread_mutex_t totals_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t produced_sum, consumed_sum, consumed_items, consumed_bytes;

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* Mostly small sizes, some medium, a few large: jemalloc's small bins, large extents. */
static size_t size_of(uint32_t p, uint32_t seq) {
    uint64_t r = mix(((uint64_t)p << 32) | seq);
    switch (r % 32) {
    case 0: return 16384 + (size_t)(r >> 8) % (256 * 1024 - 16384);
    case 1: case 2: case 3: case 4: case 5: return 1024 + (size_t)(r >> 8) % 15360;
    default: return 16 + (size_t)(r >> 8) % 1008;
    }
}

static unsigned char byte_at(uint32_t p, uint32_t seq, size_t i) {
    return (unsigned char)(mix(((uint64_t)p << 40) ^ ((uint64_t)seq << 20) ^ (i >> 6)) >> (8 * (i & 7)));
}

static uint64_t checksum(const unsigned char *d, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ d[i]) * 1099511628211ull;
    return h;
}

static void *xmalloc(size_t n) {
    void *p = malloc(n);
    if (!p) {
        fprintf(stderr, "real_jemalloc: malloc(%zu) failed\n", n);
        exit(1);
    }
    return p;
}

/* Private allocations with a short life, replaced at random. */
struct churn {
    void *slot[CHURN];
    uint64_t state;
};

static void churn_step(struct churn *c) {
    c->state = mix(c->state + 0x9e3779b97f4a7c15ull);
    size_t i = c->state % CHURN;
    free(c->slot[i]);
    size_t n = 8 + (size_t)(c->state >> 20) % 4096;
    c->slot[i] = xmalloc(n);
    memset(c->slot[i], (int)(c->state & 0xff), n);
}

static void churn_free(struct churn *c) {
    for (size_t i = 0; i < CHURN; i++)
        free(c->slot[i]);
}

static void *producer(void *arg) {
    uint32_t p = (uint32_t)(uintptr_t)arg;
    struct churn c = {.state = p};
    uint64_t sum = 0;
    for (uint32_t seq = 0; seq < ITEMS; seq++) {
        struct item *it = xmalloc(sizeof *it);
        it->producer = p;
        it->seq = seq;
        it->size = size_of(p, seq);
        it->data = xmalloc(it->size);
        for (size_t i = 0; i < it->size; i++)
            it->data[i] = byte_at(p, seq, i);
        sum += checksum(it->data, it->size);
        churn_step(&c);

        pthread_mutex_lock(&q_lock);
        while (q_len == QUEUE_CAP)
            pthread_cond_wait(&q_not_full, &q_lock);
        queue[(q_head + q_len) % QUEUE_CAP] = it;
        q_len++;
        pthread_cond_signal(&q_not_empty);
        pthread_mutex_unlock(&q_lock);
    }
    churn_free(&c);
    pthread_mutex_lock(&totals_lock);
    produced_sum += sum;
    pthread_mutex_unlock(&totals_lock);

    pthread_mutex_lock(&q_lock);
    if (--producers_left == 0)
        pthread_cond_broadcast(&q_not_empty);
    pthread_mutex_unlock(&q_lock);
    return NULL;
}

static void *consumer(void *arg) {
    struct churn c = {.state = 1000 + (uintptr_t)arg};
    uint64_t sum = 0, items = 0, bytes = 0;
    for (;;) {
        pthread_mutex_lock(&q_lock);
        while (q_len == 0 && producers_left > 0)
            pthread_cond_wait(&q_not_empty, &q_lock);
        if (q_len == 0) {
            pthread_mutex_unlock(&q_lock);
            break;
        }
        struct item *it = queue[q_head];
        q_head = (q_head + 1) % QUEUE_CAP;
        q_len--;
        pthread_cond_signal(&q_not_full);
        pthread_mutex_unlock(&q_lock);

        for (size_t i = 0; i < it->size; i += 97)
            if (it->data[i] != byte_at(it->producer, it->seq, i)) {
                fprintf(stderr, "real_jemalloc: item %" PRIu32 "/%" PRIu32 " corrupt at byte %zu\n",
                        it->producer, it->seq, i);
                exit(1);
            }
        uint64_t sum_before = checksum(it->data, it->size);
        sum += sum_before;
        items++;
        bytes += it->size;
        if (it->seq % 5 == 0) {
            /* Grow it (possibly moving it to another size class) and check the copy. */
            unsigned char *grown = realloc(it->data, it->size * 2 + 100);
            if (!grown) {
                fprintf(stderr, "real_jemalloc: realloc failed\n");
                exit(1);
            }
            if (checksum(grown, it->size) != sum_before) {
                fprintf(stderr, "real_jemalloc: realloc lost data\n");
                exit(1);
            }
            it->data = grown;
        }
        free(it->data);
        free(it);
        churn_step(&c);
    }
    churn_free(&c);
    pthread_mutex_lock(&totals_lock);
    consumed_sum += sum;
    consumed_items += items;
    consumed_bytes += bytes;
    pthread_mutex_unlock(&totals_lock);
    return NULL;
}

int main(void) {
    pthread_t th[PRODUCERS + CONSUMERS];
    for (int i = 0; i < CONSUMERS; i++)
        if (pthread_create(&th[PRODUCERS + i], NULL, consumer, (void *)(uintptr_t)i) != 0) {
            fprintf(stderr, "real_jemalloc: pthread_create failed\n");
            return 1;
        }
    for (int i = 0; i < PRODUCERS; i++)
        if (pthread_create(&th[i], NULL, producer, (void *)(uintptr_t)i) != 0) {
            fprintf(stderr, "real_jemalloc: pthread_create failed\n");
            return 1;
        }
    for (int i = 0; i < PRODUCERS + CONSUMERS; i++)
        pthread_join(th[i], NULL);

    uint64_t expected_bytes = 0;
    for (uint32_t p = 0; p < PRODUCERS; p++)
        for (uint32_t s = 0; s < ITEMS; s++)
            expected_bytes += size_of(p, s);
    printf("items=%" PRIu64 " bytes=%" PRIu64 " checksum=%016" PRIx64 "\n", consumed_items, consumed_bytes,
           consumed_sum);
    if (consumed_items != (uint64_t)PRODUCERS * ITEMS || consumed_bytes != expected_bytes ||
        consumed_sum != produced_sum) {
        fprintf(stderr, "real_jemalloc: expected items=%d bytes=%" PRIu64 " checksum=%016" PRIx64 "\n",
                PRODUCERS * ITEMS, expected_bytes, produced_sum);
        return 1;
    }
    printf("ok\n");
    return 0;
}
