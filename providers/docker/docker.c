/* The docker provider: one container per computer on the local daemon,
 * through the Engine API (api.c); never the docker CLI.
 *
 * The container runs the rakazo-computer image as uid 1000 with the
 * workspace (m->home_dir) bind-mounted at /home/user/rakazo-home and the
 * run dir (m->run_dir) at /run/rakazo, so VNC sockets and the exec status
 * files below are visible on the host. Workspace reads, lists and (as root)
 * writes are served host-side, resolving paths with openat2(RESOLVE_BENEATH)
 * so a symlink the computer made can never reach a host file; whatever
 * would leave the workspace goes through the container instead.
 *
 * Commands run through rakazo-agent (agent.c), which provision and resume
 * start in the container and which answers on /run/rakazo/agent.sock; when
 * it does not answer, or with RAKAZO_DOCKER_EXEC=api, through docker exec.
 * Both paths behave the same (tests/unit/test_docker.c runs them both). */

#include <archive.h>
#include <archive_entry.h>
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/tar.h"
#include "engine/util/time.h"
#include "providers/provider.h"
#include "providers/docker/api.h"

#ifndef RK_IMAGE_TAG
#define RK_IMAGE_TAG "rakazo-computer:latest"
#endif

#define WORKSPACE "/home/user/rakazo-home"
#define RUN_DIR "/run/rakazo"
#define USER_UID 1000
#define SHM_SIZE (512LL * 1024 * 1024)
#define RUN_TIMEOUT_MS 30000
#define STOP_GRACE_S 5
#define DOCKER_CAPS                                                                                                    \
	(RK_CAP_DESKTOP | RK_CAP_MULTI_SCREEN | RK_CAP_TTY | RK_CAP_PERSISTENT_HOME | RK_CAP_TAKEOVER | RK_CAP_VNC |   \
	 RK_CAP_PAUSE | RK_CAP_SNAPSHOTS | RK_CAP_HOST_HOME | RK_CAP_PAGE_BROWSER | RK_CAP_LIMIT_MEMORY |              \
	 RK_CAP_LIMIT_CPUS | RK_CAP_LIMIT_PIDS)

static const char *image_tag(void)
{
	const char *env = getenv("RAKAZO_IMAGE");
	return env && *env ? env : RK_IMAGE_TAG;
}

/* --- containers ------------------------------------------------------------ */

enum cstate { C_GONE, C_RUNNING, C_PAUSED, C_STOPPED };

static enum cstate state_of(const char *status)
{
	if (!status)
		return C_GONE;
	if (strcmp(status, "running") == 0 || strcmp(status, "restarting") == 0)
		return C_RUNNING;
	if (strcmp(status, "paused") == 0)
		return C_PAUSED;
	if (strcmp(status, "created") == 0 || strcmp(status, "exited") == 0)
		return C_STOPPED;
	return C_GONE; /* dead, removing */
}

/* The container's state; C_GONE for a 404. pid (may be NULL): its init's
 * pid in the daemon's pid namespace, 0 when it is not running. */
static int inspect(const char *id, enum cstate *st, long *pid, struct rk_error *err)
{
	*st = C_GONE; /* (read only on success) */
	char *enc = rk_docker_urlencode(id);
	char *path = rk_xasprintf("/containers/%s/json", enc);
	struct rk_docker_resp r;
	rk_docker_resp_init(&r);
	int rc = rk_docker_json("GET", path, NULL, 0, &r, err);
	if (rc == 0) {
		if (r.status == 404) {
			*st = C_GONE;
		} else if (r.status == 200) {
			cJSON *doc = rk_json_parse(r.body.data, r.body.len, "docker container inspect", err);
			if (!doc) {
				rc = -RK_EFAILED;
			} else {
				const cJSON *state = cJSON_GetObjectItemCaseSensitive(doc, "State");
				*st = state_of(rk_json_string(state, "Status", NULL));
				const cJSON *p = cJSON_GetObjectItemCaseSensitive(state, "Pid");
				if (pid)
					*pid = cJSON_IsNumber(p) ? (long)p->valuedouble : 0;
				cJSON_Delete(doc);
			}
		} else {
			rc = rk_error_set(err, RK_EFAILED, "docker cannot inspect container %s (HTTP %ld): %s", id,
					  r.status, rk_docker_message(&r));
		}
	}
	rk_docker_resp_release(&r);
	free(path);
	free(enc);
	return rc;
}

/* The newest container labelled for this computer, or *id = NULL. */
static int find_by_label(const char *computer_id, char **id, struct rk_error *err)
{
	*id = NULL;
	cJSON *filters = cJSON_CreateObject();
	cJSON *labels = cJSON_AddArrayToObject(filters, "label");
	char *want = rk_xasprintf("rakazo.computer=%s", computer_id);
	cJSON_AddItemToArray(labels, cJSON_CreateString(want));
	cJSON_AddItemToArray(labels, cJSON_CreateString("rakazo.managed=true"));
	char *text = cJSON_PrintUnformatted(filters);
	char *enc = rk_docker_urlencode(text);
	char *path = rk_xasprintf("/containers/json?all=1&filters=%s", enc);
	struct rk_docker_resp r;
	rk_docker_resp_init(&r);
	int rc = rk_docker_json("GET", path, NULL, 0, &r, err);
	if (rc == 0 && r.status != 200)
		rc = rk_error_set(err, RK_EFAILED, "docker cannot list containers (HTTP %ld): %s", r.status,
				  rk_docker_message(&r));
	if (rc == 0) {
		cJSON *doc = rk_json_parse(r.body.data, r.body.len, "docker container list", err);
		if (!doc) {
			rc = -RK_EFAILED;
		} else {
			const cJSON *first = cJSON_IsArray(doc) ? cJSON_GetArrayItem(doc, 0) : NULL;
			const char *cid = rk_json_string(first, "Id", NULL);
			if (cid)
				*id = rk_xstrdup(cid);
			cJSON_Delete(doc);
		}
	}
	rk_docker_resp_release(&r);
	free(path);
	free(enc);
	free(text);
	free(want);
	cJSON_Delete(filters);
	return rc;
}

/* The machine's container id (malloc'd): the ref, else the labelled one.
 * RK_ENOTFOUND when there is none. */
static int container_of(const struct rk_machine *m, char **id, struct rk_error *err)
{
	if (m->ref && *m->ref) {
		*id = rk_xstrdup(m->ref);
		return 0;
	}
	int rc = find_by_label(m->computer_id, id, err);
	if (rc == 0 && !*id)
		rc = rk_error_set(err, RK_ENOTFOUND, "computer %s has no docker container: provision it first",
				  m->computer_id);
	return rc;
}

/* POST /containers/{id}/VERB with the usual status handling: 2xx and 304
 * are success; 404 is RK_ENOTFOUND; 409 RK_ECONFLICT with docker's text. */
static int container_post(const char *id, const char *verb, const char *query, long *status, struct rk_error *err)
{
	char *enc = rk_docker_urlencode(id);
	char *path = rk_xasprintf("/containers/%s/%s%s", enc, verb, query ? query : "");
	struct rk_docker_resp r;
	rk_docker_resp_init(&r);
	struct rk_docker_call c = {
		.method = "POST",
		.path = path,
		.body_fd = -1,
		.reply_fd = -1,
		.mutating = 1,
		.timeout_ms = RK_DOCKER_TIMEOUT_MS + STOP_GRACE_S * 1000,
	};
	int rc = rk_docker_call(&c, &r, err);
	if (status)
		*status = r.status;
	if (rc == 0 && !((r.status >= 200 && r.status < 300) || r.status == 304)) {
		enum rk_code code = r.status == 404 ? RK_ENOTFOUND : r.status == 409 ? RK_ECONFLICT : RK_EFAILED;
		rc = rk_error_set(err, code, "docker cannot %s container %.12s (HTTP %ld): %s", verb, id, r.status,
				  rk_docker_message(&r));
	}
	rk_docker_resp_release(&r);
	free(path);
	free(enc);
	return rc;
}

/* Starts the in-container exec agent unless a live one answers (below). */
static void agent_ensure(const struct rk_machine *m, const char *container);

static int ensure_running(const char *id, enum cstate st, struct rk_error *err)
{
	if (st == C_PAUSED)
		return container_post(id, "unpause", NULL, NULL, err);
	if (st == C_STOPPED)
		return container_post(id, "start", NULL, NULL, err);
	return 0;
}

/* Host dirs usable by uid 1000 inside: chown as root, else open them up
 * (a non-root user other than 1000 has no other way to share them). */
static int prepare_dir(const char *path, struct rk_error *err)
{
	int rc = rk_fs_mkdirs(path, 0755, err);
	if (rc < 0)
		return rc;
	if (geteuid() == 0) {
		if (chown(path, USER_UID, USER_UID) != 0)
			return rk_error_errno(err, RK_EIO, errno, "cannot chown %s to uid %d", path, USER_UID);
	} else if (geteuid() != USER_UID) {
		if (chmod(path, 0777) != 0)
			return rk_error_errno(err, RK_EIO, errno, "cannot chmod %s", path);
	}
	return 0;
}

/* The machine's limits as HostConfig members (a 0 is the default); swap
 * is not added on top of memory. */
static void add_limits(cJSON *host, const struct rk_machine *m)
{
	struct rk_limits lim = m->limits;
	rk_limits_defaults(DOCKER_CAPS, &lim);
	cJSON_AddNumberToObject(host, "Memory", (double)lim.memory);
	cJSON_AddNumberToObject(host, "MemorySwap", (double)lim.memory);
	cJSON_AddNumberToObject(host, "NanoCpus", floor(lim.cpus * 1e9 + 0.5));
	cJSON_AddNumberToObject(host, "PidsLimit", (double)lim.pids);
}

/* A container made before limits existed (or with other ones) gets the
 * machine's now; for one that has them already this changes nothing.
 * Logged, not fatal: docker refuses a memory limit below what the
 * container uses at that moment. */
static void update_limits(const struct rk_machine *m, const char *container)
{
	cJSON *body = cJSON_CreateObject();
	add_limits(body, m);
	char *enc = rk_docker_urlencode(container);
	char *path = rk_xasprintf("/containers/%s/update", enc);
	struct rk_docker_resp r;
	rk_docker_resp_init(&r);
	struct rk_error err;
	rk_error_clear(&err);
	int rc = rk_docker_json("POST", path, body, 1, &r, &err);
	if (rc < 0)
		rk_log(RK_LOG_WARN, "docker: cannot set the limits of %.12s: %s", container, err.message);
	else if (r.status != 200)
		rk_log(RK_LOG_WARN, "docker: cannot set the limits of %.12s (HTTP %ld): %s", container, r.status,
		       rk_docker_message(&r));
	rk_docker_resp_release(&r);
	free(path);
	free(enc);
	cJSON_Delete(body);
}

/* Docker's bind mounts take no nosuid or nodev, so once the container runs
 * the workspace and run dir are remounted with both inside its mount
 * namespace (the computer has no capability to undo it). That takes root
 * on the daemon's host and its pid namespace; elsewhere it is logged and
 * skipped: no-new-privileges and the empty capability set already keep a
 * setuid file from raising anything. Every start needs it again (a
 * restarted container has fresh mounts); repeating it is harmless. */
