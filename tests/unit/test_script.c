/* providers/script (issue 21): the image's scripts run by name, or by their
 * text built into the binary on a machine without the image. */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "providers/script.h"

#define CLOSE_SCRIPT "image/rootfs/usr/local/bin/rakazo-browser-close"

/* Runs cmd with /bin/sh in dir, PATH without the image: its stdout, malloc'd. */
static char *run_in(const char *dir, const char *cmd, int *status)
{
	char *full = rk_xasprintf("cd '%s' && PATH=/usr/bin:/bin; export PATH\n%s", dir, cmd);
	FILE *f = popen(full, "r");
	free(full);
	struct rk_buf b;
	rk_buf_init(&b);
	char chunk[256];
	size_t n;
	while (f && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		rk_buf_add(&b, chunk, n);
	*status = f ? pclose(f) : -1;
	return rk_buf_detach(&b, NULL);
}

TEST(by_name_or_by_text)
{
	char *cmd = rk_script_command("rakazo-browser-close", "workspace");
	CHECK(strstr(cmd, "then exec rakazo-browser-close workspace; fi\nset -- workspace\n") != NULL);
	/* the text is the image's file, byte for byte */
	struct rk_buf text;
	rk_buf_init(&text);
	struct rk_error e;
	if (rk_fs_read_all(CLOSE_SCRIPT, 1 << 20, &text, &e) == 0) {
		const char *body = strstr(cmd, "set -- workspace\n") + strlen("set -- workspace\n");
		CHECK_EQ_STR(body, text.data);
		rk_buf_release(&text);
	} else {
		rk_buf_release(&text);
		check_skip("run from the source tree");
	}
	free(cmd);
	/* a name it has no text for runs by name */
	cmd = rk_script_command("rakazo-nosuch", "a b");
	CHECK_EQ_STR(cmd, "rakazo-nosuch a b");
	free(cmd);
}

TEST(browser_close_text_runs_without_the_image)
{
	char tmpl[] = "/tmp/rk-script-XXXXXX";
	char *dir = mkdtemp(tmpl);
	CHECK(dir != NULL);
	if (!dir)
		return;
	char *cmd = rk_script_command("rakazo-browser-close", "workspace");
	int status;
	/* no browser of this workspace: nothing to close, nothing said */
	char *out = run_in(dir, cmd, &status);
	CHECK_EQ_INT(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
	CHECK_EQ_STR(out, "");
	free(out);
	/* a process on the workspace's profile gets a TERM and is counted */
	char *arg = rk_xasprintf("--user-data-dir=%s/.browser-profiles/default", dir);
	pid_t p = fork();
	if (p == 0) {
		execl("/bin/sh", "sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.05; done", arg, (char *)NULL);
		_exit(127);
	}
	usleep(200 * 1000);
	out = run_in(dir, cmd, &status);
	CHECK_EQ_INT(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
	CHECK_EQ_STR(out, "closed 1\n");
	int st = 0;
	CHECK_EQ_INT(waitpid(p, &st, 0), p);
	free(out);
	free(arg);
	free(cmd);
	char *rm = rk_xasprintf("rm -rf '%s'", dir);
	CHECK_EQ_INT(system(rm), 0);
	free(rm);
}

int main(void)
{
	RUN(by_name_or_by_text);
	RUN(browser_close_text_runs_without_the_image);
	return check_summary("script");
}
