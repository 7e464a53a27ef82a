#ifndef RK_GATEWAY_UPSTREAM_H
#define RK_GATEWAY_UPSTREAM_H
/* A desktop the screen gateway reaches through a WebSocket rather than a
 * local VNC socket: the websockify endpoint behind a provider's own
 * authenticated noVNC page (the box provider's desktop). The page's address
 * carries the desktop's secret (Box: its _token query parameter); it lives
 * only in the memory of the capability's forwarder, and what may be shown
 * (messages, logs, the capability row) is its public form, without the
 * query. The forwarder's relay (gateway.c) opens the upstream per browser
 * connection and treats its fd as it treats a VNC socket: the same
 * handshake, the same view-only filter. */

#include "engine/state/engine.h"

/* How noVNC's page finds its WebSocket, the one place that knows it: ws
 * for an http page and wss for https, the page's host and port, the path
 * RK_NOVNC_WEBSOCKIFY_PATH unless the page's query names one (?path=, as
 * noVNC reads it), and the page's whole query string, which is how the
 * page's _token reaches the endpoint (as our reference's proxy keeps it). */
#define RK_NOVNC_WEBSOCKIFY_PATH "websockify"

/* The websockify address of the noVNC page at page_url (malloc'd; a secret
 * like the page's). RK_EINVALID, naming no secret, when it is not an
 * http(s) URL. */
char *rk_upstream_from_novnc(const char *page_url, struct rk_error *err);

/* ws_url without its query and fragment (malloc'd): what may be shown. */
char *rk_upstream_public(const char *ws_url);

/* The websockify address of display on c, for a provider that serves its
 * own noVNC page (ops->display_novnc), starting the display as needed:
 * *ws_url (malloc'd, a secret; the caller zeroes it before freeing).
 * RK_EUNSUPPORTED when the provider has no such page. */
int rk_upstream_of(struct rk_engine *eng, struct rk_computer *c, int display, char **ws_url, struct rk_error *err);

struct rk_upstream;

/* Connects to ws_url (RFB in binary WebSocket messages) within timeout_ms
 * and bridges it to a stream socket, rk_upstream_fd: what is read there is
 * the upstream's message payloads, what is written goes upstream as binary
 * messages; its EOF is the upstream's close. RK_EUNAVAILABLE when the
 * endpoint cannot be reached, refuses the connection or the upgrade (an
 * HTTP 401 for a wrong or missing secret), or does not answer in time; the
 * message names the public address only. The bridge runs in a thread of
 * its own until either side closes. */
int rk_upstream_open(const char *ws_url, int timeout_ms, struct rk_upstream **out, struct rk_error *err);
int rk_upstream_fd(const struct rk_upstream *u);
/* Closes the caller's end and the connection, and ends the bridge. NULL is
 * a no-op. */
void rk_upstream_free(struct rk_upstream *u);

/* Opens ws_url and reads the RFB ProtocolVersion a VNC server sends first:
 * 0 when it came within timeout_ms, else RK_EUNAVAILABLE saying why. What
 * share checks before it hands out a token for such a desktop. */
int rk_upstream_probe(const char *ws_url, int timeout_ms, struct rk_error *err);

#endif