static void harden_mounts(const struct rk_machine *m, const char *container)
{
	if (geteuid() != 0) {
		rk_log(RK_LOG_DEBUG, "docker: not root: the workspace of %s stays mounted without nosuid,nodev",
		       m->computer_id);
		return;
	}
	struct rk_error err;
	rk_error_clear(&err);
	enum cstate st;
	long pid = 0;
	if (inspect(container, &st, &pid, &err) < 0 || st != C_RUNNING || pid <= 1) {
		rk_log(RK_LOG_WARN, "docker: cannot find the init of %.12s to remount its workspace nosuid,nodev: %s",
		       container, err.code ? err.message : "it is not running");
		return;
	}
	/* the same workspace seen through the pid's root: the pid is this
	 * container's (not a process of another pid namespace) */
	char path[96];
	struct stat in, host;
	snprintf(path, sizeof(path), "/proc/%ld/root" WORKSPACE, pid);
	if (stat(path, &in) != 0 || stat(m->home_dir, &host) != 0 || in.st_dev != host.st_dev ||
	    in.st_ino != host.st_ino) {
		rk_log(RK_LOG_WARN,
		       "docker: container %.12s's init (pid %ld) is not in this pid namespace: its workspace stays "
		       "mounted without nosuid,nodev",
		       container, pid);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%ld/ns/mnt", pid);
	int ns = open(path, O_RDONLY | O_CLOEXEC);
	if (ns < 0) {
		rk_log(RK_LOG_WARN, "docker: cannot open %s: %s", path, strerror(errno));
		return;
	}
	/* setns(CLONE_NEWNS) wants a single-threaded caller: a child does it,
	 * with nothing but system calls */
	static const char *const targets[] = {WORKSPACE, RUN_DIR};
	pid_t child = fork();
	if (child == 0) {
		if (setns(ns, CLONE_NEWNS) != 0)
			_exit(100);
		for (int i = 0; i < 2; i++) {
			struct statfs sf; /* statfs, not statvfs: no /proc/mounts reading in glibc */
			if (statfs(targets[i], &sf) != 0)
				_exit(101 + 2 * i);
			unsigned long keep = (sf.f_flags & ST_RDONLY ? MS_RDONLY : 0) |
					     (sf.f_flags & ST_NOEXEC ? MS_NOEXEC : 0);
			if (mount(NULL, targets[i], NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | keep, NULL) !=
			    0)
				_exit(102 + 2 * i);
		}
		_exit(0);
	}
	close(ns);
	int ws = 0;
	while (child > 0 && waitpid(child, &ws, 0) < 0 && errno == EINTR)
		;
	if (child < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
		rk_log(RK_LOG_WARN, "docker: cannot remount the workspace of %.12s nosuid,nodev (step %d)", container,
		       child < 0       ? -1
		       : WIFEXITED(ws) ? WEXITSTATUS(ws)
				       : 128 + WTERMSIG(ws));
}

/* After every start: the workspace root is the computer user's (a restore
 * or import may have put a root-owned one in place), the limits are the
 * machine's and the mounts nosuid,nodev. */
static int after_start(const struct rk_machine *m, const char *container, int fresh, struct rk_error *err)
{
	int rc = prepare_dir(m->home_dir, err);
	if (rc == 0 && !fresh)
		update_limits(m, container);
	if (rc == 0)
		harden_mounts(m, container);
	return rc;
}

static int create_container(const struct rk_machine *m, const char *network, char **id, struct rk_error *err)
{
	int rc = prepare_dir(m->home_dir, err);
	char *exec_dir = rk_path_join(m->run_dir, "exec");
	if (rc == 0)
		rc = prepare_dir(m->run_dir, err);
	if (rc == 0)
		rc = prepare_dir(exec_dir, err);
	free(exec_dir);
	if (rc < 0)
		return rc;

	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "Image", image_tag());
	cJSON *labels = cJSON_AddObjectToObject(body, "Labels");
	cJSON_AddStringToObject(labels, "rakazo.managed", "true");
	cJSON_AddStringToObject(labels, "rakazo.computer", m->computer_id);
	cJSON_AddStringToObject(labels, "rakazo.home", m->home_key ? m->home_key : "");
	const char *test_label = getenv("RAKAZO_TEST_LABEL");
	if (test_label && *test_label)
		cJSON_AddStringToObject(labels, "rakazo.test", test_label);
	cJSON *host = cJSON_AddObjectToObject(body, "HostConfig");
	cJSON_AddStringToObject(host, "NetworkMode", network);
	cJSON_AddNumberToObject(host, "ShmSize", (double)SHM_SIZE);
	/* Nothing in the computer needs a capability: it runs as uid 1000
	 * (Xvfb, x11vnc, openbox, Chromium without its sandbox, the exec agent),
	 * and the provider signals commands as that uid too. With none in the
	 * bounding set and no-new-privileges, a setuid or file-capability binary
	 * (one an import or a host-side write left) raises nothing. */
	cJSON *drop = cJSON_AddArrayToObject(host, "CapDrop");
	cJSON_AddItemToArray(drop, cJSON_CreateString("ALL"));
	cJSON *secopt = cJSON_AddArrayToObject(host, "SecurityOpt");
	cJSON_AddItemToArray(secopt, cJSON_CreateString("no-new-privileges"));
	add_limits(host, m);
	cJSON *binds = cJSON_AddArrayToObject(host, "Binds");
	char *b1 = rk_xasprintf("%s:%s", m->home_dir, WORKSPACE);
	char *b2 = rk_xasprintf("%s:%s", m->run_dir, RUN_DIR);
	cJSON_AddItemToArray(binds, cJSON_CreateString(b1));
	cJSON_AddItemToArray(binds, cJSON_CreateString(b2));
	free(b1);
	free(b2);

	char *name = rk_docker_urlencode(m->computer_id);
	char *path = rk_xasprintf("/containers/create?name=rakazo-%s", name);
	struct rk_docker_resp r;
	rk_docker_resp_init(&r);
	rc = rk_docker_json("POST", path, body, 1, &r, err);
	if (rc == 0) {
		cJSON *doc = r.status == 201 ? rk_json_parse(r.body.data, r.body.len, "docker create reply", err)
					     : NULL;
		const char *cid = rk_json_string(doc, "Id", NULL);
		if (cid) {
			*id = rk_xstrdup(cid);
		} else if (r.status == 404) {
			rc = rk_error_set(err, RK_EUNAVAILABLE,
					  "computer image %s is not built: run `sh image/build.sh` (or `make image`)",
					  image_tag());
		} else if (r.status == 409) {
			rc = rk_error_set(err, RK_ECONFLICT,
					  "a docker container named rakazo-%s exists but is not this computer's: "
					  "remove it (%s)",
					  m->computer_id, rk_docker_message(&r));
		} else {
			rc = rk_error_set(err, RK_EFAILED, "docker cannot create the computer (HTTP %ld): %s", r.status,
					  rk_docker_message(&r));
		}
		cJSON_Delete(doc);
	}
	rk_docker_resp_release(&r);
	free(path);
	free(name);
	cJSON_Delete(body);
	if (rc == 0) {
		rc = container_post(*id, "start", NULL, NULL, err);
		if (rc < 0) {
			rk_error_prefix(err, "docker created container %.12s but cannot start it", *id);
			free(*id);
			*id = NULL;
		}
	}
	return rc;
}

static int network_option(const char *options_json, const char **network, struct rk_error *err)
{
	*network = "none";
	if (!options_json || !*options_json)
		return 0;
	cJSON *doc = rk_json_parse(options_json, strlen(options_json), "docker provider options", err);
	if (!doc)
		return -RK_EINVALID;
	const char *n = NULL;
	int rc = rk_json_get_string(doc, "network", 0, &n, "docker provider options", err);
	if (rc == 0 && n) {
		if (strcmp(n, "none") == 0)
			*network = "none";
		else if (strcmp(n, "bridge") == 0)
			*network = "bridge";
		else if (strcmp(n, "host") == 0)
			*network = "host";
		else
			rc = rk_error_set(err, RK_EINVALID,
					  "docker provider options: network must be none, bridge or host");
	}
	cJSON_Delete(doc);
	return rc;
}

static int docker_check(struct rk_error *err)
{
	return rk_docker_ping(err);
}

static int docker_image_check(char **detail, struct rk_error *err)
{
	const char *tag = image_tag();
	const char *env = getenv("RAKAZO_IMAGE");
	const char *from = env && *env ? " (from RAKAZO_IMAGE)" : "";
	*detail = NULL;
	for (const char *p = tag; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr(":/._-@", *p))
			return rk_error_set(err, RK_EINVALID, "computer image name %s%s is not a valid image name", tag,
					    from);
	char *path = rk_xasprintf("/images/%s/json", tag);
	struct rk_docker_resp r;
	rk_docker_resp_init(&r);
	int rc = rk_docker_json("GET", path, NULL, 0, &r, err);
	free(path);
	if (rc == 0 && r.status == 200) {
		cJSON *doc = rk_json_parse(r.body.data, r.body.len, "docker image reply", err);
		const cJSON *size = cJSON_GetObjectItemCaseSensitive(doc, "Size");
		const char *id = rk_json_string(doc, "Id", "");
		if (!strncmp(id, "sha256:", 7))
			id += 7;
		*detail = rk_xasprintf("%s%s: in dockerd (%.12s, %.0f MiB)", tag, from, id,
				       cJSON_IsNumber(size) ? size->valuedouble / (1024.0 * 1024.0) : 0.0);
		cJSON_Delete(doc);
	} else if (rc == 0 && r.status == 404) {
		rc = rk_error_set(err, RK_ENOTFOUND, "computer image %s%s is not in dockerd: %s", tag, from,
				  *from ? "load or tag it, or unset RAKAZO_IMAGE for this build's image"
					: "build it with `rakazo computer image build` (or `make image`)");
	} else if (rc == 0) {
		rc = rk_error_set(err, RK_EFAILED, "docker cannot inspect image %s (HTTP %ld): %s", tag, r.status,
				  rk_docker_message(&r));
	}
	rk_docker_resp_release(&r);
	return rc;
}

static int provision_container(const struct rk_machine *m, struct rk_provision_result *out, struct rk_error *err)
{
	const char *network;
	int rc = network_option(m->options_json, &network, err);
	if (rc < 0)
		return rc;
	out->ref = NULL;
	out->fresh = 0;
	out->replaced = 0;
	enum cstate st = C_GONE;
	if (m->ref && *m->ref) {
		rc = inspect(m->ref, &st, NULL, err);
		if (rc < 0)
			return rc;
		if (st != C_GONE) {
			rc = ensure_running(m->ref, st, err);
			if (rc == 0)
				out->ref = rk_xstrdup(m->ref);
			return rc;
		}
		out->replaced = 1;
		rk_log(RK_LOG_INFO, "docker: container %.12s of computer %s is gone", m->ref, m->computer_id);
	}
	char *id = NULL;
	rc = find_by_label(m->computer_id, &id, err);
	if (rc < 0)
		return rc;
	if (id) {
		rc = inspect(id, &st, NULL, err);
		if (rc == 0 && st != C_GONE) {
			rc = ensure_running(id, st, err);
			if (rc == 0) {
				out->ref = id;
				return 0;
			}
		}
		if (rc < 0) {
			free(id);
			return rc;
		}
		/* a dead one: clear it out of the way of the name */
		free(id);
		id = NULL;
	}
	rc = create_container(m, network, &id, err);
	if (rc < 0)
		return rc;
	rk_log(RK_LOG_INFO, "docker: created container %.12s for computer %s", id, m->computer_id);
	out->ref = id;
	out->fresh = 1;
	return 0;
}

/* The container, running, with its exec agent (a started or restarted
 * container has none until this starts it). */
static int docker_provision(const struct rk_machine *m, struct rk_provision_result *out, struct rk_error *err)
{
	int rc = provision_container(m, out, err);
	if (rc == 0 && (rc = after_start(m, out->ref, out->fresh, err)) < 0) {
		free(out->ref);
		out->ref = NULL;
	}
	if (rc == 0)
		agent_ensure(m, out->ref);
	return rc;
}

static int docker_status(const struct rk_machine *m, enum rk_machine_state *out, struct rk_error *err)
{
	char *id = NULL;
	int rc = container_of(m, &id, err);
	if (rc == -RK_ENOTFOUND) {
		*out = RK_MACHINE_GONE;
		return 0;
	}
	if (rc < 0)
		return rc;
	enum cstate st;
	rc = inspect(id, &st, NULL, err);
	free(id);
	if (rc < 0)
		return rc;
	static const enum rk_machine_state map[] = {
		[C_GONE] = RK_MACHINE_GONE,
		[C_RUNNING] = RK_MACHINE_RUNNING,
		[C_PAUSED] = RK_MACHINE_PAUSED,
		[C_STOPPED] = RK_MACHINE_STOPPED,
	};
	*out = map[st];
	return 0;
}

static int docker_pause(const struct rk_machine *m, struct rk_error *err)
{
	char *id = NULL;
	int rc = container_of(m, &id, err);
	if (rc < 0)
		return rc;
	enum cstate st;
	rc = inspect(id, &st, NULL, err);
	if (rc == 0) {
		if (st == C_GONE)
			rc = rk_error_set(err, RK_ENOTFOUND, "the computer's container %.12s is gone", id);
		else if (st == C_STOPPED)
			rc = rk_error_set(err, RK_ECONFLICT, "the computer is stopped: start it before pausing");
		else if (st == C_RUNNING)
			rc = container_post(id, "pause", NULL, NULL, err);
	}
	free(id);
	return rc;
}

static int docker_resume(const struct rk_machine *m, struct rk_error *err)
{
	char *id = NULL;
	int rc = container_of(m, &id, err);
	if (rc < 0)
		return rc;
	enum cstate st;
	rc = inspect(id, &st, NULL, err);
	if (rc == 0 && st == C_GONE)
		rc = rk_error_set(err, RK_ENOTFOUND, "the computer's container %.12s is gone: provision it again", id);
	if (rc == 0)
		rc = ensure_running(id, st, err);
	if (rc == 0)
		rc = after_start(m, id, 0, err);
	if (rc == 0)
		agent_ensure(m, id);
	free(id);
	return rc;
}

static int docker_stop(const struct rk_machine *m, struct rk_error *err)
{
	char *id = NULL;
	int rc = container_of(m, &id, err);
	if (rc == -RK_ENOTFOUND)
		return 0;
	if (rc < 0)
		return rc;
	enum cstate st;
	rc = inspect(id, &st, NULL, err);
	if (rc == 0 && st == C_PAUSED) /* a paused container does not take SIGTERM */
		rc = container_post(id, "unpause", NULL, NULL, err);
	if (rc == 0 && st != C_GONE && st != C_STOPPED) {
		char q[32];
		snprintf(q, sizeof(q), "?t=%d", STOP_GRACE_S);
		rc = container_post(id, "stop", q, NULL, err);
	}
	if (rc == -RK_ENOTFOUND)
		rc = 0;
	free(id);
	return rc;
}

static int docker_destroy(const struct rk_machine *m, struct rk_error *err)
{
	char *id = NULL;
	int rc = container_of(m, &id, err);
	if (rc == -RK_ENOTFOUND)
		return 0;
	if (rc < 0)
		return rc;
	char *enc = rk_docker_urlencode(id);
	char *path = rk_xasprintf("/containers/%s?force=1&v=1", enc);
	struct rk_docker_resp r;
	rk_docker_resp_init(&r);
	rc = rk_docker_json("DELETE", path, NULL, 1, &r, err);
	/* 409 "removal already in progress" ends the same way */
	if (rc == 0 && !(r.status == 204 || r.status == 200 || r.status == 404 || r.status == 409))
		rc = rk_error_set(err, RK_EFAILED, "docker cannot remove container %.12s (HTTP %ld): %s", id, r.status,
				  rk_docker_message(&r));
	rk_docker_resp_release(&r);
	free(path);
	free(enc);
	free(id);
	return rc;
}

/* --- exec -------------------------------------------------------------------- */

/* The wrapper every command runs under: it records its container pid (it is
 * the session and process-group leader, so `kill -- -PID` reaches the whole
 * command) and the real wait status of `bash -lc COMMAND`, which bash's $?
 * cannot tell apart from an exit status of 128+N. perl-base is in every Debian image and
 * starts in ~2 ms. Handlers (not SIG_IGN) so the child gets default ones. */
static const char wrapper[] =
	"my($t,$c)=@ARGV;my $d='" RUN_DIR "/exec';"
	"if(open(my $f,'>',\"$d/$t.pid\")){print $f \"$$\\n\";close $f}"
	"$SIG{$_}=sub{} for qw(INT TERM HUP QUIT USR1 USR2 ALRM);"
	"my $p=fork;"
	"if(!defined $p){print STDERR \"rakazo: cannot fork: $!\\n\";exit 126}"
	"if(!$p){exec('bash','-lc',$c);print STDERR \"rakazo: cannot run bash: $!\\n\";exit 127}"
	"my $r;do{$r=waitpid($p,0)}while($r==-1&&$!{EINTR});"
	"my $s=$?;"
	"if(open(my $f,'>',\"$d/$t.st\")){print $f \"$s\\n\";close $f;rename(\"$d/$t.st\",\"$d/$t.status\")}"
	"my $x=($s&127)?128+($s&127):($s>>8);exit $x;";

struct dproc {
	struct rk_proc base;
	int fd;
	int tty;
	int eof;
	int stdin_closed;
	int sent_signo;
	char *exec_id;
	char *container;
	char *pid_path; /* host paths of the wrapper's files, or NULL */
	char *status_path;
	struct rk_buf raw; /* bytes not yet demultiplexed */
};

static const struct rk_proc_ops dproc_ops;

static int exec_create(const char *container, const cJSON *cmd, int tty, const char *user, const char *cwd,
		       const char *const *env, char **exec_id, struct rk_error *err)
{
	cJSON *body = cJSON_CreateObject();
	cJSON_AddBoolToObject(body, "AttachStdin", 1);
	cJSON_AddBoolToObject(body, "AttachStdout", 1);
	cJSON_AddBoolToObject(body, "AttachStderr", 1);
	cJSON_AddBoolToObject(body, "Tty", tty);
	cJSON_AddItemToObject(body, "Cmd", cJSON_Duplicate(cmd, 1));
	cJSON_AddStringToObject(body, "User", user);
	if (cwd)
		cJSON_AddStringToObject(body, "WorkingDir", cwd);
	if (env) {
		cJSON *e = cJSON_AddArrayToObject(body, "Env");
		for (size_t i = 0; env[i]; i++)
			cJSON_AddItemToArray(e, cJSON_CreateString(env[i]));
	}
	char *enc = rk_docker_urlencode(container);
	char *path = rk_xasprintf("/containers/%s/exec", enc);
	struct rk_docker_resp r;
	rk_docker_resp_init(&r);
	int rc = rk_docker_json("POST", path, body, 0, &r, err);
	if (rc == 0) {
		cJSON *doc = r.status == 201 ? cJSON_ParseWithLength(r.body.data, r.body.len) : NULL;
		const char *id = rk_json_string(doc, "Id", NULL);
		if (id)
			*exec_id = rk_xstrdup(id);
		else if (r.status == 404)
			rc = rk_error_set(err, RK_ENOTFOUND,
					  "the computer's container %.12s is gone: provision it again", container);
		else if (r.status == 409)
			rc = rk_error_set(err, RK_ECONFLICT, "the computer is not running (%s): resume it first",
					  rk_docker_message(&r));
		else
			rc = rk_error_set(err, RK_EFAILED, "docker cannot create an exec (HTTP %ld): %s", r.status,
					  rk_docker_message(&r));
		cJSON_Delete(doc);
	}
	rk_docker_resp_release(&r);
	free(path);
	free(enc);
	cJSON_Delete(body);
	return rc;
}

static int exec_resize(const char *exec_id, int rows, int cols, struct rk_error *err)
{
	char *path = rk_xasprintf("/exec/%s/resize?h=%d&w=%d", exec_id, rows, cols);
	struct rk_docker_resp r;
	rk_docker_resp_init(&r);
	struct rk_docker_call c = {
		.method = "POST",
		.path = path,
		.body_fd = -1,
		.reply_fd = -1,
		.timeout_ms = 10000,
	};
	int rc = rk_docker_call(&c, &r, err);
	if (rc == 0 && r.status != 200 && r.status != 201)
		rc = rk_error_set(err, r.status == 404 ? RK_ENOTFOUND : RK_EFAILED,
				  "docker cannot resize the terminal (HTTP %ld): %s", r.status, rk_docker_message(&r));
	rk_docker_resp_release(&r);
	free(path);
	return rc;
}

/* Creates and starts an exec of cmd, handing back the attached stream. */
static int spawn(const char *container, const cJSON *cmd, int tty, int rows, int cols, const char *user,
		 const char *cwd, const char *const *env, struct dproc **out, struct rk_error *err)
{
	char *exec_id = NULL;
	int rc = exec_create(container, cmd, tty, user, cwd, env, &exec_id, err);
	if (rc < 0)
		return rc;
	struct dproc *p = rk_xcalloc(1, sizeof(*p));
	p->base.ops = &dproc_ops;
	p->fd = -1;
	p->tty = tty;
	p->exec_id = exec_id;
	p->container = rk_xstrdup(container);
	rk_buf_init(&p->raw);
	char *path = rk_xasprintf("/exec/%s/start", exec_id);
	rc = rk_docker_hijack(path, tty ? "{\"Detach\":false,\"Tty\":true}" : "{\"Detach\":false,\"Tty\":false}",
			      RK_DOCKER_TIMEOUT_MS, &p->fd, &p->raw, err);
	free(path);
	if (rc == 0 && tty)
		rc = exec_resize(exec_id, rows > 0 ? rows : 24, cols > 0 ? cols : 80, err);
	if (rc < 0) {
		p->base.ops->free(&p->base);
		return rc;
	}
	*out = p;
	return 0;
}

static int dproc_poll_fd(struct rk_proc *base)
{
	return ((struct dproc *)base)->fd;
}

/* Moves complete frames of the multiplexed stream to out (standard output)
 * and errout (standard error; may be out itself, which merges the two in
 * arrival order). */
static void demux(struct dproc *p, struct rk_buf *out, struct rk_buf *errout)
{
	if (p->tty) {
		rk_buf_add(out, p->raw.data, p->raw.len);
		rk_buf_reset(&p->raw);
		return;
	}
	size_t off = 0;
	while (p->raw.len - off >= 8) {
		const unsigned char *h = (const unsigned char *)p->raw.data + off;
		size_t len = ((size_t)h[4] << 24) | ((size_t)h[5] << 16) | ((size_t)h[6] << 8) | h[7];
		if (p->raw.len - off - 8 < len)
			break;
		if (h[0] == 2)
			rk_buf_add(errout, h + 8, len);
		else if (h[0] == 1 || h[0] == 0)
			rk_buf_add(out, h + 8, len);
		off += 8 + len;
	}
	rk_buf_consume(&p->raw, off);
}

/* Reads what is there now (at most ~1 MiB a call so a flood cannot starve
 * the caller's loop). */
static int pump(struct dproc *p, struct rk_buf *out, struct rk_buf *errout, struct rk_error *err)
{
	char chunk[65536];
	size_t got = 0;
	while (!p->eof && got < (1u << 20)) {
		ssize_t n = recv(p->fd, chunk, sizeof(chunk), MSG_DONTWAIT);
		if (n > 0) {
			rk_buf_add(&p->raw, chunk, (size_t)n);
			got += (size_t)n;
			continue;
		}
		if (n == 0) {
			p->eof = 1;
			break;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			break;
		if (errno == ECONNRESET || errno == EPIPE) {
			p->eof = 1;
			break;
		}
		return rk_error_errno(err, RK_EIO, errno, "cannot read the command's output");
	}
	demux(p, out, errout);
	return 0;
}

static int dproc_read(struct rk_proc *base, struct rk_buf *out, int *eof, struct rk_error *err)
{
	struct dproc *p = (struct dproc *)base;
	int rc = pump(p, out, out, err);
	*eof = p->eof;
	return rc;
}

static int dproc_write(struct rk_proc *base, const void *data, size_t len, struct rk_error *err)
{
	struct dproc *p = (struct dproc *)base;
	if (p->stdin_closed)
		return rk_error_set(err, RK_EINVALID, "the command's input is already closed");
	const char *s = data;
	int64_t deadline = rk_monotonic_ms() + RUN_TIMEOUT_MS;
	while (len > 0) {
		ssize_t n = send(p->fd, s, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			s += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int64_t left = deadline - rk_monotonic_ms();
			if (left <= 0)
				return rk_error_set(err, RK_ETIMEOUT, "the command has not read its input for %d s",
						    RUN_TIMEOUT_MS / 1000);
			struct pollfd pfd = {.fd = p->fd, .events = POLLOUT};
			poll(&pfd, 1, (int)left);
			continue;
		}
		if (errno == EPIPE || errno == ECONNRESET)
			return rk_error_set(err, RK_EINVALID, "the command has ended: it takes no more input");
		return rk_error_errno(err, RK_EIO, errno, "cannot write to the command");
	}
	return 0;
}

static int dproc_close_stdin(struct rk_proc *base, struct rk_error *err)
{
	struct dproc *p = (struct dproc *)base;
	if (p->stdin_closed)
		return 0;
	p->stdin_closed = 1;
	if (shutdown(p->fd, SHUT_WR) != 0 && errno != ENOTCONN)
		return rk_error_errno(err, RK_EIO, errno, "cannot close the command's input");
	return 0;
}

static int read_small_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	ssize_t n = rk_fs_read_fd(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* Runs a short helper command (no input) to its end; its output and errors are
 * kept apart. *code is its exit code. */
static int run(const char *container, const char *user, const cJSON *cmd, size_t max_out, struct rk_buf *out,
	       struct rk_buf *errout, int *code, struct rk_error *err);

static int dproc_signal(struct rk_proc *base, int signo, struct rk_error *err)
{
	struct dproc *p = (struct dproc *)base;
	if (signo <= 0 || signo >= 65)
		return rk_error_set(err, RK_EINVALID, "signal %d is out of range", signo);
	if (!p->pid_path)
		return rk_error_set(err, RK_EUNSUPPORTED, "this command cannot be signalled");
	char pidtext[32];
	long pid = 0;
	/* the wrapper writes its pid first thing; give it a moment after spawn */
	for (int i = 0; i < 200; i++) {
		if (read_small_file(p->pid_path, pidtext, sizeof(pidtext)) == 0 &&
		    (pid = strtol(pidtext, NULL, 10)) > 1)
			break;
		if (p->eof)
			return 0;
		rk_sleep_ms(10);
	}
	if (pid <= 1)
		return rk_error_set(err, RK_EFAILED, "the command's process id was never recorded");
	char sig[16], target[32];
	snprintf(sig, sizeof(sig), "-%d", signo);
	snprintf(target, sizeof(target), "-%ld", pid);
	cJSON *cmd = cJSON_CreateArray();
	cJSON_AddItemToArray(cmd, cJSON_CreateString("kill"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(sig));
	cJSON_AddItemToArray(cmd, cJSON_CreateString("--"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(target));
	struct rk_buf o, e;
	rk_buf_init(&o);
	rk_buf_init(&e);
	int code = 0;
	p->sent_signo = signo;
	/* as the command's own uid: root in the computer has no CAP_KILL */
	char uid[16];
	snprintf(uid, sizeof(uid), "%d", USER_UID);
	int rc = run(p->container, uid, cmd, 65536, &o, &e, &code, err);
	/* kill fails when the group is gone: the command ended on its own */
	if (rc == 0 && code != 0)
		rk_log(RK_LOG_DEBUG, "docker: kill %s %s: %s", sig, target, e.data);
	rk_buf_release(&o);
	rk_buf_release(&e);
	cJSON_Delete(cmd);
	return rc;
}

static int dproc_resize(struct rk_proc *base, int rows, int cols, struct rk_error *err)
{
	struct dproc *p = (struct dproc *)base;
	if (!p->tty)
		return rk_error_set(err, RK_EUNSUPPORTED, "only a command started with a tty can be resized");
	if (rows <= 0 || cols <= 0 || rows > 10000 || cols > 10000)
		return rk_error_set(err, RK_EINVALID, "terminal size %dx%d is out of range", rows, cols);
	return exec_resize(p->exec_id, rows, cols, err);
}

/* GET /exec/{id}/json: *gone for a 404, else running and the exit code
 * (-1 when docker has none). */
static int exec_inspect(const char *exec_id, int *gone, int *running, int *exit_code, struct rk_error *err)
{
	char *path = rk_xasprintf("/exec/%s/json", exec_id);
	struct rk_docker_resp r;
	rk_docker_resp_init(&r);
	int rc = rk_docker_json("GET", path, NULL, 0, &r, err);
	*gone = 0;
	*running = 0;
	*exit_code = -1;
	if (rc == 0) {
		if (r.status == 404) {
			*gone = 1;
		} else if (r.status != 200) {
			rc = rk_error_set(err, RK_EFAILED, "docker cannot inspect the exec (HTTP %ld): %s", r.status,
					  rk_docker_message(&r));
		} else {
			cJSON *doc = rk_json_parse(r.body.data, r.body.len, "docker exec inspect", err);
			if (!doc) {
				rc = -RK_EFAILED;
			} else {
				*running = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "Running"));
				const cJSON *ec = cJSON_GetObjectItemCaseSensitive(doc, "ExitCode");
				if (cJSON_IsNumber(ec))
					*exit_code = ec->valueint;
				cJSON_Delete(doc);
			}
		}
	}
	rk_docker_resp_release(&r);
	free(path);
	return rc;
}

/* Polls the exec until docker has recorded its end (it lags the stream's
 * end by a few ms); bounded. */
static int exec_finished(const char *exec_id, int *gone, int *exit_code, struct rk_error *err)
{
	int running = 0;
	int64_t deadline = rk_monotonic_ms() + 5000;
	for (int delay = 1;; delay = delay < 50 ? delay * 2 : 50) {
		int rc = exec_inspect(exec_id, gone, &running, exit_code, err);
		if (rc < 0)
			return rc;
		if (*gone || !running)
			return 0;
		if (rk_monotonic_ms() > deadline)
			return rk_error_set(err, RK_ETIMEOUT, "docker still shows the command running after its end");
		rk_sleep_ms(delay);
	}
}

static int dproc_wait(struct rk_proc *base, struct rk_exit_status *st, struct rk_error *err)
{
	struct dproc *p = (struct dproc *)base;
	memset(st, 0, sizeof(*st));
	char text[32];
	if (p->status_path && read_small_file(p->status_path, text, sizeof(text)) == 0) {
		int ws = atoi(text);
		if (ws & 127) {
			st->signo = ws & 127;
		} else {
			st->exited = 1;
			st->code = (ws >> 8) & 255;
		}
		return 0;
	}
	/* no status from the wrapper: it was killed too, or the container went */
	int gone = 0, code = -1;
	int rc = exec_finished(p->exec_id, &gone, &code, err);
	if (rc < 0)
		return rc;
	enum cstate cs = C_GONE;
	if (!gone && (rc = inspect(p->container, &cs, NULL, err)) < 0)
		return rc;
	if (gone || cs != C_RUNNING || code < 0) {
		/* the status file may have landed while we looked */
		if (p->status_path && read_small_file(p->status_path, text, sizeof(text)) == 0)
			return dproc_wait(base, st, err);
		st->lost = 1;
		return 0;
	}
	if (p->sent_signo && code == 128 + p->sent_signo) {
		st->signo = p->sent_signo;
	} else {
		st->exited = 1;
		st->code = code;
	}
	return 0;
}

static void dproc_free(struct rk_proc *base)
{
	struct dproc *p = (struct dproc *)base;
	if (!p)
		return;
	if (p->fd >= 0)
		close(p->fd);
	if (p->pid_path)
		unlink(p->pid_path);
	if (p->status_path)
		unlink(p->status_path);
	free(p->pid_path);
	free(p->status_path);
	free(p->exec_id);
	free(p->container);
	rk_buf_release(&p->raw);
	free(p);
}

static const struct rk_proc_ops dproc_ops = {
	.poll_fd = dproc_poll_fd,
	.read = dproc_read,
	.write = dproc_write,
	.close_stdin = dproc_close_stdin,
	.signal = dproc_signal,
	.resize = dproc_resize,
	.wait = dproc_wait,
	.free = dproc_free,
};

static int run(const char *container, const char *user, const cJSON *cmd, size_t max_out, struct rk_buf *out,
	       struct rk_buf *errout, int *code, struct rk_error *err)
{
	struct dproc *p = NULL;
	int rc = spawn(container, cmd, 0, 0, 0, user, "/", NULL, &p, err);
	if (rc < 0)
		return rc;
	dproc_close_stdin(&p->base, NULL);
	int64_t deadline = rk_monotonic_ms() + RUN_TIMEOUT_MS;
	while (!p->eof) {
		rc = pump(p, out, errout, err);
		if (rc < 0)
			goto out;
		if (out->len > max_out) {
			rc = rk_error_set(err, RK_ETOOLARGE, "computer output exceeds %zu bytes", max_out);
			goto out;
		}
		if (p->eof)
			break;
		int64_t left = deadline - rk_monotonic_ms();
		if (left <= 0) {
			rc = rk_error_set(err, RK_ETIMEOUT, "a helper command in the computer took over %d s",
					  RUN_TIMEOUT_MS / 1000);
			goto out;
		}
		struct pollfd pfd = {.fd = p->fd, .events = POLLIN};
		poll(&pfd, 1, (int)left);
	}
	int gone = 0;
	rc = exec_finished(p->exec_id, &gone, code, err);
	if (rc == 0 && (gone || *code < 0))
		rc = rk_error_set(err, RK_EUNAVAILABLE, "the computer went away during a helper command");
out:
	dproc_free(&p->base);
	return rc;
}

/* A helper shell script run as uid 1000 with "$@" = args. */
static int run_sh(const char *container, const char *script, const char *const *args, size_t max_out,
		  struct rk_buf *out, struct rk_buf *errout, int *code, struct rk_error *err)
{
	cJSON *cmd = cJSON_CreateArray();
	cJSON_AddItemToArray(cmd, cJSON_CreateString("sh"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString("-c"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(script));
	cJSON_AddItemToArray(cmd, cJSON_CreateString("rakazo"));
	for (size_t i = 0; args && args[i]; i++)
		cJSON_AddItemToArray(cmd, cJSON_CreateString(args[i]));
	char uid[16];
	snprintf(uid, sizeof(uid), "%d", USER_UID);
	int rc = run(container, uid, cmd, max_out, out, errout, code, err);
	cJSON_Delete(cmd);
	return rc;
}

static char *container_path(const char *path)
{
	if (path[0] == '/')
		return rk_xstrdup(path);
	return *path ? rk_xasprintf("%s/%s", WORKSPACE, path) : rk_xstrdup(WORKSPACE);
}

/* --- the exec agent ------------------------------------------------------------ */

/* providers/docker/agent.c, copied into the run dir and started once per
 * container, runs commands without the ~90 ms that runc spends on every docker
 * exec. Its protocol is described there; these constants follow it, and the
 * hello's version and container id catch an agent that does not. Every failure
 * to reach it only means the docker exec path above runs instead. */
#define AGENT_VERSION 1
#define AGENT_SOCK "agent.sock"
#define AGENT_HELLO_MS 1000 /* a paused container never says hello: fall back */
#define AGENT_START_MS 3000
#define AGENT_MAX_FRAME (16u << 20)
#define AGENT_CHUNK 65536

/* RAKAZO_DOCKER_EXEC=api forces docker exec. The socket is uid 1000's with
 * mode 0600, so only root and uid 1000 on the host can use it. */
static int agent_wanted(void)
{
	const char *mode = getenv("RAKAZO_DOCKER_EXEC");
	if (mode && strcmp(mode, "api") == 0)
		return 0;
	return geteuid() == 0 || geteuid() == USER_UID;
}

static void put_u32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int send_full(int fd, const void *data, size_t len, int64_t deadline)
{
	const char *s = data;
	while (len > 0) {
		ssize_t n = send(fd, s, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			s += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int64_t left = deadline - rk_monotonic_ms();
			if (left <= 0) {
				errno = ETIMEDOUT;
				return -1;
			}
			struct pollfd pfd = {.fd = fd, .events = POLLOUT};
			poll(&pfd, 1, (int)left);
			continue;
		}
		return -1;
	}
	return 0;
}

static int send_frame(int fd, char type, const void *data, size_t len, int64_t deadline)
{
	unsigned char h[5];
	h[0] = (unsigned char)type;
	put_u32(h + 1, (uint32_t)len);
	if (send_full(fd, h, sizeof(h), deadline) != 0)
		return -1;
	return len ? send_full(fd, data, len, deadline) : 0;
}

/* Reads exactly len bytes by the deadline. */
static int recv_exact(int fd, void *data, size_t len, int64_t deadline)
{
	char *d = data;
	while (len > 0) {
		int64_t left = deadline - rk_monotonic_ms();
		if (left <= 0)
			return -1;
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int pr = poll(&pfd, 1, (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			return -1;
		ssize_t n = recv(fd, d, len, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -1;
		d += n;
		len -= (size_t)n;
	}
	return 0;
}

enum agent_answer { AGENT_NONE, AGENT_OK, AGENT_OLD };

/* Connects to the computer's agent and reads its hello. AGENT_OK with *fd set
 * when it is ours and current; AGENT_OLD (fd set too) for another protocol
 * version. The socket is opened without following a symlink (the computer
 * owns the run dir and could point one anywhere on the host) and must be a
 * socket of uid 1000 or root. */
static enum agent_answer agent_connect(const char *run_dir, const char *container, int timeout_ms, int *fd_out)
{
	char *path = rk_path_join(run_dir, AGENT_SOCK);
	int pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	free(path);
	if (pfd < 0)
		return AGENT_NONE;
	struct stat st;
	if (fstat(pfd, &st) != 0 || !S_ISSOCK(st.st_mode) || (st.st_uid != USER_UID && st.st_uid != 0)) {
		close(pfd);
		rk_log(RK_LOG_WARN, "docker: %s/" AGENT_SOCK " is not the agent's socket: not used", run_dir);
		return AGENT_NONE;
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", pfd);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(pfd);
	if (!ok) {
		if (fd >= 0)
			close(fd);
		return AGENT_NONE;
	}
	int64_t deadline = rk_monotonic_ms() + timeout_ms;
	unsigned char h[9];
	char id[128];
	enum agent_answer a = AGENT_NONE;
	if (recv_exact(fd, h, sizeof(h), deadline) == 0 && h[0] == 'A') {
		uint32_t len = get_u32(h + 1);
		uint32_t version = get_u32(h + 5);
		if (len >= 4 && len - 4 < sizeof(id) && recv_exact(fd, id, len - 4, deadline) == 0) {
			id[len - 4] = '\0';
			if (strcmp(id, container) != 0)
				rk_log(RK_LOG_WARN, "docker: the agent in %s serves container %.12s, not %.12s",
				       run_dir, id, container);
			else
				a = version == AGENT_VERSION ? AGENT_OK : AGENT_OLD;
		}
	}
	if (a == AGENT_NONE)
		close(fd);
	else
		*fd_out = fd;
	return a;
}

/* The agent binary: $RAKAZO_AGENT, else rakazo-agent next to the running
 * program; NULL when there is none. malloc'd. */
static char *agent_binary(void)
{
	const char *env = getenv("RAKAZO_AGENT");
	if (env && *env)
		return access(env, R_OK) == 0 ? rk_xstrdup(env) : NULL;
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	char *path = rk_xasprintf("%s/rakazo-agent", exe);
	if (access(path, R_OK) != 0) {
		free(path);
		return NULL;
	}
	return path;
}

/* Copies the binary to RUN_DIR/bin/rakazo-agent. The computer owns the run
 * dir, so nothing on the way is followed: bin is opened O_NOFOLLOW, the copy
 * is made O_EXCL under a fresh name and renamed over the old one. */
static int agent_install(const char *run_dir, const char *src, struct rk_error *err)
{
	int rc = 0, rfd = -1, bfd = -1, in = -1, out = -1;
	unsigned char rnd[6];
	rk_random_bytes(rnd, sizeof(rnd));
	char tmp[64];
	snprintf(tmp, sizeof(tmp), ".rakazo-agent.%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
		 rnd[5]);
	if ((rfd = open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rc = rk_error_errno(err, RK_EIO, errno, "cannot open %s", run_dir);
		goto out;
	}
	if (mkdirat(rfd, "bin", 0755) != 0 && errno != EEXIST) {
		rc = rk_error_errno(err, RK_EIO, errno, "cannot make %s/bin", run_dir);
		goto out;
	}
	if ((bfd = openat(rfd, "bin", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		rc = rk_error_errno(err, RK_EIO, errno, "cannot open %s/bin", run_dir);
		goto out;
	}
	struct stat st;
	if (fstat(bfd, &st) == 0 && st.st_uid == geteuid())
		fchmod(bfd, 0755); /* whatever the umask: uid 1000 runs what is inside */
	if ((in = open(src, O_RDONLY | O_CLOEXEC)) < 0) {
		rc = rk_error_errno(err, RK_EIO, errno, "cannot read %s", src);
		goto out;
	}
	if ((out = openat(bfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0755)) < 0) {
		rc = rk_error_errno(err, RK_EIO, errno, "cannot write %s/bin", run_dir);
		goto out;
	}
	char chunk[65536];
	ssize_t n;
	while ((n = rk_fs_read_fd(in, chunk, sizeof(chunk))) > 0)
		if (rk_fs_write_fd(out, chunk, (size_t)n) != 0)
			break;
	if (n != 0 || fchmod(out, 0755) != 0 || close(out) != 0) {
		rc = rk_error_errno(err, RK_EIO, errno, "cannot copy %s to %s/bin", src, run_dir);
		out = -1;
		unlinkat(bfd, tmp, 0);
		goto out;
	}
	out = -1;
	if (renameat(bfd, tmp, bfd, "rakazo-agent") != 0) {
		rc = rk_error_errno(err, RK_EIO, errno, "cannot install the agent in %s/bin", run_dir);
		unlinkat(bfd, tmp, 0);
	}
out:
	if (out >= 0)
		close(out);
	if (in >= 0)
		close(in);
	if (bfd >= 0)
		close(bfd);
	if (rfd >= 0)
		close(rfd);
	return rc;
}

/* A detached `docker exec --user 1000 rakazo-agent SOCKET ID`. */
static int agent_start(const char *container, struct rk_error *err)
{
	cJSON *body = cJSON_CreateObject();
	cJSON_AddBoolToObject(body, "AttachStdin", 0);
	cJSON_AddBoolToObject(body, "AttachStdout", 0);
	cJSON_AddBoolToObject(body, "AttachStderr", 0);
	cJSON_AddBoolToObject(body, "Tty", 0);
	cJSON *cmd = cJSON_AddArrayToObject(body, "Cmd");
	cJSON_AddItemToArray(cmd, cJSON_CreateString(RUN_DIR "/bin/rakazo-agent"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(RUN_DIR "/" AGENT_SOCK));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(container));
	char uid[16];
	snprintf(uid, sizeof(uid), "%d", USER_UID);
	cJSON_AddStringToObject(body, "User", uid);
	cJSON_AddStringToObject(body, "WorkingDir", "/");
	char *enc = rk_docker_urlencode(container);
	char *path = rk_xasprintf("/containers/%s/exec", enc);
	struct rk_docker_resp r;
	rk_docker_resp_init(&r);
	char *exec_id = NULL;
	int rc = rk_docker_json("POST", path, body, 1, &r, err);
	if (rc == 0) {
		cJSON *doc = r.status == 201 ? cJSON_ParseWithLength(r.body.data, r.body.len) : NULL;
		const char *id = rk_json_string(doc, "Id", NULL);
		if (id)
			exec_id = rk_xstrdup(id);
		else
			rc = rk_error_set(err, RK_EFAILED, "docker cannot create the agent's exec (HTTP %ld): %s",
					  r.status, rk_docker_message(&r));
		cJSON_Delete(doc);
	}
	if (rc == 0) {
		char *start = rk_xasprintf("/exec/%s/start", exec_id);
		static const char detach[] = "{\"Detach\":true,\"Tty\":false}";
		struct rk_docker_call c = {
			.method = "POST",
			.path = start,
			.body = detach,
			.body_len = sizeof(detach) - 1,
			.body_fd = -1,
			.reply_fd = -1,
			.mutating = 1,
		};
		rc = rk_docker_call(&c, &r, err);
		if (rc == 0 && r.status != 200 && r.status != 204)
			rc = rk_error_set(err, RK_EFAILED, "docker cannot start the agent (HTTP %ld): %s", r.status,
					  rk_docker_message(&r));
		free(start);
	}
	free(exec_id);
	rk_docker_resp_release(&r);
	free(path);
	free(enc);
	cJSON_Delete(body);
	return rc;
}

/* Makes sure a current agent serves the running container: reuses a live
 * one, else installs and starts it and waits for its hello. Never fails the
 * caller: without an agent, exec takes the docker exec path. */
static void agent_ensure(const struct rk_machine *m, const char *container)
{
	if (!agent_wanted())
		return;
	int fd = -1;
	enum agent_answer a = agent_connect(m->run_dir, container, AGENT_HELLO_MS, &fd);
	if (a == AGENT_OK) {
		close(fd);
		return;
	}
	if (a == AGENT_OLD) {
		/* another version: ask it to go; the new one waits for its lock */
		send_frame(fd, 'Q', NULL, 0, rk_monotonic_ms() + AGENT_HELLO_MS);
		close(fd);
	}
	char *src = agent_binary();
	if (!src) {
		rk_log(RK_LOG_INFO,
		       "docker: no rakazo-agent next to rakazo (or RAKAZO_AGENT): commands use docker exec");
		return;
	}
	struct rk_error err;
	rk_error_clear(&err);
	int64_t t0 = rk_monotonic_ms();
	int rc = prepare_dir(m->run_dir, &err);
	if (rc == 0)
		rc = agent_install(m->run_dir, src, &err);
	if (rc == 0)
		rc = agent_start(container, &err);
	free(src);
	if (rc < 0) {
		rk_log(RK_LOG_WARN, "docker: cannot start the exec agent in %.12s: %s", container, err.message);
		return;
	}
	for (int delay = 1; rk_monotonic_ms() - t0 < AGENT_START_MS; delay = delay < 20 ? delay * 2 : 20) {
		a = agent_connect(m->run_dir, container, AGENT_HELLO_MS, &fd);
		if (a != AGENT_NONE)
			close(fd);
		if (a == AGENT_OK) {
			rk_log(RK_LOG_DEBUG, "docker: exec agent up in %.12s after %lld ms", container,
			       (long long)(rk_monotonic_ms() - t0));
			return;
		}
		rk_sleep_ms(delay);
	}
	rk_log(RK_LOG_WARN, "docker: the exec agent in %.12s did not answer within %d ms: commands use docker exec",
	       container, AGENT_START_MS);
}

struct aproc {
	struct rk_proc base;
	int fd;
	int tty;
	int eof;    /* the exit record came, or the connection ended */
	int exited; /* the exit record came: wstatus is real */
	int stdin_closed;
	int broken; /* a frame went out half: nothing more can be sent */
	int ended;  /* a send found the agent's side closed */
	uint32_t wstatus;
	struct rk_buf raw; /* bytes not yet parsed into frames */
};

static const struct rk_proc_ops aproc_ops;

/* Connects and sends the command. 1: no agent here, take the docker exec
 * path (nothing was started); 0: *out runs the command. */
static int agent_spawn(const struct rk_machine *m, const char *container, const struct rk_exec_request *req,
		       const char *cwd, struct rk_proc **out)
{
	int fd = -1;
	enum agent_answer a = agent_connect(m->run_dir, container, AGENT_HELLO_MS, &fd);
	if (a != AGENT_OK) {
		if (a == AGENT_OLD)
			close(fd);
		return 1;
	}
	int rows = req->rows > 0 ? req->rows : 24, cols = req->cols > 0 ? req->cols : 80;
	if (rows > 65535)
		rows = 65535;
	if (cols > 65535)
		cols = 65535;
	struct rk_buf h;
	rk_buf_init(&h);
	unsigned char fixed[5] = {(unsigned char)(req->tty ? 1 : 0), (unsigned char)(rows >> 8), (unsigned char)rows,
				  (unsigned char)(cols >> 8), (unsigned char)cols};
	rk_buf_add(&h, fixed, sizeof(fixed));
	rk_buf_add(&h, req->command, strlen(req->command) + 1);
	rk_buf_add(&h, cwd, strlen(cwd) + 1);
	for (size_t i = 0; req->env && req->env[i]; i++)
		rk_buf_add(&h, req->env[i], strlen(req->env[i]) + 1);
	int rc = h.len <= AGENT_MAX_FRAME ? send_frame(fd, 'H', h.data, h.len, rk_monotonic_ms() + RUN_TIMEOUT_MS) : -1;
	rk_buf_release(&h);
	if (rc != 0) {
		/* a header cut short is never run */
		close(fd);
		return 1;
	}
	struct aproc *p = rk_xcalloc(1, sizeof(*p));
	p->base.ops = &aproc_ops;
	p->fd = fd;
	p->tty = req->tty;
	rk_buf_init(&p->raw);
	*out = &p->base;
	return 0;
}

static int aproc_poll_fd(struct rk_proc *base)
{
	return ((struct aproc *)base)->fd;
}

/* Reads what is there now (at most ~1 MiB a call) and moves output frames
 * to out. */
static int aproc_pump(struct aproc *p, struct rk_buf *out, struct rk_error *err)
{
	char chunk[65536];
	size_t got = 0;
	int closed = 0;
	while (!p->eof && !closed && got < (1u << 20)) {
		ssize_t n = recv(p->fd, chunk, sizeof(chunk), MSG_DONTWAIT);
		if (n > 0) {
			rk_buf_add(&p->raw, chunk, (size_t)n);
			got += (size_t)n;
		} else if (n == 0) {
			closed = 1;
		} else if (errno == EINTR) {
			continue;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			break;
		} else if (errno == ECONNRESET || errno == EPIPE) {
			closed = 1;
		} else {
			return rk_error_errno(err, RK_EIO, errno, "cannot read the command's output");
		}
		size_t off = 0;
		while (!p->eof && p->raw.len - off >= 5) {
			const unsigned char *f = (const unsigned char *)p->raw.data + off;
			uint32_t len = get_u32(f + 1);
			if (len > AGENT_MAX_FRAME) {
				rk_log(RK_LOG_WARN, "docker: the exec agent sent a %u-byte frame: connection dropped",
				       len);
				closed = 1;
				break;
			}
			if (p->raw.len - off - 5 < len)
				break;
			if (f[0] == 'O') {
				rk_buf_add(out, f + 5, len);
			} else if (f[0] == 'X' && len == 4) {
				p->wstatus = get_u32(f + 5);
				p->exited = 1;
				p->eof = 1;
			}
			off += 5 + (size_t)len;
		}
		rk_buf_consume(&p->raw, off);
	}
	if (closed)
		p->eof = 1; /* without an exit record: the agent or the computer went */
	return 0;
}

static int aproc_read(struct rk_proc *base, struct rk_buf *out, int *eof, struct rk_error *err)
{
	struct aproc *p = (struct aproc *)base;
	int rc = aproc_pump(p, out, err);
	*eof = p->eof;
	return rc;
}

/* Sends one frame; a send cut short leaves the stream unusable. */
static int aproc_send(struct aproc *p, char type, const void *data, size_t len, struct rk_error *err)
{
	if (p->broken)
		return rk_error_set(err, RK_EIO, "the connection to the command broke: it takes no more input");
	if (send_frame(p->fd, type, data, len, rk_monotonic_ms() + RUN_TIMEOUT_MS) == 0)
		return 0;
	p->broken = 1;
	p->ended = errno == EPIPE || errno == ECONNRESET;
	if (errno == ETIMEDOUT)
		return rk_error_set(err, RK_ETIMEOUT, "the command has not read its input for %d s",
				    RUN_TIMEOUT_MS / 1000);
	if (errno == EPIPE || errno == ECONNRESET)
		return rk_error_set(err, RK_EINVALID, "the command has ended: it takes no more input");
	return rk_error_errno(err, RK_EIO, errno, "cannot write to the command");
}

static int aproc_write(struct rk_proc *base, const void *data, size_t len, struct rk_error *err)
{
	struct aproc *p = (struct aproc *)base;
	if (p->stdin_closed)
		return rk_error_set(err, RK_EINVALID, "the command's input is already closed");
	if (p->eof)
		return rk_error_set(err, RK_EINVALID, "the command has ended: it takes no more input");
	const char *s = data;
	while (len > 0) {
		size_t n = len < AGENT_CHUNK ? len : AGENT_CHUNK;
		int rc = aproc_send(p, 'I', s, n, err);
		if (rc < 0)
			return rc;
		s += n;
		len -= n;
	}
	return 0;
}

static int aproc_close_stdin(struct rk_proc *base, struct rk_error *err)
{
	struct aproc *p = (struct aproc *)base;
	if (p->stdin_closed)
		return 0;
	p->stdin_closed = 1;
	if (p->eof || p->broken)
		return 0;
	int rc = aproc_send(p, 'C', NULL, 0, err);
	return rc < 0 && p->ended ? 0 : rc; /* it ended meanwhile */
}

static int aproc_signal(struct rk_proc *base, int signo, struct rk_error *err)
{
	struct aproc *p = (struct aproc *)base;
	if (signo <= 0 || signo >= 65)
		return rk_error_set(err, RK_EINVALID, "signal %d is out of range", signo);
	if (p->eof)
		return 0;
	unsigned char v[4];
	put_u32(v, (uint32_t)signo);
	int rc = aproc_send(p, 'S', v, sizeof(v), err);
	return rc < 0 && p->ended ? 0 : rc; /* it ended meanwhile */
}

static int aproc_resize(struct rk_proc *base, int rows, int cols, struct rk_error *err)
{
	struct aproc *p = (struct aproc *)base;
	if (!p->tty)
		return rk_error_set(err, RK_EUNSUPPORTED, "only a command started with a tty can be resized");
	if (rows <= 0 || cols <= 0 || rows > 10000 || cols > 10000)
		return rk_error_set(err, RK_EINVALID, "terminal size %dx%d is out of range", rows, cols);
	if (p->eof)
		return 0;
	unsigned char v[4] = {(unsigned char)(rows >> 8), (unsigned char)rows, (unsigned char)(cols >> 8),
			      (unsigned char)cols};
	return aproc_send(p, 'R', v, sizeof(v), err);
}

static int aproc_wait(struct rk_proc *base, struct rk_exit_status *st, struct rk_error *err)
{
	struct aproc *p = (struct aproc *)base;
	memset(st, 0, sizeof(*st));
	/* before eof: give the end a bounded moment, output is dropped */
	int64_t deadline = rk_monotonic_ms() + 5000;
	struct rk_buf sink;
	rk_buf_init(&sink);
	while (!p->eof) {
		int64_t left = deadline - rk_monotonic_ms();
		if (left <= 0) {
			rk_buf_release(&sink);
			return rk_error_set(err, RK_ETIMEOUT,
					    "the command is still running: read its output to the end "
					    "before waiting");
		}
		struct pollfd pfd = {.fd = p->fd, .events = POLLIN};
		poll(&pfd, 1, (int)left);
		int rc = aproc_pump(p, &sink, err);
		rk_buf_reset(&sink);
		if (rc < 0) {
			rk_buf_release(&sink);
			return rc;
		}
	}
	rk_buf_release(&sink);
	if (!p->exited) {
		st->lost = 1;
		return 0;
	}
	int ws = (int)p->wstatus;
	if (WIFSIGNALED(ws)) {
		st->signo = WTERMSIG(ws);
	} else {
		st->exited = 1;
		st->code = WEXITSTATUS(ws);
	}
	return 0;
}

static void aproc_free(struct rk_proc *base)
{
	struct aproc *p = (struct aproc *)base;
	if (!p)
		return;
	if (p->fd >= 0)
		close(p->fd);
	rk_buf_release(&p->raw);
	free(p);
}

static const struct rk_proc_ops aproc_ops = {
	.poll_fd = aproc_poll_fd,
	.read = aproc_read,
	.write = aproc_write,
	.close_stdin = aproc_close_stdin,
	.signal = aproc_signal,
	.resize = aproc_resize,
	.wait = aproc_wait,
	.free = aproc_free,
};

static int docker_exec_spawn(const struct rk_machine *m, const struct rk_exec_request *req, struct rk_proc **out,
			     struct rk_error *err)
{
	if (!req->command)
		return rk_error_set(err, RK_EINVALID, "no command to run");
	for (size_t i = 0; req->env && req->env[i]; i++)
		if (!strchr(req->env[i], '=') || req->env[i][0] == '=')
			return rk_error_set(err, RK_EINVALID, "environment entry %s is not NAME=VALUE", req->env[i]);
	char *id = NULL;
	int rc = container_of(m, &id, err);
	if (rc < 0)
		return rc;
	char *cwd = container_path(req->cwd ? req->cwd : "");
	if (agent_wanted() && agent_spawn(m, id, req, cwd, out) == 0) {
		free(cwd);
		free(id);
		return 0;
	}
	unsigned char rnd[8];
	char token[17];
	rk_random_bytes(rnd, sizeof(rnd));
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(token + 2 * i, 3, "%02x", rnd[i]);
	cJSON *cmd = cJSON_CreateArray();
	cJSON_AddItemToArray(cmd, cJSON_CreateString("perl"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString("-e"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(wrapper));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(token));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(req->command));
	char uid[16];
	snprintf(uid, sizeof(uid), "%d", USER_UID);
	struct dproc *p = NULL;
	rc = spawn(id, cmd, req->tty, req->rows, req->cols, uid, cwd, req->env, &p, err);
	if (rc == 0) {
		p->pid_path = rk_xasprintf("%s/exec/%s.pid", m->run_dir, token);
		p->status_path = rk_xasprintf("%s/exec/%s.status", m->run_dir, token);
		*out = &p->base;
	}
	free(cwd);
	cJSON_Delete(cmd);
	free(id);
	return rc;
}

/* --- files ------------------------------------------------------------------- */

/* A path inside the workspace, relative to it (malloc'd), or NULL for one
 * outside it. */
static char *workspace_rel(const char *path)
{
	if (path[0] != '/')
		return rk_xstrdup(path);
	size_t n = strlen(WORKSPACE);
	if (strncmp(path, WORKSPACE, n) == 0 && (path[n] == '\0' || path[n] == '/')) {
		const char *r = path + n;
		while (*r == '/')
			r++;
		return rk_xstrdup(r);
	}
	return NULL;
}

/* openat2 beneath the workspace root: a path that would leave it (an
 * absolute or escaping symlink) fails with EXDEV, and the caller then asks
 * the container, which resolves links the way the computer sees them. */
static int open_beneath(int root, const char *rel, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_CLOEXEC),
		.mode = mode,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	return (int)syscall(SYS_openat2, root, *rel ? rel : ".", &how, sizeof(how));
}

static int open_root(const struct rk_machine *m, struct rk_error *err)
{
	int fd = open(m->home_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return rk_error_errno(err, errno == ENOENT ? RK_ENOTFOUND : RK_EIO, errno,
				      "cannot open the workspace of computer %s (%s) on this host", m->computer_id,
				      WORKSPACE);
	return fd;
}

/* errno values after which the container has to resolve the path */
static int resolve_elsewhere(int e)
{
	return e == EXDEV || e == ELOOP || e == ENOSYS || e == EAGAIN;
}

static void fill_entry(struct rk_file_entry *e, const char *name, const struct stat *st)
{
	e->name = rk_xstrdup(name);
	e->type = S_ISREG(st->st_mode)	 ? RK_FILE_REGULAR
		  : S_ISDIR(st->st_mode) ? RK_FILE_DIR
		  : S_ISLNK(st->st_mode) ? RK_FILE_LINK
					 : RK_FILE_OTHER;
	e->size = S_ISREG(st->st_mode) || S_ISLNK(st->st_mode) ? (uint64_t)st->st_size : 0;
	e->mtime_ms = (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
	e->executable = S_ISREG(st->st_mode) && (st->st_mode & 0111);
}

static int cmp_entries(const void *a, const void *b)
{
	return strcmp(((const struct rk_file_entry *)a)->name, ((const struct rk_file_entry *)b)->name);
}

/* 1 = handled (rc in *rc), 0 = ask the container */
static int list_host(const struct rk_machine *m, const char *rel, const char *shown, struct rk_file_entry **out,
		     size_t *n, int *rc, struct rk_error *err)
{
	int root = open_root(m, err);
	if (root < 0) {
		*rc = root;
		return 1;
	}
	int fd = open_beneath(root, rel, O_RDONLY | O_DIRECTORY, 0);
	int e = errno;
	close(root);
	if (fd < 0) {
		if (resolve_elsewhere(e))
			return 0;
		*rc = e == ENOENT    ? rk_error_set(err, RK_ENOTFOUND, "computer directory not found: %s", shown)
		      : e == ENOTDIR ? rk_error_set(err, RK_EINVALID, "computer path is not a directory: %s", shown)
				     : rk_error_errno(err, RK_EIO, e, "cannot list %s", shown);
		return 1;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		*rc = rk_error_errno(err, RK_EIO, errno, "cannot list %s", shown);
		return 1;
	}
	size_t cap = 16, len = 0;
	struct rk_file_entry *v = rk_xcalloc(cap, sizeof(*v));
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue; /* removed meanwhile */
		if (len == cap)
			v = rk_xrealloc(v, (cap *= 2) * sizeof(*v));
		fill_entry(&v[len++], de->d_name, &st);
	}
	closedir(d);
	qsort(v, len, sizeof(*v), cmp_entries);
	*out = v;
	*n = len;
	*rc = 0;
	return 1;
}

/* A missing path, a non-directory and a refused listing from the helper
 * scripts below. */
#define X_MISSING 44
#define X_NOTDIR 45
#define X_TOOLARGE 46
#define X_ISDIR 47
#define X_SPECIAL 48

static int list_container(const char *container, const char *cpath, struct rk_file_entry **out, size_t *n,
			  struct rk_error *err)
{
	static const char script[] = "cd -- \"$1\" 2>/dev/null || { [ -e \"$1\" ] && exit 45; exit 44; }; "
				     "exec find . -mindepth 1 -maxdepth 1 -printf '%y %s %T@ %m %P\\0'";
	const char *args[] = {cpath, NULL};
	struct rk_buf o, e;
	rk_buf_init(&o);
	rk_buf_init(&e);
	int code = 0;
	int rc = run_sh(container, script, args, 64u << 20, &o, &e, &code, err);
	if (rc == 0 && code == X_MISSING)
		rc = rk_error_set(err, RK_ENOTFOUND, "computer directory not found: %s", cpath);
	else if (rc == 0 && code == X_NOTDIR)
		rc = rk_error_set(err, RK_EINVALID, "computer path is not a directory: %s", cpath);
	else if (rc == 0 && code != 0)
		rc = rk_error_set(err, RK_EFAILED, "cannot list %s in the computer: %s", cpath, e.data);
	if (rc == 0) {
		size_t cap = 16, len = 0;
		struct rk_file_entry *v = rk_xcalloc(cap, sizeof(*v));
		for (size_t off = 0; off < o.len;) {
			const char *rec = o.data + off;
			size_t rl = strnlen(rec, o.len - off);
			off += rl + 1;
			char type = 0;
			unsigned long long size = 0;
			double mtime = 0;
			unsigned mode = 0;
			int used = 0;
			if (sscanf(rec, "%c %llu %lf %o %n", &type, &size, &mtime, &mode, &used) < 4 || !used)
				continue;
			if (len == cap)
				v = rk_xrealloc(v, (cap *= 2) * sizeof(*v));
			struct rk_file_entry *fe = &v[len++];
			fe->name = rk_xstrdup(rec + used);
			fe->type = type == 'f'	 ? RK_FILE_REGULAR
				   : type == 'd' ? RK_FILE_DIR
				   : type == 'l' ? RK_FILE_LINK
						 : RK_FILE_OTHER;
			fe->size = type == 'd' ? 0 : size;
			fe->mtime_ms = (int64_t)(mtime * 1000.0);
			fe->executable = type == 'f' && (mode & 0111);
		}
		qsort(v, len, sizeof(*v), cmp_entries);
		*out = v;
		*n = len;
	}
	rk_buf_release(&o);
	rk_buf_release(&e);
	return rc;
}

static int docker_file_list(const struct rk_machine *m, const char *path, struct rk_file_entry **out, size_t *n,
			    struct rk_error *err)
{
	*out = NULL;
	*n = 0;
	char *rel = workspace_rel(path);
	int rc = 0;
	if (rel && list_host(m, rel, path, out, n, &rc, err)) {
		free(rel);
		return rc;
	}
	free(rel);
	char *id = NULL;
	rc = container_of(m, &id, err);
	if (rc == 0) {
		char *cpath = container_path(path);
		rc = list_container(id, cpath, out, n, err);
		free(cpath);
	}
	free(id);
	return rc;
}

static int too_large(struct rk_error *err, size_t max_bytes)
{
	return rk_error_set(err, RK_ETOOLARGE, "computer file exceeds %zu bytes", max_bytes);
}

static int read_host(const struct rk_machine *m, const char *rel, const char *shown, size_t max_bytes,
		     struct rk_buf *out, int *rc, struct rk_error *err)
{
	int root = open_root(m, err);
	if (root < 0) {
		*rc = root;
		return 1;
	}
	/* held by an O_PATH fd, checked, then reopened: a FIFO, a socket or a
	 * device is refused, never opened to block on */
	int pfd = open_beneath(root, rel, O_PATH, 0);
	int e = errno;
	close(root);
	if (pfd < 0) {
		if (resolve_elsewhere(e))
			return 0;
		*rc = e == ENOENT ? rk_error_set(err, RK_ENOTFOUND, "computer file not found: %s", shown)
				  : rk_error_errno(err, RK_EIO, e, "cannot read %s", shown);
		return 1;
	}
	struct stat st;
	int fd = -1;
	if (fstat(pfd, &st) == 0 && S_ISDIR(st.st_mode)) {
		*rc = rk_error_set(err, RK_EINVALID, "computer path is a directory: %s", shown);
	} else if ((fd = rk_fs_reopen_regular(pfd, shown, &st, err)) < 0) {
		*rc = fd;
	} else if ((uint64_t)st.st_size > max_bytes) {
		*rc = too_large(err, max_bytes);
	} else {
		size_t start = out->len;
		char chunk[65536];
		*rc = 0;
		for (;;) {
			ssize_t r = rk_fs_read_fd(fd, chunk, sizeof(chunk));
			if (r < 0) {
				*rc = rk_error_errno(err, RK_EIO, errno, "cannot read %s", shown);
				break;
			}
			if (r == 0)
				break;
			if (out->len - start + (size_t)r > max_bytes) {
				out->len = start;
				out->data[start] = '\0';
				*rc = too_large(err, max_bytes);
				break;
			}
			rk_buf_add(out, chunk, (size_t)r);
		}
	}
	if (fd >= 0)
		close(fd);
	close(pfd);
	return 1;
}

static int read_container(const char *container, const char *cpath, size_t max_bytes, struct rk_buf *out,
			  struct rk_error *err)
{
	/* refuses an oversized file before sending any of it */
	/* and a FIFO, a socket or a device (anything but a regular file) before
	 * cat could block on it; cat reads without waiting for a writer even if
	 * one is swapped in after the test (dd iflag=nonblock) */
	static const char script[] = "[ -e \"$1\" ] || exit 44; [ -d \"$1\" ] && exit 47; "
				     "[ -f \"$1\" ] || { stat -L -c %F -- \"$1\" >&2; exit 48; }; "
				     "s=$(stat -L -c %s -- \"$1\") || exit 1; [ \"$s\" -gt \"$2\" ] && exit 46; "
				     "exec dd if=\"$1\" iflag=nonblock bs=65536 status=none";
	char max[32];
	snprintf(max, sizeof(max), "%zu", max_bytes);
	const char *args[] = {cpath, max, NULL};
	struct rk_buf o, e;
	rk_buf_init(&o);
	rk_buf_init(&e);
	int code = 0;
	int rc = run_sh(container, script, args, max_bytes, &o, &e, &code, err);
	if (rc == -RK_ETOOLARGE || (rc == 0 && code == X_TOOLARGE))
		rc = too_large(err, max_bytes);
	else if (rc == 0 && code == X_MISSING)
		rc = rk_error_set(err, RK_ENOTFOUND, "computer file not found: %s", cpath);
	else if (rc == 0 && code == X_ISDIR)
		rc = rk_error_set(err, RK_EINVALID, "computer path is a directory: %s", cpath);
	else if (rc == 0 && code == X_SPECIAL)
		rc = rk_error_set(err, RK_EINVALID, "%s is not a regular file: it is %.*s", cpath,
				  (int)strcspn(e.data ? e.data : "", "\n"), e.data ? e.data : "special");
	else if (rc == 0 && code != 0)
		rc = rk_error_set(err, RK_EFAILED, "cannot read %s in the computer: %s", cpath, e.data);
	if (rc == 0)
		rk_buf_add(out, o.data, o.len);
	rk_buf_release(&o);
	rk_buf_release(&e);
	return rc;
}

static int docker_file_read(const struct rk_machine *m, const char *path, size_t max_bytes, struct rk_buf *out,
			    struct rk_error *err)
{
	char *rel = workspace_rel(path);
	int rc = 0;
	if (rel && *rel && read_host(m, rel, path, max_bytes, out, &rc, err)) {
		free(rel);
		return rc;
	}
	free(rel);
	char *id = NULL;
	rc = container_of(m, &id, err);
	if (rc == 0) {
		char *cpath = container_path(path);
		rc = read_container(id, cpath, max_bytes, out, err);
		free(cpath);
	}
	free(id);
	return rc;
}

/* As root: the parent dirs made (owned by uid 1000) component by component
 * without following any symlink, then a temp file renamed over the name,
 * which replaces a final symlink instead of writing through it. */
static int write_host(const struct rk_machine *m, const char *rel, const char *shown, const void *data, size_t len,
		      int executable, int *rc, struct rk_error *err)
{
	int dfd = open_root(m, err);
	if (dfd < 0) {
		*rc = dfd;
		return 1;
	}
	char *copy = rk_xstrdup(rel);
	char *name = copy, *slash;
	int handled = 1;
	*rc = 0;
	while ((slash = strchr(name, '/'))) {
		*slash = '\0';
		int next = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT) {
			if (mkdirat(dfd, name, 0755) != 0 && errno != EEXIST) {
				*rc = rk_error_errno(err, RK_EIO, errno, "cannot create the directories of %s", shown);
				goto out;
			}
			if (fchownat(dfd, name, USER_UID, USER_UID, AT_SYMLINK_NOFOLLOW) != 0) {
				*rc = rk_error_errno(err, RK_EIO, errno, "cannot chown the directories of %s", shown);
				goto out;
			}
			next = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (next < 0) {
			if (errno == ELOOP || errno == ENOTDIR) {
				struct stat st;
				/* a symlinked dir: the container resolves it */
				if (errno == ELOOP ||
				    (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))) {
					handled = 0;
					goto out;
				}
				*rc = rk_error_set(err, RK_EINVALID, "a parent of %s is not a directory", shown);
				goto out;
			}
			*rc = rk_error_errno(err, RK_EIO, errno, "cannot open the directories of %s", shown);
			goto out;
		}
		close(dfd);
		dfd = next;
		name = slash + 1;
	}
	char tmp[64];
	unsigned char rnd[6];
	rk_random_bytes(rnd, sizeof(rnd));
	snprintf(tmp, sizeof(tmp), ".rakazo-write-%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
		 rnd[5]);
	mode_t mode = executable ? 0700 : 0600;
	int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0) {
		*rc = rk_error_errno(err, RK_EIO, errno, "cannot write %s", shown);
		goto out;
	}
	if (rk_fs_write_fd(fd, data, len) != 0 || fchown(fd, USER_UID, USER_UID) != 0 || fchmod(fd, mode) != 0) {
		*rc = rk_error_errno(err, RK_EIO, errno, "cannot write %s", shown);
		close(fd);
		unlinkat(dfd, tmp, 0);
		goto out;
	}
	close(fd);
	if (renameat(dfd, tmp, dfd, name) != 0) {
		int e = errno;
		unlinkat(dfd, tmp, 0);
		*rc = e == EISDIR ? rk_error_set(err, RK_EINVALID, "computer path is a directory: %s", shown)
				  : rk_error_errno(err, RK_EIO, e, "cannot write %s", shown);
	}
out:
	close(dfd);
	free(copy);
	return handled;
}

/* One-file tar for PUT /containers/{id}/archive, owned by uid 1000. */
static void one_file_tar(const char *name, const void *data, size_t len, int executable, struct rk_buf *tar)
{
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	archive_write_set_bytes_per_block(a, 0);
	size_t cap = len + 64 * 1024, used = 0;
	rk_buf_grow(tar, cap);
	archive_write_open_memory(a, tar->data, cap, &used);
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, executable ? 0700 : 0600);
	archive_entry_set_size(e, (la_int64_t)len);
	archive_entry_set_uid(e, USER_UID);
	archive_entry_set_gid(e, USER_UID);
	archive_entry_set_uname(e, "user");
	archive_entry_set_gname(e, "user");
	archive_entry_set_mtime(e, rk_now_ms() / 1000, 0);
	archive_write_header(a, e);
	if (len)
		archive_write_data(a, data, len);
	archive_entry_free(e);
	archive_write_close(a);
	archive_write_free(a);
	tar->len = used;
}

static int put_archive(const char *container, const char *dir, const struct rk_buf *tar, long *status,
		       struct rk_error *err)
{
	char *enc_id = rk_docker_urlencode(container);
	char *enc_dir = rk_docker_urlencode(dir);
	char *path = rk_xasprintf("/containers/%s/archive?path=%s", enc_id, enc_dir);
	struct rk_docker_resp r;
	rk_docker_resp_init(&r);
	struct rk_docker_call c = {
		.method = "PUT",
		.path = path,
		.content_type = "application/x-tar",
		.body = tar->data,
		.body_len = tar->len,
		.body_fd = -1,
		.reply_fd = -1,
	};
	int rc = rk_docker_call(&c, &r, err);
	*status = r.status;
	if (rc == 0 && r.status != 200 && r.status != 404)
		rc = rk_error_set(err, r.status == 403 ? RK_EDENIED : RK_EFAILED,
				  "docker cannot write into %s (HTTP %ld): %s", dir, r.status, rk_docker_message(&r));
	rk_docker_resp_release(&r);
	free(path);
	free(enc_dir);
	free(enc_id);
	return rc;
}

static int write_container(const char *container, const char *cpath, const void *data, size_t len, int executable,
			   struct rk_error *err)
{
	const char *slash = strrchr(cpath, '/');
	char *dir = slash == cpath ? rk_xstrdup("/") : rk_xstrndup(cpath, (size_t)(slash - cpath));
	const char *name = slash + 1;
	int rc = 0;
	if (!*name) {
		rc = rk_error_set(err, RK_EINVALID, "no file name in %s", cpath);
		goto out;
	}
	struct rk_buf tar;
	rk_buf_init(&tar);
	one_file_tar(name, data, len, executable, &tar);
	long status = 0;
	rc = put_archive(container, dir, &tar, &status, err);
	if (rc == 0 && status == 404) {
		/* the parent is missing: make it as the user, then again */
		static const char script[] = "mkdir -p -- \"$1\"";
		const char *args[] = {dir, NULL};
		struct rk_buf o, e;
		rk_buf_init(&o);
		rk_buf_init(&e);
		int code = 0;
		rc = run_sh(container, script, args, 65536, &o, &e, &code, err);
		if (rc == 0 && code != 0)
			rc = rk_error_set(err, RK_EFAILED, "cannot create %s in the computer: %s", dir, e.data);
		rk_buf_release(&o);
		rk_buf_release(&e);
		if (rc == 0)
			rc = put_archive(container, dir, &tar, &status, err);
		if (rc == 0 && status == 404)
			rc = rk_error_set(err, RK_ENOTFOUND, "the computer's container %.12s is gone", container);
	}
	rk_buf_release(&tar);
out:
	free(dir);
	return rc;
}

static int docker_file_write(const struct rk_machine *m, const char *path, const void *data, size_t len, int executable,
			     struct rk_error *err)
{
	char *rel = workspace_rel(path);
	int rc = 0;
	if (rel && !*rel) {
		free(rel);
		return rk_error_set(err, RK_EINVALID, "cannot write over the workspace directory itself");
	}
	if (rel && geteuid() == 0 && write_host(m, rel, path, data, len, executable, &rc, err)) {
		free(rel);
		return rc;
	}
	free(rel);
	char *id = NULL;
	rc = container_of(m, &id, err);
	if (rc == 0) {
		char *cpath = container_path(path);
		rc = write_container(id, cpath, data, len, executable, err);
		free(cpath);
	}
	free(id);
	return rc;
}

/* rm -r below dfd without following symlinks */
static int remove_at(int dfd, const char *name)
{
	if (unlinkat(dfd, name, 0) == 0)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && remove_at(dirfd(d), de->d_name) != 0)
			rc = -1;
	closedir(d);
	if (rc == 0 && unlinkat(dfd, name, AT_REMOVEDIR) != 0)
		rc = -1;
	return rc;
}

static int remove_host(const struct rk_machine *m, const char *rel, const char *shown, int *rc, struct rk_error *err)
{
	int root = open_root(m, err);
	if (root < 0) {
		*rc = root;
		return 1;
	}
	const char *slash = strrchr(rel, '/');
	char *parent = slash ? rk_xstrndup(rel, (size_t)(slash - rel)) : rk_xstrdup("");
	const char *name = slash ? slash + 1 : rel;
	int pfd = open_beneath(root, parent, O_RDONLY | O_DIRECTORY, 0);
	int e = errno;
	close(root);
	free(parent);
	if (pfd < 0) {
		if (resolve_elsewhere(e))
			return 0;
		*rc = e == ENOENT || e == ENOTDIR
			      ? rk_error_set(err, RK_ENOTFOUND, "computer file not found: %s", shown)
			      : rk_error_errno(err, RK_EIO, e, "cannot remove %s", shown);
		return 1;
	}
	struct stat st;
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		*rc = errno == ENOENT ? rk_error_set(err, RK_ENOTFOUND, "computer file not found: %s", shown)
				      : rk_error_errno(err, RK_EIO, errno, "cannot remove %s", shown);
	else if (remove_at(pfd, name) != 0)
		*rc = rk_error_errno(err, RK_EIO, errno, "cannot remove %s", shown);
	else
		*rc = 0;
	close(pfd);
	return 1;
}

static int docker_file_remove(const struct rk_machine *m, const char *path, struct rk_error *err)
{
	char *rel = workspace_rel(path);
	int rc = 0;
	if (rel && !*rel) {
		free(rel);
		return rk_error_set(err, RK_EINVALID, "cannot remove the workspace directory itself");
	}
	if (rel && remove_host(m, rel, path, &rc, err)) {
		free(rel);
		return rc;
	}
	free(rel);
	char *id = NULL;
	rc = container_of(m, &id, err);
	if (rc == 0) {
		char *cpath = container_path(path);
		static const char script[] = "[ -e \"$1\" ] || [ -L \"$1\" ] || exit 44; exec rm -rf -- \"$1\"";
		const char *args[] = {cpath, NULL};
		struct rk_buf o, e;
		rk_buf_init(&o);
		rk_buf_init(&e);
		int code = 0;
		rc = run_sh(id, script, args, 65536, &o, &e, &code, err);
		if (rc == 0 && code == X_MISSING)
			rc = rk_error_set(err, RK_ENOTFOUND, "computer file not found: %s", cpath);
		else if (rc == 0 && code != 0)
			rc = rk_error_set(err, RK_EFAILED, "cannot remove %s in the computer: %s", cpath, e.data);
		rk_buf_release(&o);
		rk_buf_release(&e);
		free(cpath);
	}
	free(id);
	return rc;
}

/* --- workspace archive ---------------------------------------------------------- */

/* The workspace as a tar owned by uid 1000, without Chromium's profile
 * locks (restored, they keep the browser from starting), and without
 * FIFOs, sockets and devices, which are never opened. */
static int docker_workspace_export(const struct rk_machine *m, int fd, struct rk_error *err)
{
	struct rk_tar_opts o = {.uid = USER_UID, .gid = USER_UID, .skip = rk_tar_skip_singleton};
	return rk_tar_write_dir(m->home_dir, fd, &o, NULL, err);
}

/* Host-side extraction (as root): the one archive reader stages and checks
 * the whole stream beside the workspace, owners become uid 1000, then it
 * moves in. */
static int import_host(const struct rk_machine *m, int fd, struct rk_error *err)
{
	int rc = prepare_dir(m->home_dir, err);
	if (rc < 0)
		return rc;
	struct rk_tar_opts o = {.uid = USER_UID, .gid = USER_UID, .skip = rk_tar_skip_singleton};
	return rk_tar_extract(fd, m->home_dir, &o, NULL, err);
}

static int docker_workspace_import(const struct rk_machine *m, int fd, struct rk_error *err)
{
	if (geteuid() == 0)
		return import_host(m, fd, err);
	/* not root: docker extracts it, as root, so it gets only what the one
	 * archive reader passed, written again owned by uid 1000 */
	char *id = NULL;
	int rc = container_of(m, &id, err);
	if (rc < 0)
		return rc;
	int clean = open(m->data_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (clean < 0) {
		rc = rk_error_errno(err, RK_EIO, errno, "cannot make a scratch file in %s", m->data_dir);
		free(id);
		return rc;
	}
	struct rk_tar_opts o = {.uid = USER_UID, .gid = USER_UID, .skip = rk_tar_skip_singleton};
	if ((rc = rk_tar_repack(fd, clean, m->data_dir, &o, err)) != 0 ||
	    (lseek(clean, 0, SEEK_SET) != 0 &&
	     (rc = rk_error_errno(err, RK_EIO, errno, "cannot rewind the archive")))) {
		close(clean);
		free(id);
		return rc;
	}
	char *enc = rk_docker_urlencode(id);
	char *path = rk_xasprintf("/containers/%s/archive?path=%s", enc, WORKSPACE);
	struct rk_docker_resp r;
	rk_docker_resp_init(&r);
	struct rk_docker_call c = {
		.method = "PUT",
		.path = path,
		.content_type = "application/x-tar",
		.body_fd = clean,
		.reply_fd = -1,
		.timeout_ms = 600000,
	};
	rc = rk_docker_call(&c, &r, err);
	if (rc == 0 && r.status != 200)
		rc = rk_error_set(err, r.status == 404 ? RK_ENOTFOUND : RK_EFAILED,
				  "docker cannot import the workspace (HTTP %ld): %s", r.status, rk_docker_message(&r));
	rk_docker_resp_release(&r);
	free(path);
	free(enc);
	free(id);
	close(clean);
	return rc;
}

/* --- desktop ----------------------------------------------------------------------- */

static int docker_display_start(const struct rk_machine *m, int display, const struct rk_display_options *opt,
				struct rk_screen_transport *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out)); /* no browser: cdp_socket stays NULL */
	if (display < 0 || display > 999)
		return rk_error_set(err, RK_EINVALID, "display number %d is out of range (0-999)", display);
	int w = opt && opt->width > 0 ? opt->width : 1280;
	int h = opt && opt->height > 0 ? opt->height : 800;
	if (w < 64 || h < 64 || w > 8192 || h > 8192)
		return rk_error_set(err, RK_EINVALID, "screen size %dx%d is out of range", w, h);
	char *profile = NULL;
	if (opt && opt->profile_dir && *opt->profile_dir)
		profile = container_path(opt->profile_dir);
	char n[16], geom[32];
	snprintf(n, sizeof(n), "%d", display);
	snprintf(geom, sizeof(geom), "%dx%d", w, h);
	char *id = NULL;
	int rc = container_of(m, &id, err);
	if (rc == 0) {
		const char *args[] = {"start", n, geom, profile ? profile : "-", NULL};
		struct rk_buf o, e;
		rk_buf_init(&o);
		rk_buf_init(&e);
		int code = 0;
		rc = run_sh(id, "exec rakazo-desktop \"$@\"", args, 65536, &o, &e, &code, err);
		if (rc == 0 && code != 0)
			rc = rk_error_set(err, RK_EFAILED, "display :%d did not start in the computer: %s", display,
					  e.len ? e.data : o.data);
		rk_buf_release(&o);
		rk_buf_release(&e);
	}
	if (rc == 0) {
		char *sock = rk_xasprintf("%s/vnc/%d.sock", m->run_dir, display);
		struct stat st;
		if (stat(sock, &st) != 0 || !S_ISSOCK(st.st_mode)) {
			rc = rk_error_set(err, RK_EUNAVAILABLE,
					  "display :%d started but its VNC socket %s is not on the host: is %s "
					  "bind-mounted at " RUN_DIR "?",
					  display, sock, m->run_dir);
			free(sock);
		} else {
			out->vnc_socket = sock;
			out->width = w;
			out->height = h;
			char *cdp = rk_xasprintf("%s/cdp/%d.sock", m->run_dir, display);
			/* the bridge binds before Chromium starts: there at once, or not at all */
			if (profile && lstat(cdp, &st) == 0 && S_ISSOCK(st.st_mode))
				out->cdp_socket = cdp;
			else
				free(cdp);
		}
	}
	free(id);
	free(profile);
	return rc;
}

static int docker_display_stop(const struct rk_machine *m, int display, struct rk_error *err)
{
	if (display < 0 || display > 999)
		return rk_error_set(err, RK_EINVALID, "display number %d is out of range (0-999)", display);
	char n[16];
	snprintf(n, sizeof(n), "%d", display);
	char *id = NULL;
	int rc = container_of(m, &id, err);
	if (rc == 0) {
		const char *args[] = {"stop", n, NULL};
		struct rk_buf o, e;
		rk_buf_init(&o);
		rk_buf_init(&e);
		int code = 0;
		rc = run_sh(id, "exec rakazo-desktop \"$@\"", args, 65536, &o, &e, &code, err);
		if (rc == 0 && code != 0)
			rc = rk_error_set(err, RK_EFAILED, "display :%d did not stop cleanly: %s", display, e.data);
		rk_buf_release(&o);
		rk_buf_release(&e);
	}
	free(id);
	return rc;
}

const struct rk_provider_ops rk_provider_docker = {
	.name = "docker",
	.caps = DOCKER_CAPS,
	.summary = "containers on the local docker daemon (rakazo-computer image, no network by default)",
	.check = docker_check,
	.image_check = docker_image_check,
	.provision = docker_provision,
	.status = docker_status,
	.pause = docker_pause,
	.resume = docker_resume,
	.stop = docker_stop,
	.destroy = docker_destroy,
	.exec_spawn = docker_exec_spawn,
	.file_list = docker_file_list,
	.file_read = docker_file_read,
	.file_write = docker_file_write,
	.file_remove = docker_file_remove,
	.workspace_export = docker_workspace_export,
	.workspace_import = docker_workspace_import,
	.display_start = docker_display_start,
	.display_stop = docker_display_stop,
};
