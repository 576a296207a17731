// build-flags: -lsqlite3
// requires-header: sqlite3.h
//
// Real-program test (tests/real_programs.rs): SQLite in serialized mode, used by
// several threads at once. SQLite takes pthread mutexes for every connection
// (recursive, through sqlite3_mutex), for its static mutexes (memory, PRNG, VFS) and for
// the unix VFS's inode list, so under the preload all of them are the library's.
//
//   1. One shared in-memory connection (SQLITE_OPEN_FULLMUTEX) used by THREADS threads:
//      each inserts its own rows and, every so often, reads its own rows back while the
//      others keep writing; then "transfers" between accounts, each a
//      BEGIN/UPDATE/UPDATE/COMMIT group made atomic with sqlite3_db_mutex (the
//      connection's recursive mutex, entered again by every sqlite3_step inside).
//   2. One file database in WAL mode, one connection per thread with a busy timeout:
//      writers in BEGIN IMMEDIATE transactions, readers counting while they write.
//
// Keys and values depend only on (thread, index), so row counts, sums and checksums
// are exact and the output is the same in every run. Usage: real_sqlite DIR
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define SHARED_ROWS 5000   /* rows per thread on the shared connection */
#define READ_EVERY 250     /* a read-back every this many inserts */
#define ACCOUNTS 16
#define TRANSFERS 1500     /* per thread */
#define FILE_TXNS 100      /* transactions per thread on the file database */
#define ROWS_PER_TXN 25

static sqlite3 *shared;
static const char *dir;

static void die(const char *what, sqlite3 *db, int rc) {
    fprintf(stderr, "real_sqlite: %s failed: rc=%d (%s)\n", what, rc, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    exit(1);
}

static void exec(sqlite3 *db, const char *sql) {
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) {
        fprintf(stderr, "real_sqlite: '%s' failed: rc=%d (%s)\n", sql, rc, err ? err : "?");
        exit(1);
    }
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        die(sql, db, rc);
    return st;
}

static void step_done(sqlite3 *db, sqlite3_stmt *st, const char *what) {
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE)
        die(what, db, rc);
    sqlite3_reset(st);
}

/* The value stored for (thread, index): deterministic, spread over 0..999999. */
static int64_t value_of(int t, int i) {
    uint64_t x = (uint64_t)(t + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)(i + 1) * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    return (int64_t)(x % 1000000);
}

static int64_t key_of(int t, int i) { return (int64_t)t * 1000000 + i; }

/* ---- part 1: one shared connection ---- */

static void *shared_worker(void *arg) {
    int t = (int)(intptr_t)arg;
    sqlite3_stmt *ins = prepare(shared, "INSERT INTO items(k, t, v) VALUES (?1, ?2, ?3)");
    sqlite3_stmt *sel = prepare(shared, "SELECT count(*), coalesce(sum(v), 0) FROM items WHERE t = ?1");
    int64_t sum = 0;
    for (int i = 0; i < SHARED_ROWS; i++) {
        int64_t v = value_of(t, i);
        sqlite3_bind_int64(ins, 1, key_of(t, i));
        sqlite3_bind_int(ins, 2, t);
        sqlite3_bind_int64(ins, 3, v);
        step_done(shared, ins, "shared insert");
        sum += v;
        if ((i + 1) % READ_EVERY == 0) {
            sqlite3_bind_int(sel, 1, t);
            int rc = sqlite3_step(sel);
            if (rc != SQLITE_ROW)
                die("shared read-back", shared, rc);
            int64_t n = sqlite3_column_int64(sel, 0), s = sqlite3_column_int64(sel, 1);
            sqlite3_reset(sel);
            if (n != i + 1 || s != sum) {
                fprintf(stderr, "real_sqlite: thread %d read back %" PRId64 " rows sum %" PRId64
                        ", expected %d rows sum %" PRId64 "\n", t, n, s, i + 1, sum);
                exit(1);
            }
        }
    }
    sqlite3_finalize(ins);
    sqlite3_finalize(sel);

    /* Transfers: each one atomic under the connection's own (recursive) mutex. */
    sqlite3_stmt *debit = prepare(shared, "UPDATE accounts SET balance = balance - ?2 WHERE id = ?1");
    sqlite3_stmt *credit = prepare(shared, "UPDATE accounts SET balance = balance + ?2 WHERE id = ?1");
    sqlite3_stmt *begin = prepare(shared, "BEGIN");
    sqlite3_stmt *commit = prepare(shared, "COMMIT");
    sqlite3_mutex *m = sqlite3_db_mutex(shared);
    for (int i = 0; i < TRANSFERS; i++) {
        int from = (int)(value_of(t, i + 7) % ACCOUNTS), to = (int)(value_of(t, i + 11) % ACCOUNTS);
        int64_t amount = value_of(t, i) % 100;
        sqlite3_mutex_enter(m);
        step_done(shared, begin, "BEGIN");
        sqlite3_bind_int(debit, 1, from);
        sqlite3_bind_int64(debit, 2, amount);
        step_done(shared, debit, "debit");
        sqlite3_bind_int(credit, 1, to);
        sqlite3_bind_int64(credit, 2, amount);
        step_done(shared, credit, "credit");
        step_done(shared, commit, "COMMIT");
        sqlite3_mutex_leave(m);
    }
    sqlite3_finalize(debit);
    sqlite3_finalize(credit);
    sqlite3_finalize(begin);
    sqlite3_finalize(commit);
    return NULL;
}

