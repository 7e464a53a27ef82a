#ifndef RK_CMD_SCREEN_GATEWAY_H
#define RK_CMD_SCREEN_GATEWAY_H
/* `rakazo screen share|revoke|shares|gateway`: the screen gateway's verbs, kept
 * apart from cmd/screen.c's so each can change alone. */
#include "cmd.h"

extern const struct rk_opt screen_share_opts[], screen_revoke_opts[], screen_shares_opts[], screen_gateway_opts[];
int cmd_screen_share(struct cmd_ctx *ctx);
int cmd_screen_revoke(struct cmd_ctx *ctx);
int cmd_screen_shares(struct cmd_ctx *ctx);
int cmd_screen_gateway(struct cmd_ctx *ctx);

#endif
