#include "engine/util/host.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char host_key[160];
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

static void host_key_init(void)
{
	const char *env = getenv("RAKAZO_HOST_KEY");
	if (env && *env) {
		snprintf(host_key, sizeof(host_key), "%s", env);
		return;
	}
	char boot[64] = "no-boot-id";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (f) {
		if (fgets(boot, sizeof(boot), f))
			boot[strcspn(boot, "\n")] = 0;
		fclose(f);
	}
	struct stat ns;
	unsigned long long ino = stat("/proc/self/ns/pid", &ns) == 0 ? (unsigned long long)ns.st_ino : 0;
	snprintf(host_key, sizeof(host_key), "%s/%llu", boot, ino);
}

const char *rk_host_key(void)
{
	pthread_once(&host_once, host_key_init);
	return host_key;
}

int rk_host_pid_alive(const char *key, int64_t pid)
{
	if (pid <= 0)
		return -1;
	if (key && strcmp(key, rk_host_key()) != 0)
		return -1;
	if (kill((pid_t)pid, 0) != 0 && errno != EPERM)
		return 0;
	/* a killed process nobody reaped yet (a detached worker under an init
	 * that does not reap) still answers kill(0): its state says Z */
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%lld/stat", (long long)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *paren = strrchr(buf, ')');
	return !(paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'));
}
