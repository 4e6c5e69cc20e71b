/* The connection guard (guard.h): a list of open connections under one
   mutex, scanned by a watchdog thread every SRV_GUARD_TICK_MS. The lists
   are short (at most libmicrohttpd's limit), so linear scans are fine. */
#include "server/guard.h"
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include "core/alloc.h"
#include "core/error.h"
#include "server/job.h"

#define SRV_GUARD_TICK_MS 100
#define SRV_GUARD_MIN_RESERVE 16 /* connections beyond max_connections libmicrohttpd accepts */

struct srv_conn {
    srv_conn *prev, *next;
    int fd;
    unsigned char addr[16];  /* the client's IPv4 (4 bytes) or IPv6 address */
    size_t addr_len;
    srv_conn_phase phase;
    double since_ms;         /* when the phase began */
    bool shed;               /* closed by us, waiting for libmicrohttpd's cleanup */
};

struct srv_guard {
    srv_guard_cfg cfg;
    srv_metrics *metrics;
    pthread_mutex_t mu;
    srv_conn *head;          /* every connection libmicrohttpd holds */
    int live;                /* of which not shed */
    pthread_t watchdog;
    atomic_bool stop;
};

unsigned srv_guard_mhd_limit(const srv_guard_cfg *c) {
    unsigned reserve = (unsigned)c->max_connections / 4;
    return (unsigned)c->max_connections + (reserve > SRV_GUARD_MIN_RESERVE ? reserve : SRV_GUARD_MIN_RESERVE);
}

static bool same_addr(const srv_conn *a, const srv_conn *b) {
    return a->addr_len == b->addr_len && !memcmp(a->addr, b->addr, a->addr_len);
}

static int count_addr(const srv_guard *g, const srv_conn *of) {
    int n = 0;
    for (const srv_conn *e = g->head; e; e = e->next) n += !e->shed && same_addr(e, of);
    return n;
}

static bool sheddable(const srv_conn *e) { return !e->shed && e->phase != SRV_CONN_BUSY; }

/* Called with g->mu held. The socket stays open (libmicrohttpd closes it
   after telling us, under this mutex), so fd cannot name another socket. */
static void shed(srv_guard *g, srv_conn *e, atomic_ulong *counter) {
    e->shed = true;
    g->live--;
    if (e->fd >= 0) shutdown(e->fd, SHUT_RDWR);
    atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

/* The oldest waiting connection, other than `not`: of `of`'s address if
   given, else of the address with the most connections. */
static srv_conn *victim(srv_guard *g, const srv_conn *not, const srv_conn *of) {
    srv_conn *best = NULL;
    int best_n = 0;
    for (srv_conn *e = g->head; e; e = e->next) {
        if (e == not || !sheddable(e) || (of && !same_addr(e, of))) continue;
        int n = of ? 0 : count_addr(g, e);
        if (!best || n > best_n || (n == best_n && e->since_ms < best->since_ms)) best = e, best_n = n;
    }
    return best;
}

static void admit(srv_guard *g, srv_conn *e) {
    if (count_addr(g, e) > g->cfg.max_per_ip) {
        srv_conn *v = victim(g, e, e);
        shed(g, v ? v : e, &g->metrics->shed_per_ip);
    }
    if (!e->shed && g->live > g->cfg.max_connections) {
        srv_conn *v = victim(g, e, NULL);
        shed(g, v ? v : e, &g->metrics->shed_full);
    }
}

static void opened(srv_guard *g, struct MHD_Connection *c, void **ctx) {
    srv_conn *e = mllm_calloc(1, sizeof *e);
    if (!e) return; /* unguarded, but libmicrohttpd's own limit still holds */
    const union MHD_ConnectionInfo *fi = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *ai = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    e->fd = fi ? fi->connect_fd : -1;
    const struct sockaddr *sa = ai ? ai->client_addr : NULL;
    if (sa && sa->sa_family == AF_INET) {
        memcpy(e->addr, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        e->addr_len = 4;
    } else if (sa && sa->sa_family == AF_INET6) {
        memcpy(e->addr, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
        e->addr_len = 16;
    }
    e->phase = SRV_CONN_HEAD;
    e->since_ms = mllm_clock_mono_ms();
    pthread_mutex_lock(&g->mu);
    e->next = g->head;
    if (g->head) g->head->prev = e;
    g->head = e;
    g->live++;
    admit(g, e);
    pthread_mutex_unlock(&g->mu);
    *ctx = e;
}

static void closed(srv_guard *g, void **ctx) {
    srv_conn *e = *ctx;
    if (!e) return;
    pthread_mutex_lock(&g->mu);
    if (e->prev) e->prev->next = e->next;
    else g->head = e->next;
    if (e->next) e->next->prev = e->prev;
    if (!e->shed) g->live--;
    pthread_mutex_unlock(&g->mu);
    mllm_free(e);
    *ctx = NULL;
}

void srv_guard_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                      enum MHD_ConnectionNotificationCode code) {
    if (code == MHD_CONNECTION_NOTIFY_STARTED) opened(cls, c, socket_context);
    else if (code == MHD_CONNECTION_NOTIFY_CLOSED) closed(cls, socket_context);
}

srv_conn *srv_guard_conn(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

void srv_guard_phase(srv_guard *g, srv_conn *sc, srv_conn_phase phase) {
    if (!g || !sc) return;
    pthread_mutex_lock(&g->mu);
    if (sc->phase != phase) {
        sc->phase = phase;
        sc->since_ms = mllm_clock_mono_ms();
    }
    pthread_mutex_unlock(&g->mu);
}

static void *watchdog(void *arg) {
    srv_guard *g = arg;
    struct timespec tick = {0, SRV_GUARD_TICK_MS * 1000 * 1000};
    while (!atomic_load(&g->stop)) {
        nanosleep(&tick, NULL);
        double now = mllm_clock_mono_ms();
        pthread_mutex_lock(&g->mu);
        for (srv_conn *e = g->head; e; e = e->next) {
            if (!sheddable(e)) continue;
            int limit = e->phase == SRV_CONN_HEAD ? g->cfg.header_ms : g->cfg.body_ms;
            if (now - e->since_ms > (double)limit) shed(g, e, &g->metrics->shed_deadline);
        }
        pthread_mutex_unlock(&g->mu);
    }
    return NULL;
}

mllm_status srv_guard_new(const srv_guard_cfg *c, srv_metrics *m, srv_guard **out) {
    srv_guard *g = mllm_calloc(1, sizeof *g);
    if (!g) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    g->cfg = *c;
    g->metrics = m;
    atomic_init(&g->stop, false);
    pthread_mutex_init(&g->mu, NULL);
    if (pthread_create(&g->watchdog, NULL, watchdog, g)) {
        pthread_mutex_destroy(&g->mu);
        mllm_free(g);
        return mllm_err(MLLM_ERR_NOMEM, "server: cannot start the connection watchdog thread");
    }
    *out = g;
    return MLLM_OK;
}

void srv_guard_free(srv_guard *g) {
    if (!g) return;
    atomic_store(&g->stop, true);
    pthread_join(g->watchdog, NULL);
    /* The daemon has stopped: it reported every connection closed. */
    pthread_mutex_destroy(&g->mu);
    mllm_free(g);
}
