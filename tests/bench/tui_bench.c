/* The dashboard's first draw (issue 9):
 *   bench: tui_first_draw ours=V ms
 * A DATA_DIR in /tmp gets 10 computers, 1,000 runs and 10,000 lines of
 * terminal history on the first computer; then `rakazo tui` starts on a
 * 120x40 pseudo-terminal and the time is taken from the fork to the moment
 * the terminal has received the frame with that data in it (the history
 * pane's newest line, whose text only a draw after the load carries).
 * RAKAZO_TUI_EXIT_AFTER_DRAW makes it quit after that draw. The median of
 * 7 starts; target under 100 ms. RAKAZO_BIN names the binary (make bench
 * sets it). RAKAZO_BENCH=NAME runs one figure. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/agent/hooks.h"
#include "engine/state/db_runs.h"
#include "engine/state/engine.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/time.h"

#define RUNS 1000
#define HISTORY_LINES 10000
#define STARTS 7
#define MARK "history-line-10000-end"

static int want(const char *name)
{
	const char *w = getenv("RAKAZO_BENCH");
	return !w || !*w || !strcmp(w, name);
}

static int prepare(struct rk_engine *eng)
{
	struct rk_error err = {0};
	char *first = NULL;
	if (rk_db_begin(eng->db, &err))
		goto fail;
	for (int i = 0; i < 10; i++) {
		char *id = rk_id_new("cmp"), *name = rk_xasprintf("bench-%02d", i);
		struct rk_computer c = {.id = id, .name = name, .kind = "fake", .home_key = id, .state = "stopped",
					.owner = eng->owner, .desktop = 1, .pause_after = -1,
					.created_at = rk_now_ms() + i, .updated_at = rk_now_ms()};
		int r = rk_db_computer_insert(eng->db, &c, &err);
		if (i == 0)
			first = rk_xstrdup(id);
		free(id);
		free(name);
		if (r)
			goto fail;
	}
	for (int i = 0; i < RUNS; i++) {
		char *id = rk_id_new("run"), *task = rk_xasprintf("bench task %d: make a notes file", i);
		static const char *const states[] = {"completed", "failed", "running", "queued"};
		struct rk_run_row r = {.id = id, .computer_id = first, .task = task, .model = "bench-model",
				       .state = (char *)states[i % 4], .steps = i % 30, .input_tokens = 1000 + i,
				       .output_tokens = 100 + i, .worker_pid = -1, .heartbeat_at = -1,
				       .created_at = rk_now_ms() - (RUNS - i) * 1000, .started_at = -1, .finished_at = -1};
		int rc = rk_db_run_insert(eng->db, &r, &err);
		free(id);
		free(task);
		if (rc)
			goto fail;
	}
	for (int i = 1; i <= HISTORY_LINES; i++) {
		char line[96];
		int n = i == HISTORY_LINES ? snprintf(line, sizeof(line), MARK "\n")
					   : snprintf(line, sizeof(line), "history line %d of the bench's output\n", i);
		if (rk_db_history_append(eng->db, first, "ses_bench", NULL, "output", line, (size_t)n, -1, -1, &err))
			goto fail;
	}
	if (rk_db_commit(eng->db, &err))
		goto fail;
	free(first);
	return 0;
fail:
	fprintf(stderr, "tui_bench: prepare: %s\n", err.message);
	rk_db_rollback(eng->db);
	free(first);
	return -1;
}

/* One start: ms from the fork to the frame with the data; -1 on failure. */
static double one_start(const char *bin, const char *data_dir)
{
	struct winsize ws = {.ws_row = 40, .ws_col = 120};
	int master;
	int64_t t0 = rk_monotonic_us();
	pid_t pid = forkpty(&master, NULL, NULL, &ws);
	if (pid < 0)
		return -1;
	if (pid == 0) {
		setenv("RAKAZO_DATA_DIR", data_dir, 1);
		setenv("TERM", "xterm-256color", 1);
		setenv("RAKAZO_TUI_EXIT_AFTER_DRAW", "1", 1);
		unsetenv("NO_COLOR");
		execl(bin, bin, "tui", (char *)NULL);
		_exit(127);
	}
	struct rk_buf out;
	rk_buf_init(&out);
	double ms = -1;
	int64_t deadline = rk_monotonic_us() + 20 * 1000000LL;
	while (rk_monotonic_us() < deadline) {
		struct pollfd p = {.fd = master, .events = POLLIN};
		if (poll(&p, 1, 1000) <= 0)
			continue;
		char buf[65536];
		ssize_t n = read(master, buf, sizeof(buf));
		if (n <= 0)
			break; /* EIO: the child has gone */
		rk_buf_add(&out, buf, (size_t)n);
		if (ms < 0 && strstr(out.data, MARK))
			ms = (double)(rk_monotonic_us() - t0) / 1000.0;
	}
	int status = 0;
	if (waitpid(pid, &status, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	close(master);
	if (ms < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fprintf(stderr, "tui_bench: no frame with the data (status %d): %.300s\n", status, out.data);
	rk_buf_release(&out);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? ms : -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(void)
{
	rk_engine_hooks_init();
	if (!want("tui_first_draw"))
		return 0;
	const char *bin = getenv("RAKAZO_BIN");
	if (!bin || !*bin)
		bin = "build/rakazo";
	if (access(bin, X_OK)) {
		fprintf(stderr, "tui_bench: no rakazo binary at %s (set RAKAZO_BIN)\n", bin);
		return 1;
	}
	char data_dir[] = "/tmp/rk-tui-bench-XXXXXX";
	if (!mkdtemp(data_dir)) {
		fprintf(stderr, "tui_bench: cannot make a temp dir\n");
		return 1;
	}
	setenv("RAKAZO_DATA_DIR", data_dir, 1);
	struct rk_engine *eng = NULL;
	struct rk_error err = {0};
	int status = 1;
	if (rk_engine_open(&eng, &err)) {
		fprintf(stderr, "tui_bench: %s\n", err.message);
		goto out;
	}
	int r = prepare(eng);
	rk_engine_free(eng);
	if (r)
		goto out;
	double ms[STARTS];
	for (int i = 0; i < STARTS; i++)
		if ((ms[i] = one_start(bin, data_dir)) < 0)
			goto out;
	qsort(ms, STARTS, sizeof(*ms), cmp_double);
	printf("bench: tui_first_draw ours=%.1f ms\n", ms[STARTS / 2]);
	status = 0;
out:
	rk_fs_remove_tree(data_dir, NULL);
	return status;
}
