#ifndef RK_PORT_H
#define RK_PORT_H
/* Forwarded ports (PUT /v1/computers/:id/ports/:port): a loopback listener
 * in the serving process carried into the computer through the provider
 * (engine/gateway/port.c says how). */

#include "engine/state/db.h"
#include "engine/state/engine.h"

/* A loopback listener in this process forwarding to port inside c (through
 * the provider's exec and bash's /dev/tcp) for the token token_id (acting
 * as bot_id, or NULL for a member). A connection is carried only after it
 * sent *secret (malloc'd, hex) and a newline. The same token forwarding the
 * same port again gets the same *local_port and a new *secret, which
 * replaces the old one for new connections. */
int rk_port_forward(struct rk_engine *eng, const struct rk_computer *c, int port, const char *token_id,
		    const char *bot_id, int *local_port, char **secret, struct rk_error *err);
/* Ends the forwards (listener closed, connections cut) whose token was
 * revoked, whose bot lost its right to the computer, or whose computer is
 * gone or not running. The server calls it a few times a second (it looks
 * at the database at most every 250 ms). */
void rk_port_sweep(struct rk_engine *eng);

#endif
