#ifndef RK_PROVIDER_H
#define RK_PROVIDER_H
/* The provider boundary: one vtable a machine backend fills. Providers hold
 * no state between calls beyond what the machine itself keeps; everything
 * they need arrives in struct rk_machine. A NULL op means "unsupported" and
 * the engine answers so itself (RK_EUNSUPPORTED). Providers include nothing
 * from engine/ above engine/util. */

#include <stddef.h>
#include <stdint.h>

#include "engine/util/buf.h"
#include "engine/util/err.h"

/* Capabilities are data, not kind checks in the engine. */
enum rk_cap {
	RK_CAP_DESKTOP = 1u << 0,      /* observe/act on a graphical display */
	RK_CAP_MULTI_SCREEN = 1u << 1, /* more than one display at a time */
	RK_CAP_TTY = 1u << 2,	       /* exec with a PTY */
	RK_CAP_PAGE_BROWSER = 1u << 3, /* DevTools page browser */
	RK_CAP_SNAPSHOTS = 1u << 4,
	RK_CAP_PERSISTENT_HOME = 1u << 5, /* the workspace survives stop */
	RK_CAP_TAKEOVER = 1u << 6,	  /* a person can take control of a screen */
	RK_CAP_VNC = 1u << 7,		  /* display_start hands a VNC transport */
	RK_CAP_PAUSE = 1u << 8,		  /* pause/resume keep memory */
	RK_CAP_HOST_HOME = 1u << 9,	  /* the workspace is m->home_dir on this host (no export/import) */
	RK_CAP_HOST_EXEC = 1u << 10,	  /* commands run on this host as this user: a test double, for the
					   * operator alone (never offered by `rakazo serve` unless named) */
	RK_CAP_LIMIT_MEMORY = 1u << 11,	  /* enforces rk_limits.memory */
	RK_CAP_LIMIT_CPUS = 1u << 12,	  /* enforces rk_limits.cpus */
	RK_CAP_LIMIT_PIDS = 1u << 13,	  /* enforces rk_limits.pids */
	RK_CAP_DIALS_IN = 1u << 14,	  /* the machine joins the server itself (rakazo pair): the server never
					   * makes, pauses or stops it, and it is offline until it connects */
};

/* A computer's resource limits. The engine fills each one the provider
 * enforces (RK_CAP_LIMIT_*) with what was asked at create, else the default
 * below; a 0 is the default too (rk_limits_defaults). A limit the provider
 * does not enforce stays 0 and means none. */
struct rk_limits {
	int64_t memory; /* bytes; swap is not added on top */
	double cpus;	/* CPUs' worth of time, e.g. 0.5 */
	int64_t pids;	/* processes and threads at once */
};

/* The defaults, for a desktop with Chromium: 4 GiB holds Xvfb, x11vnc and
 * a browser with a few heavy tabs (~1.5 GiB) with room for a build; 2 CPUs
 * (or all of a smaller host's) keep one computer from starving the host's
 * others; 1024 tasks (threads count: Chromium has many) are over ten
 * times what a desktop with a browser runs (~80) yet stop a fork bomb at
 * once. */
#define RK_LIMIT_DEFAULT_MEMORY (4LL << 30)
#define RK_LIMIT_DEFAULT_CPUS 2.0
#define RK_LIMIT_DEFAULT_PIDS 1024

/* What the engine tells a provider about the computer at hand. All strings
 * are owned by the engine and live for the duration of the call. */
struct rk_machine {
	const char *computer_id;
	const char *home_key;
	const char *data_dir;
	const char *home_dir;	  /* host copy of the workspace: DATA_DIR/homes/<home-key> */
	const char *run_dir;	  /* host dir for sockets and state: DATA_DIR/run/<computer-id> */
	const char *ref;	  /* opaque provider ref from the last provision, or NULL */
	const char *options_json; /* provider options given at create ({"network":"none",...}), or NULL */
	struct rk_limits limits;  /* see struct rk_limits; all 0 when the provider enforces none */
};