/* ---- part 2: one connection per thread to a file database ---- */

static sqlite3 *open_file_db(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s/real_sqlite.db", dir);
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL);
    if (rc != SQLITE_OK)
        die("open file database", db, rc);
    sqlite3_busy_timeout(db, 30000);
    return db;
}

static void *file_worker(void *arg) {
    int t = (int)(intptr_t)arg;
    sqlite3 *db = open_file_db();
    exec(db, "PRAGMA synchronous = OFF");
    sqlite3_stmt *ins = prepare(db, "INSERT INTO rows(k, t, v) VALUES (?1, ?2, ?3)");
    sqlite3_stmt *cnt = prepare(db, "SELECT count(*) FROM rows WHERE t = ?1");
    for (int x = 0; x < FILE_TXNS; x++) {
        exec(db, "BEGIN IMMEDIATE");
        for (int r = 0; r < ROWS_PER_TXN; r++) {
            int i = x * ROWS_PER_TXN + r;
            sqlite3_bind_int64(ins, 1, key_of(t, i));
            sqlite3_bind_int(ins, 2, t);
            sqlite3_bind_int64(ins, 3, value_of(t, i));
            step_done(db, ins, "file insert");
        }
        exec(db, "COMMIT");
        /* A reader outside any write transaction: sees exactly its own committed rows. */
        sqlite3_bind_int(cnt, 1, t);
        int rc = sqlite3_step(cnt);
        if (rc != SQLITE_ROW)
            die("file count", db, rc);
        int64_t n = sqlite3_column_int64(cnt, 0);
        sqlite3_reset(cnt);
        if (n != (int64_t)(x + 1) * ROWS_PER_TXN) {
            fprintf(stderr, "real_sqlite: file db thread %d counted %" PRId64 " rows, expected %d\n", t, n,
                    (x + 1) * ROWS_PER_TXN);
            exit(1);
        }
    }
    sqlite3_finalize(ins);
    sqlite3_finalize(cnt);
    int rc = sqlite3_close(db);
    if (rc != SQLITE_OK)
        die("close file database", db, rc);
    return NULL;
}

static void run_threads(void *(*fn)(void *)) {
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        if (pthread_create(&th[t], NULL, fn, (void *)(intptr_t)t) != 0) {
            fprintf(stderr, "real_sqlite: pthread_create failed\n");
            exit(1);
        }
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
}

/* count, sum(v), and a checksum that depends on which key holds which value. */
static void totals(sqlite3 *db, const char *table, int64_t out[3]) {
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*), sum(v), sum((k %% 1000003) * v %% 1000000007) FROM %s", table);
    sqlite3_stmt *st = prepare(db, sql);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW)
        die(sql, db, rc);
    for (int i = 0; i < 3; i++)
        out[i] = sqlite3_column_int64(st, i);
    sqlite3_finalize(st);
}

static void expected_totals(int rows_per_thread, int64_t out[3]) {
    out[0] = out[1] = out[2] = 0;
    for (int t = 0; t < THREADS; t++)
        for (int i = 0; i < rows_per_thread; i++) {
            int64_t k = key_of(t, i), v = value_of(t, i);
            out[0] += 1;
            out[1] += v;
            out[2] += (k % 1000003) * v % 1000000007;
        }
}

