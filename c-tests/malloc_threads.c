/* A malloc-heavy threaded program, meant to run with jemalloc preloaded next to the
 * library (jemalloc locks pthread mutexes itself, including from inside malloc called
 * at start-up and from the library's own code paths). Threads allocate blocks of
 * varied sizes, fill them, pass them to each other through a mutex-protected list and
 * free them on the other side (cross-thread frees), with exact counts and checksums.
 * usage: malloc_threads [--expect-jemalloc]  (then mallctl must be resolvable) */
#include "check.h"

#include <dlfcn.h>

#define THREADS 4
#define PER_THREAD 40000

struct block {
    struct block *next;
    size_t size;
    unsigned long sum;
    unsigned char data[];
};

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t list_cv = PTHREAD_COND_INITIALIZER;
static struct block *list;
static long listed;
static long freed_total;
static unsigned long checksum_in, checksum_out;
static int producers_done;

static void *worker(void *arg) {
    long id = (long)arg;
    unsigned seed = (unsigned)(id * 131 + 7);
    long freed = 0;
    unsigned long in = 0, out = 0;
    for (long i = 0; i < PER_THREAD; i++) {
        size_t size = 16 + (size_t)(rand_r(&seed) % (i % 97 == 0 ? 70000 : 600));
        struct block *b = malloc(sizeof *b + size);
        if (!b) fail("malloc(%zu) failed", size);
        b->size = size;
        unsigned long s = 0;
        for (size_t k = 0; k < size; k++) {
            b->data[k] = (unsigned char)(k * 31 + i);
            s += b->data[k];
        }
        b->sum = s;
        in += s;
        if (i % 3 == 0) {
            void *tmp = realloc(malloc(8), 4096); /* some realloc traffic */
            if (!tmp) fail("realloc failed");
            free(tmp);
        }
        OK(pthread_mutex_lock(&list_lock));
        b->next = list;
        list = b;
        listed++;
        struct block *take = NULL;
        if (listed > 64 || (i & 1)) {
            take = list;
            list = take->next;
            listed--;
        }
        OK(pthread_cond_signal(&list_cv));
        OK(pthread_mutex_unlock(&list_lock));
        if (take) {
            unsigned long t = 0;
            for (size_t k = 0; k < take->size; k++) t += take->data[k];
            if (t != take->sum) fail("block of %zu bytes corrupted", take->size);
            out += t;
            free(take);
            freed++;
        }
    }
    OK(pthread_mutex_lock(&list_lock));
    checksum_in += in;
    checksum_out += out;
    freed_total += freed;
    producers_done++;
    OK(pthread_cond_broadcast(&list_cv));
    OK(pthread_mutex_unlock(&list_lock));
    return NULL;
}

/* Frees what is left, waiting on the condvar until all producers are done. */
static void *drainer(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&list_lock));
    for (;;) {
        while (list) {
            struct block *b = list;
            list = b->next;
            listed--;
            unsigned long t = 0;
            for (size_t k = 0; k < b->size; k++) t += b->data[k];
            if (t != b->sum) fail("block corrupted (drainer)");
            checksum_out += t;
            freed_total++;
            free(b);
        }
        if (producers_done == THREADS) break;
        OK(pthread_cond_wait(&list_cv, &list_lock));
    }
    OK(pthread_mutex_unlock(&list_lock));
    return NULL;
}

int main(int argc, char **argv) {
    test_begin("malloc_threads", 30);
    if (argc > 1 && strcmp(argv[1], "--expect-jemalloc") == 0) {
        if (dlsym(RTLD_DEFAULT, "mallctl") == NULL) fail("jemalloc is not loaded (no mallctl symbol)");
    }
    pthread_t t[THREADS], d;
    d = start_thread(drainer, NULL);
    for (long i = 0; i < THREADS; i++) t[i] = start_thread(worker, (void *)i);
    for (int i = 0; i < THREADS; i++) join_thread(t[i]);
    join_thread(d);
    if (freed_total != (long)THREADS * PER_THREAD) fail("freed %ld blocks, expected %ld", freed_total, (long)THREADS * PER_THREAD);
    if (checksum_in != checksum_out) fail("checksum in %lu != out %lu", checksum_in, checksum_out);
    if (listed != 0 || list != NULL) fail("%ld blocks left over", listed);
    return 0;
}