struct rk_provision_result {
	char *ref;    /* malloc'd; owned by the caller */
	int fresh;    /* a new, empty machine (not a reconnect) */
	int replaced; /* a ref was given but its machine was gone */
};

enum rk_machine_state {
	RK_MACHINE_RUNNING,
	RK_MACHINE_PAUSED,
	RK_MACHINE_STOPPED,
	RK_MACHINE_GONE,
};

/* --- execution ------------------------------------------------------- */

struct rk_exec_request {
	const char *command;	/* run as `bash -lc COMMAND` */
	const char *cwd;	/* NULL: the workspace; relative: inside it; absolute: as given */
	const char *const *env; /* "K=V" strings, NULL-terminated, or NULL */
	int tty;		/* with a PTY: stdout and stderr merged */
	int rows, cols;		/* PTY size when tty (defaults 24x80) */
};

struct rk_exit_status {
	int exited; /* 1 when the command ended (some providers leave it 0 when signo is set) */
	int code;   /* exit code, when it exited normally (signo 0) */
	int signo;  /* > 0 when a signal ended it; callers treat that as ended */
	int lost;   /* the machine went away: how it ended is unknown */
};

/* A running command. Providers embed struct rk_proc first in their own
 * struct; the caller owns it and frees it with ops->free. */
struct rk_proc;
struct rk_proc_ops {
	/* An fd that polls readable when output or the end may be pending. */
	int (*poll_fd)(struct rk_proc *p);
	/* Appends the output available now to out without blocking; sets *eof
	 * once the output has ended. */
	int (*read)(struct rk_proc *p, struct rk_buf *out, int *eof, struct rk_error *err);
	int (*write)(struct rk_proc *p, const void *data, size_t len, struct rk_error *err);
	int (*close_stdin)(struct rk_proc *p, struct rk_error *err);
	/* Signals the command's process group. */
	int (*signal)(struct rk_proc *p, int signo, struct rk_error *err);
	int (*resize)(struct rk_proc *p, int rows, int cols, struct rk_error *err);
	/* After eof: how the command ended (may block briefly). */
	int (*wait)(struct rk_proc *p, struct rk_exit_status *st, struct rk_error *err);
	void (*free)(struct rk_proc *p);
};
struct rk_proc {
	const struct rk_proc_ops *ops;
};

/* --- files ------------------------------------------------------------- */

enum rk_file_type { RK_FILE_REGULAR, RK_FILE_DIR, RK_FILE_LINK, RK_FILE_OTHER };

struct rk_file_entry {
	char *name; /* malloc'd; the entry's name within the listed directory */
	enum rk_file_type type;
	uint64_t size;
	int64_t mtime_ms;
	int executable;
};
void rk_file_entries_free(struct rk_file_entry *entries, size_t n);

/* --- desktop ----------------------------------------------------------- */

struct rk_display_options {
	int width, height;	 /* 0: 1280x800 */
	const char *profile_dir; /* Chromium profile, relative to the workspace; NULL: no browser */
};

struct rk_screen_transport {
	char *vnc_socket; /* malloc'd host path of the display's VNC unix socket */
	char *cdp_socket; /* malloc'd host path of its Chromium's DevTools bridge (NUL-ended
			   * JSON messages), or NULL: no browser, or none that speaks it */
	int width, height;
};

/* For providers that have no VNC transport and capture themselves. */
struct rk_frame {
	int width, height;
	unsigned char *rgb; /* malloc'd, width*height*3 */
	int cursor_x, cursor_y;
	char *window_title; /* malloc'd or NULL */
};

/* --- the vtable ---------------------------------------------------------- */

struct rk_provider_ops {
	const char *name;
	unsigned caps;
	const char *summary; /* one line for `rakazo computer providers` */

	/* Is the backend reachable at all (daemon up, credentials set)? */
	int (*check)(struct rk_error *err);
	/* Optional, for `rakazo doctor` after check() passed: is the image
	 * provision would start from there? 0 with *detail (malloc'd) naming it,
	 * RK_ENOTFOUND when it is missing (the message says how to make it). */
	int (*image_check)(char **detail, struct rk_error *err);