static void report(const char *what, const int64_t got[3], const int64_t want[3]) {
    printf("%s: rows=%" PRId64 " sum=%" PRId64 " checksum=%" PRId64 "\n", what, got[0], got[1], got[2]);
    if (memcmp(got, want, 3 * sizeof got[0]) != 0) {
        fprintf(stderr, "real_sqlite: %s: expected rows=%" PRId64 " sum=%" PRId64 " checksum=%" PRId64 "\n", what,
                want[0], want[1], want[2]);
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: real_sqlite DIR\n");
        return 2;
    }
    dir = argv[1];
    int rc = sqlite3_config(SQLITE_CONFIG_SERIALIZED);
    if (rc != SQLITE_OK)
        die("sqlite3_config(SQLITE_CONFIG_SERIALIZED)", NULL, rc);
    rc = sqlite3_initialize();
    if (rc != SQLITE_OK)
        die("sqlite3_initialize", NULL, rc);
    if (sqlite3_threadsafe() == 0) {
        fprintf(stderr, "real_sqlite: this SQLite is built without mutexes\n");
        return 1;
    }

    /* Part 1. */
    rc = sqlite3_open_v2(":memory:", &shared, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                         NULL);
    if (rc != SQLITE_OK)
        die("open shared connection", shared, rc);
    exec(shared, "CREATE TABLE items(k INTEGER PRIMARY KEY, t INTEGER NOT NULL, v INTEGER NOT NULL)");
    exec(shared, "CREATE INDEX items_t ON items(t)");
    exec(shared, "CREATE TABLE accounts(id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)");
    for (int a = 0; a < ACCOUNTS; a++) {
        char sql[128];
        snprintf(sql, sizeof sql, "INSERT INTO accounts VALUES (%d, 100000)", a);
        exec(shared, sql);
    }
    run_threads(shared_worker);
    int64_t got[3], want[3];
    totals(shared, "items", got);
    expected_totals(SHARED_ROWS, want);
    report("shared connection", got, want);

    /* Every transfer's effect is known, so each final balance is too. */
    int64_t balance[ACCOUNTS];
    for (int a = 0; a < ACCOUNTS; a++)
        balance[a] = 100000;
    for (int t = 0; t < THREADS; t++)
        for (int i = 0; i < TRANSFERS; i++) {
            int from = (int)(value_of(t, i + 7) % ACCOUNTS), to = (int)(value_of(t, i + 11) % ACCOUNTS);
            int64_t amount = value_of(t, i) % 100;
            balance[from] -= amount;
            balance[to] += amount;
        }
    sqlite3_stmt *st = prepare(shared, "SELECT id, balance FROM accounts ORDER BY id");
    int64_t total = 0, weighted = 0;
    int n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int id = sqlite3_column_int(st, 0);
        int64_t b = sqlite3_column_int64(st, 1);
        if (id != n || b != balance[n]) {
            fprintf(stderr, "real_sqlite: account %d has %" PRId64 ", expected %" PRId64 "\n", id, b,
                    n < ACCOUNTS ? balance[n] : -1);
            return 1;
        }
        total += b;
        weighted += (int64_t)(id + 1) * b;
        n++;
    }
    if (rc != SQLITE_DONE || n != ACCOUNTS)
        die("read accounts", shared, rc);
    sqlite3_finalize(st);
    printf("transfers: accounts=%d total=%" PRId64 " weighted=%" PRId64 "\n", n, total, weighted);
    rc = sqlite3_close(shared);
    if (rc != SQLITE_OK)
        die("close shared connection", shared, rc);

    /* Part 2. */
    sqlite3 *db = open_file_db();
    exec(db, "PRAGMA journal_mode = WAL");
    exec(db, "DROP TABLE IF EXISTS rows");
    exec(db, "CREATE TABLE rows(k INTEGER PRIMARY KEY, t INTEGER NOT NULL, v INTEGER NOT NULL)");
    exec(db, "CREATE INDEX rows_t ON rows(t)");
    run_threads(file_worker);
    totals(db, "rows", got);
    expected_totals(FILE_TXNS * ROWS_PER_TXN, want);
    report("file database", got, want);
    rc = sqlite3_close(db);
    if (rc != SQLITE_OK)
        die("close file database", db, rc);
    rc = sqlite3_shutdown();
    if (rc != SQLITE_OK)
        die("sqlite3_shutdown", NULL, rc);
    printf("ok\n");
    return 0;
}
