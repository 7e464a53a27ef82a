#ifndef RK_HOST_H
#define RK_HOST_H
/* Which processes this one can see. Workers on several hosts (or in
 * several containers) share one state: a pid recorded there means
 * something only to a process in the same pid namespace of the same boot,
 * so a pid comes with the host key of whoever wrote it, and a pid from
 * elsewhere is judged by its heartbeat alone. */

#include <stdint.h>

/* This process's host key: the kernel's boot id and the pid namespace
 * ("<boot-id>/<ns-inode>"), or $RAKAZO_HOST_KEY when set (tests that play
 * two hosts on one). Static storage. */
const char *rk_host_key(void);

/* Whether pid, written by a process with host_key, is alive: 1 alive, 0
 * gone, -1 unknown (another host's, or no pid). A NULL host_key is taken
 * as this host's (rows from before host keys). */
int rk_host_pid_alive(const char *host_key, int64_t pid);

#endif