	/* Lifecycle. provision reconnects to m->ref when it still exists, else
	 * makes a fresh machine (replaced=1 when a ref was given). */
	int (*provision)(const struct rk_machine *m, struct rk_provision_result *out, struct rk_error *err);
	int (*status)(const struct rk_machine *m, enum rk_machine_state *out, struct rk_error *err);
	int (*pause)(const struct rk_machine *m, struct rk_error *err);
	int (*resume)(const struct rk_machine *m, struct rk_error *err);
	int (*stop)(const struct rk_machine *m, struct rk_error *err);	  /* idempotent */
	int (*destroy)(const struct rk_machine *m, struct rk_error *err); /* idempotent */

	/* Execution: starts `bash -lc` and hands back the running command. */
	int (*exec_spawn)(const struct rk_machine *m, const struct rk_exec_request *req, struct rk_proc **out,
			  struct rk_error *err);

	/* Files. Paths are normalized by the engine: relative ones are inside
	 * the workspace, absolute ones are taken as they are. */
	int (*file_list)(const struct rk_machine *m, const char *path, struct rk_file_entry **out, size_t *n,
			 struct rk_error *err);
	int (*file_read)(const struct rk_machine *m, const char *path, size_t max_bytes, struct rk_buf *out,
			 struct rk_error *err);
	int (*file_write)(const struct rk_machine *m, const char *path, const void *data, size_t len, int executable,
			  struct rk_error *err);
	int (*file_remove)(const struct rk_machine *m, const char *path, struct rk_error *err);
	/* The whole workspace as a tar stream written to fd / read from fd. */
	int (*workspace_export)(const struct rk_machine *m, int fd, struct rk_error *err);
	int (*workspace_import)(const struct rk_machine *m, int fd, struct rk_error *err);

	/* Desktop. display_start is idempotent and hands a VNC transport where
	 * the provider has RK_CAP_VNC; capture and act are for the others. */
	int (*display_start)(const struct rk_machine *m, int display, const struct rk_display_options *opt,
			     struct rk_screen_transport *out, struct rk_error *err);
	int (*display_stop)(const struct rk_machine *m, int display, struct rk_error *err);
	/* Optional, for a provider with no VNC transport whose display has an
	 * authenticated noVNC page of its own (box): starts the display as
	 * needed and hands that page's address in *url (malloc'd). It carries
	 * the desktop's secret: the engine hands it only to the screen
	 * gateway's forwarder, which reaches the desktop's websockify endpoint
	 * through it, and never shows or stores it. */
	int (*display_novnc)(const struct rk_machine *m, int display, char **url, struct rk_error *err);
	int (*capture)(const struct rk_machine *m, int display, struct rk_frame *out, struct rk_error *err);
	/* One action as strict JSON (the screen engine's schema), already validated. */
	int (*act)(const struct rk_machine *m, int display, const char *action_json, struct rk_error *err);
};

/* providers/registry.c */
extern const struct rk_provider_ops *const rk_providers[]; /* NULL-terminated */
const struct rk_provider_ops *rk_provider_find(const char *name);
/* 1 when the provider named name is known and has every capability in caps. */
int rk_provider_can(const char *name, unsigned caps);

/* Runs command (bash -lc) on m to its end or timeout_ms, keeping at most
 * max_bytes of its output (stdout and stderr) in out. A timeout kills it. */
int rk_provider_run(const struct rk_provider_ops *ops, const struct rk_machine *m, const char *command,
		    int64_t timeout_ms, size_t max_bytes, struct rk_buf *out, struct rk_exit_status *st,
		    struct rk_error *err);

/* providers/command.c: sets each limit of l that is 0 and that caps says is
 * enforced to its default (RK_LIMIT_DEFAULT_*; CPUs no more than this host
 * has); leaves the others. */
void rk_limits_defaults(unsigned caps, struct rk_limits *l);

#endif
