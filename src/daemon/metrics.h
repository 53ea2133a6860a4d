/*
 * metrics.h - the daemon's HTTP endpoint for monitoring: /metrics in the
 * Prometheus text exposition format 0.0.4 and /healthz.
 *
 * Configured by [metrics] listen: a comma-separated list of addresses, each
 *   127.0.0.1:8497  [::1]:8497  localhost:8497   TCP (literal IPs, or
 *                                                localhost = 127.0.0.1)
 *   unix:/run/tickd/metrics.sock  /abs/path.sock a Unix stream socket
 * and off while the list is empty (the built-in default).
 *
 * One thread (DESIGN.md "One thread owns the world"): libevent's evhttp on
 * the daemon's event base, served while the frame loop waits, exactly like
 * the control socket.  A scrape reads the same figures as engine.stats at a
 * frame boundary, so no lock is needed and nothing here blocks: sockets are
 * non-blocking, requests are bounded (TKD_METRICS_MAX_HEADERS bytes of
 * headers, TKD_METRICS_MAX_BODY of body, TKD_METRICS_TIMEOUT_S of
 * inactivity) and connections are bounded by [metrics] max_connections:
 * at the limit the listeners stop accepting (the kernel's backlog holds
 * newcomers) until one closes.
 *
 *   GET /metrics  200, Content-Type text/plain; version=0.0.4; charset=utf-8
 *   GET /healthz  200 "ok\n" while a frame started within the stall window
 *                 (healthz_stall_s, at least two frame periods) and TPS over
 *                 the last second is at least healthz_min_tps (negative:
 *                 half the target tick rate; 0, or an unlimited tick rate
 *                 with a negative floor: no floor); else 503 with the
 *                 reason as the body
 *   other paths   404; other methods than GET: 405 with "Allow: GET"
 *
 * What it deliberately does not do: TLS, authentication, compression, or
 * HTTP/2; expose it beyond localhost through a proxy that does.
 */
#ifndef TICKD_DAEMON_METRICS_H
#define TICKD_DAEMON_METRICS_H

#include <stddef.h>

#include "tickd/engine.h"

struct tkd;
typedef struct tkd_metrics tkd_metrics;

#define TKD_METRICS_MAX_HEADERS 8192 /* bytes of request line + headers */
#define TKD_METRICS_MAX_BODY 1024    /* bytes of request body           */
#define TKD_METRICS_TIMEOUT_S 5      /* s of inactivity before a close  */

/* Content type of /metrics. */
#define TKD_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/*
 * Check one item of [metrics] listen without binding anything (config
 * loading calls it).  Returns 0, or -1 with a sentence in `reason`.
 */
int tkd_metrics_check_listen(const char *addr, char *reason, size_t rlen);

/*
 * Start listening on every address of d->cfg.metrics_listen, on d->base.
 * With an empty list *out is NULL and 0 is returned.  On failure nothing is
 * left open, `err` names the key and address, and -1 is returned.
 */
int tkd_metrics_new(struct tkd *d, tkd_metrics **out, char *err, size_t errlen);

/* Record a completed frame in the frame-time histogram.  NULL: no-op. */
void tkd_metrics_frame(tkd_metrics *m, const tk_frame_info *f);

/* Close every connection and listener (unlinking Unix socket files this
 * created), free everything.  NULL is a no-op. */
void tkd_metrics_free(tkd_metrics *m);

#endif
