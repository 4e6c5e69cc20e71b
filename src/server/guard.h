/* The connection guard: keeps slow clients from holding the server.
 *
 * libmicrohttpd's timeout is an idle one, so a client that sends one byte
 * every few seconds ("slowloris") keeps a connection, and its thread,
 * forever; enough of them fill --max-connections and every new client is
 * refused. The guard follows each connection through three phases:
 *
 *   HEAD  waiting for a request's head: from connect, or from the end of
 *         the previous response (keep-alive); deadline header_ms
 *   BODY  head complete, body being read; deadline body_ms
 *   BUSY  being answered (queued, generating, streaming): no deadline,
 *         never shed
 *
 * A connection past its deadline is closed (shutdown(2) of its socket: its
 * libmicrohttpd thread then sees EOF and cleans up). A new connection over
 * max_per_ip, or over max_connections, makes room by closing the oldest
 * HEAD/BODY connection (of its own address for the per-address cap; of the
 * address holding the most connections for the overall one): the slowest
 * client goes, the new one stays. Only when every connection is BUSY is
 * the new one closed instead. libmicrohttpd's own limit is set above
 * max_connections (srv_guard_mhd_limit), so a new client always reaches
 * the guard. */
#ifndef MLLM_SERVER_GUARD_H
#define MLLM_SERVER_GUARD_H
#include <microhttpd.h>
#include <mllm/mllm.h>
#include "server/metrics.h"

typedef enum { SRV_CONN_HEAD, SRV_CONN_BODY, SRV_CONN_BUSY } srv_conn_phase;

typedef struct {
    int max_connections;  /* open connections; beyond: the slowest waiting one is shed */
    int max_per_ip;       /* open connections of one client address */
    int header_ms;        /* HEAD deadline */
    int body_ms;          /* BODY deadline */
} srv_guard_cfg;

typedef struct srv_guard srv_guard;
typedef struct srv_conn srv_conn;

/* Starts the watchdog thread. Errors: MLLM_ERR_NOMEM. */
mllm_status srv_guard_new(const srv_guard_cfg *c, srv_metrics *m, srv_guard **out);
/* Stops the watchdog; call after the daemon has stopped. NULL is a no-op. */
void srv_guard_free(srv_guard *g);
/* The connection limit to give libmicrohttpd: max_connections plus room
   for the connections being shed and the new ones replacing them. */
unsigned srv_guard_mhd_limit(const srv_guard_cfg *c);

/* MHD_OPTION_NOTIFY_CONNECTION: *socket_context holds the srv_conn. */
void srv_guard_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                      enum MHD_ConnectionNotificationCode code);
/* The connection's guard record (NULL if it has none). */
srv_conn *srv_guard_conn(struct MHD_Connection *c);
void srv_guard_phase(srv_guard *g, srv_conn *sc, srv_conn_phase phase);

#endif
