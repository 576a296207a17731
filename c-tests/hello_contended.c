/* A tiny contended program with deterministic stdout, for the configuration tests:
 * four threads add to a counter under one mutex, then it prints the total. */
#include "check.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long counter;

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        OK(pthread_mutex_lock(&m));
        long v = counter;
        if ((i & 255) == 0) sched_yield();
        counter = v + 1;
        OK(pthread_mutex_unlock(&m));
    }
    return NULL;
}

int main(void) {
    test_begin("hello_contended", 30);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) t[i] = start_thread(worker, NULL);
    for (int i = 0; i < 4; i++) join_thread(t[i]);
    if (counter != 80000) fail("counter %ld, expected 80000", counter);
    printf("hello: 4 threads, total %ld\n", counter);
    return 0;
}
