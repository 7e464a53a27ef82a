#ifndef RK_BENCH_EMULATOR_H
#define RK_BENCH_EMULATOR_H
/* For the benchmarks: starts tests/emulators/KIND/server.js (node, with
 * the computer image $RAKAZO_IMAGE or this build's) on a free loopback port
 * written to portfile; its pid, or -1 when it did not start within 10 s.
 * The emulator removes its containers when it gets SIGTERM. */

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/time.h"

static pid_t rk_bench_emulator(const char *kind, const char *portfile, const char *key)
{
	const char *img = getenv("RAKAZO_IMAGE");
	if (!img || !*img)
		img = RK_IMAGE_TAG;
	char *script = rk_xasprintf("tests/emulators/%s/server.js", kind);
	unlink(portfile);
	pid_t pid = fork();
	if (pid == 0) {
		int dn = open("/dev/null", 2);
		dup2(dn, 1);
		dup2(dn, 2);
		execlp("node", "node", script, "--image", img, "--port-file", portfile, "--key", key, (char *)NULL);
		_exit(127);
	}
	free(script);
	for (int i = 0; i < 200; i++) {
		if (rk_fs_exists(portfile))
			return pid;
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid)
			return -1;
		rk_sleep_ms(50);
	}
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	return -1;
}

#endif
