/* One thread locks and unlocks a mutex many times: never contended. */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void *work(void *arg) {
    long *n = arg;
    for (int i = 0; i < 100000; i++) {
        pthread_mutex_lock(&m);
        ++*n;
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

int main(void) {
    long n = 0;
    pthread_t t;
    pthread_create(&t, NULL, work, &n);
    pthread_join(t, NULL);
    printf("total %ld\n", n);
    return n == 100000 ? 0 : 1;
}
