#ifndef RK_REMOTE_H
#define RK_REMOTE_H
/* What the remote sandbox providers (daytona, box) share: a running command
 * driven by polling a vendor API, the in-machine wrapper that gives such a
 * command its own process group, stdin with an end, and an exact exit
 * status, and the workspace as a tar stream through a vendor's file calls;
 * e2b shares the profile rule of the export (rk_profile_skips).
 *
 * A vendor fills struct rk_remote_ops for one machine; the calls here do the
 * rest. Everything stays inside providers/ (no engine module above util). */

#include <stddef.h>

#include "engine/util/buf.h"
#include "engine/util/err.h"
#include "providers/provider.h"

/* What a workspace export leaves out under .browser-profiles/<profile>/ (the
 * browser's caches and locks; the same names elsewhere travel), by name,
 * NULL-terminated. */
extern const char *const rk_profile_skips[];

struct rk_remote_ops {
	/* Runs `bash -c SCRIPT` to its end; *out gets its merged output. */
	int (*run)(void *ctx, const char *script, struct rk_buf *out, int *code, struct rk_error *err);
	/* Writes a whole file (absolute path, parents made). */
	int (*upload)(void *ctx, const char *path, const void *data, size_t len, struct rk_error *err);
	/* Reads a whole file; RK_ENOTFOUND when it is missing. */
	int (*download)(void *ctx, const char *path, size_t max_bytes, struct rk_buf *out, struct rk_error *err);
};

/* A vendor's handle on one running command, for rk_remote_proc_new. */
struct rk_remote_cmd_ops {
	/* All the command's output so far (replaced, not appended); *done when it
	 * has ended, with *code its exit code as the vendor saw it (-1: not
	 * known). RK_ENOTFOUND: the machine or the command is gone. */
	int (*poll)(void *cmd, struct rk_buf *all, int *done, int *code, struct rk_error *err);
	/* Hands data to the command's stdin, or ends it (eof). */
	int (*send)(void *cmd, const void *data, size_t len, int eof, struct rk_error *err);
	void (*free)(void *cmd);
};

/* Stdin modes of the wrapper: base64 lines on its own stdin ("." ends it), or
 * chunk files DIR/in.N it picks up in order (DIR/in.eof ends it). */
#define RK_REMOTE_STDIN_LINES "lines"
#define RK_REMOTE_STDIN_FILES "files"

/* The shell command that runs req under the wrapper, its state in dir (a
 * fresh directory under /tmp in the machine), cwd resolved against ws.
 * Returns malloc'd text. */
char *rk_remote_wrap(const struct rk_exec_request *req, const char *ws, const char *dir, const char *stdin_mode);

/* The rk_proc for a started command: a thread polls the vendor and feeds a
 * pipe the caller polls. Takes ownership of cmd (and of r_ctx: freed with
 * free_ctx). dir is the wrapper's state directory. */
struct rk_proc *rk_remote_proc_new(const struct rk_remote_ops *r, void *r_ctx, void (*free_ctx)(void *),
				   const struct rk_remote_cmd_ops *c, void *cmd, const char *dir);

/* Shell-quotes s for bash ('...'); malloc'd. */
char *rk_remote_shq(const char *s);

/* The absolute machine path of an engine path (relative: in ws). */
char *rk_remote_path(const char *ws, const char *path);

/* Files and the workspace through the ops. */
int rk_remote_file_list(const struct rk_remote_ops *r, void *ctx, const char *ws, const char *path,
			struct rk_file_entry **out, size_t *n, struct rk_error *err);
int rk_remote_file_read(const struct rk_remote_ops *r, void *ctx, const char *ws, const char *path, size_t max_bytes,
			struct rk_buf *out, struct rk_error *err);
int rk_remote_file_write(const struct rk_remote_ops *r, void *ctx, const char *ws, const char *path, const void *data,
			 size_t len, int executable, struct rk_error *err);
int rk_remote_file_remove(const struct rk_remote_ops *r, void *ctx, const char *ws, const char *path,
			  struct rk_error *err);
int rk_remote_export(const struct rk_remote_ops *r, void *ctx, const char *ws, int fd, struct rk_error *err);
int rk_remote_import(const struct rk_remote_ops *r, void *ctx, const char *ws, int fd, struct rk_error *err);

/* Base64 both ways (standard alphabet, padded). */
char *rk_remote_b64(const void *data, size_t len);
int rk_remote_unb64(const char *text, size_t len, struct rk_buf *out);

/* A PNG to packed RGB (malloc'd). */
int rk_remote_png_rgb(const void *png, size_t len, unsigned char **rgb, int *w, int *h, struct rk_error *err);

/* An extra Team screen (display index i >= 1) in the machine: Xvfb :(i+1),
 * a view-only x11vnc on port 6080+2i and a control one on 6081+2i, and its
 * capture (ImageMagick) and actions (xdotool). The shell text to run. */
char *rk_remote_screen_start_script(int index, int width, int height);
char *rk_remote_screen_stop_script(int index);
char *rk_remote_capture_script(const char *display);
/* One action (the screen engine's JSON) as xdotool calls on display; NULL
 * with err set when the action is malformed. */
char *rk_remote_act_script(const char *display, const char *action_json, struct rk_error *err);
/* Parses rk_remote_capture_script's output (base64 PNG, then "X Y" on the
 * last line) into a frame. */
int rk_remote_capture_parse(const struct rk_buf *out, struct rk_frame *f, struct rk_error *err);

#endif
