/* Shared machinery of the remote sandbox providers; see remote.h. */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>
#include <png.h>

#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/tar.h"
#include "engine/util/time.h"
#include "providers/remote.h"

/* --- small helpers --------------------------------------------------------- */

char *rk_remote_shq(const char *s)
{
	struct rk_buf b;
	rk_buf_init(&b);
	rk_buf_addc(&b, '\'');
	for (const char *p = s; *p; p++) {
		if (*p == '\'')
			rk_buf_adds(&b, "'\\''");
		else
			rk_buf_addc(&b, *p);
	}
	rk_buf_addc(&b, '\'');
	return rk_buf_detach(&b, NULL);
}

char *rk_remote_path(const char *ws, const char *path)
{
	if (!path || !*path)
		return rk_xstrdup(ws);
	if (path[0] == '/')
		return rk_xstrdup(path);
	return rk_xasprintf("%s/%s", ws, path);
}

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *rk_remote_b64(const void *data, size_t len)
{
	const unsigned char *p = data;
	char *out = rk_xmalloc((len + 2) / 3 * 4 + 1);
	size_t o = 0;
	for (size_t i = 0; i < len; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (i + 1 < len ? (unsigned)p[i + 1] << 8 : 0) |
			     (i + 2 < len ? p[i + 2] : 0);
		out[o++] = b64chars[v >> 18 & 63];
		out[o++] = b64chars[v >> 12 & 63];
		out[o++] = i + 1 < len ? b64chars[v >> 6 & 63] : '=';
		out[o++] = i + 2 < len ? b64chars[v & 63] : '=';
	}
	out[o] = 0;
	return out;
}

int rk_remote_unb64(const char *text, size_t len, struct rk_buf *out)
{
	unsigned v = 0;
	int bits = 0;
	for (size_t i = 0; i < len; i++) {
		char c = text[i];
		const char *q;
		if (c == '=' || c == '\n' || c == '\r' || c == ' ')
			continue;
		if (!c || !(q = strchr(b64chars, c)))
			return -1;
		v = v << 6 | (unsigned)(q - b64chars);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			rk_buf_addc(out, (char)(v >> bits & 0xff));
		}
	}
	return 0;
}

int rk_remote_png_rgb(const void *png, size_t len, unsigned char **rgb, int *w, int *h, struct rk_error *err)
{
	png_image img;
	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_memory(&img, png, len))
		return rk_error_set(err, RK_EFAILED, "the screenshot is not a PNG: %s", img.message);
	img.format = PNG_FORMAT_RGB;
	size_t n = PNG_IMAGE_SIZE(img);
	unsigned char *buf = rk_xmalloc(n);
	if (!png_image_finish_read(&img, NULL, buf, 0, NULL)) {
		free(buf);
		png_image_free(&img);
		return rk_error_set(err, RK_EFAILED, "cannot decode the screenshot: %s", img.message);
	}
	*rgb = buf;
	*w = (int)img.width;
	*h = (int)img.height;
	return 0;
}

/* --- the wrapper ----------------------------------------------------------- */

/* Runs `bash -lc CMD` as its own session (so a signal reaches the whole
 * group), with stdin fed from base64 lines or chunk files, stderr merged, and
 * writes DIR/pid; it exits with the command's code, or 128+N for signal N.
 * Below 128 that code is the answer and DIR goes; from 128 up it writes
 * DIR/status ("exit N" or "signal N"), since a shell cannot tell `exit 143`
 * from death by SIGTERM and the wait status can. No single quote
 * in it: it travels in '...'. */
static const char wrapper_py[] =
	"import os,sys,base64,threading,time\n"
	"d,mode,cwd,cmd=sys.argv[1:5]\n"
	"os.makedirs(d,exist_ok=True)\n"
	"r,w=os.pipe()\n"
	"pid=os.fork()\n"
	"if pid==0:\n"
	" os.setsid();os.dup2(r,0);os.close(r);os.close(w);os.dup2(1,2)\n"
	" for kv in sys.argv[5:]:\n"
	"  k,_,v=kv.partition(\"=\");os.environ[k]=v\n"
	" try:os.chdir(cwd)\n"
	" except OSError as e:\n"
	"  os.write(2,(\"rakazo: cannot enter %s: %s\\n\"%(cwd,e.strerror)).encode());os._exit(126)\n"
	" os.execvp(\"bash\",[\"bash\",\"-lc\",cmd])\n"
	"os.close(r)\n"
	"open(d+\"/pid.tmp\",\"w\").write(str(pid));os.rename(d+\"/pid.tmp\",d+\"/pid\")\n"
	"def put(b):\n"
	" while b:\n"
	"  n=os.write(w,b);b=b[n:]\n"
	"def feed():\n"
	" try:\n"
	"  if mode==\"lines\":\n"
	"   for l in sys.stdin.buffer:\n"
	"    l=l.strip()\n"
	"    if l==b\".\":break\n"
	"    put(base64.b64decode(l))\n"
	"  else:\n"
	"   i=0\n"
	"   while True:\n"
	"    p=\"%s/in.%d\"%(d,i)\n"
	"    if os.path.exists(p):\n"
	"     b=open(p,\"rb\").read();os.remove(p);put(b);i+=1\n"
	"    elif os.path.exists(d+\"/in.eof\"):\n"
	"     if not os.path.exists(p):break\n"
	"    else:time.sleep(0.02)\n"
	" except Exception:pass\n"
	" try:os.close(w)\n"
	" except OSError:pass\n"
	"threading.Thread(target=feed,daemon=True).start()\n"
	"_,st=os.waitpid(pid,0)\n"
	"sig=os.WIFSIGNALED(st)\n"
	"res=(\"signal %d\"%os.WTERMSIG(st)) if sig else (\"exit %d\"%os.WEXITSTATUS(st))\n"
	"code=128+os.WTERMSIG(st) if sig else os.WEXITSTATUS(st)\n"
	"if code<128:\n"
	" import shutil;shutil.rmtree(d,ignore_errors=True)\n"
	"else:\n"
	" open(d+\"/status.tmp\",\"w\").write(res);os.rename(d+\"/status.tmp\",d+\"/status\")\n"
	"os._exit(code)\n";

char *rk_remote_wrap(const struct rk_exec_request *req, const char *ws, const char *dir, const char *stdin_mode)
{
	char *cwd = !req->cwd || !*req->cwd ? rk_xstrdup(ws) : rk_remote_path(ws, req->cwd);
	struct rk_buf b;
	rk_buf_init(&b);
	rk_buf_printf(&b, "python3 -c '%s'", wrapper_py);
	const char *args[] = {dir, stdin_mode, cwd, req->command ? req->command : "true"};
	for (size_t i = 0; i < 4; i++) {
		char *q = rk_remote_shq(args[i]);
		rk_buf_printf(&b, " %s", q);
		free(q);
	}
	for (size_t i = 0; req->env && req->env[i]; i++) {
		char *q = rk_remote_shq(req->env[i]);
		rk_buf_printf(&b, " %s", q);
		free(q);
	}
	free(cwd);
	return rk_buf_detach(&b, NULL);
}

/* --- a running command ------------------------------------------------------ */

struct rproc {
	struct rk_proc base;
	const struct rk_remote_ops *r;
	void *r_ctx;
	void (*free_ctx)(void *);
	const struct rk_remote_cmd_ops *c;
	void *cmd;
	char *dir;
	int fds[2]; /* [0]: the caller's end; [1]: the thread's */
	pthread_t thread;
	int joined;
	pthread_mutex_t mu;
	int stop;
	struct rk_exit_status st;
	int stdin_closed;
};

static int rp_stopping(struct rproc *p)
{
	pthread_mutex_lock(&p->mu);
	int s = p->stop;
	pthread_mutex_unlock(&p->mu);
	return s;
}

static void rp_status(struct rproc *p, int code_seen)
{
	if (code_seen >= 0 && code_seen < 128) { /* exact, and the wrapper cleaned up */
		p->st.exited = 1;
		p->st.code = code_seen;
		return;
	}
	char *q = rk_remote_shq(p->dir);
	char *script = rk_xasprintf("cat %s/status 2>/dev/null; rm -rf %s", q, q);
	struct rk_buf out;
	struct rk_error e;
	int code = 0;
	rk_buf_init(&out);
	int n = 0;
	if (p->r->run(p->r_ctx, script, &out, &code, &e) == 0) {
		if (sscanf(out.data, "exit %d", &n) == 1) {
			p->st.exited = 1;
			p->st.code = n;
		} else if (sscanf(out.data, "signal %d", &n) == 1) {
			p->st.exited = 1;
			p->st.signo = n;
		}
	}
	if (!p->st.exited)
		p->st.lost = 1;
	rk_buf_release(&out);
	free(script);
	free(q);
}

static void *rp_thread(void *arg)
{
	struct rproc *p = arg;
	struct rk_buf all;
	rk_buf_init(&all);
	size_t sent = 0;
	int idle = 0, failures = 0;
	for (;;) {
		if (rp_stopping(p))
			break;
		int done = 0, code_seen = -1;
		struct rk_error e;
		int rc = p->c->poll(p->cmd, &all, &done, &code_seen, &e);
		if (rc < 0) {
			/* a gone machine ends it; a passing failure is tried again */
			if (e.code == RK_ENOTFOUND || ++failures >= 20) {
				p->st.lost = 1;
				break;
			}
			rk_sleep_ms(100);
			continue;
		}
		failures = 0;
		if (all.len > sent) {
			size_t len = all.len - sent;
			const char *d = all.data + sent;
			while (len > 0) {
				ssize_t w = send(p->fds[1], d, len, MSG_NOSIGNAL);
				if (w < 0 && errno == EINTR)
					continue;
				if (w <= 0)
					goto out; /* the caller went away */
				d += w;
				len -= (size_t)w;
			}
			sent = all.len;
			idle = 0;
		} else {
			idle++;
		}
		if (done) {
			rp_status(p, code_seen);
			break;
		}
		rk_sleep_ms(idle < 10 ? 20 : idle < 50 ? 50 : 150);
	}
out:
	rk_buf_release(&all);
	shutdown(p->fds[1], SHUT_WR);
	return NULL;
}

static int rp_poll_fd(struct rk_proc *base)
{
	return ((struct rproc *)base)->fds[0];
}

static int rp_read(struct rk_proc *base, struct rk_buf *out, int *eof, struct rk_error *err)
{
	struct rproc *p = (struct rproc *)base;
	*eof = 0;
	char buf[65536];
	for (;;) {
		ssize_t n = recv(p->fds[0], buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0) {
			rk_buf_add(out, buf, (size_t)n);
			continue;
		}
		if (n == 0) {
			*eof = 1;
			return 0;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return rk_error_errno(err, RK_EIO, errno, "cannot read the command's output");
	}
}

static int rp_write(struct rk_proc *base, const void *data, size_t len, struct rk_error *err)
{
	struct rproc *p = (struct rproc *)base;
	if (p->stdin_closed)
		return rk_error_set(err, RK_EINVALID, "the command's stdin is closed");
	return len ? p->c->send(p->cmd, data, len, 0, err) : 0;
}

static int rp_close_stdin(struct rk_proc *base, struct rk_error *err)
{
	struct rproc *p = (struct rproc *)base;
	if (p->stdin_closed)
		return 0;
	p->stdin_closed = 1;
	return p->c->send(p->cmd, NULL, 0, 1, err);
}

static int rp_signal(struct rk_proc *base, int signo, struct rk_error *err)
{
	struct rproc *p = (struct rproc *)base;
	if (signo <= 0 || signo >= 65)
		return rk_error_set(err, RK_EINVALID, "signal %d is out of range", signo);
	char *q = rk_remote_shq(p->dir);
	/* the pid file appears just after the command starts */
	char *script = rk_xasprintf("for i in $(seq 100); do [ -s %s/pid ] && break; sleep 0.05; done; "
				    "[ -s %s/pid ] || exit 44; kill -s %d -- -$(cat %s/pid) 2>/dev/null || true",
				    q, q, signo, q);
	struct rk_buf out;
	rk_buf_init(&out);
	int code = 0;
	int rc = p->r->run(p->r_ctx, script, &out, &code, err);
	if (rc == 0 && code == 44)
		rc = rk_error_set(err, RK_ENOTFOUND, "the command has no process to signal");
	rk_buf_release(&out);
	free(script);
	free(q);
	return rc;
}

static int rp_resize(struct rk_proc *base, int rows, int cols, struct rk_error *err)
{
	return rk_error_set(err, RK_EUNSUPPORTED, "this command has no terminal to resize");
}

static void rp_join(struct rproc *p)
{
	if (!p->joined) {
		pthread_join(p->thread, NULL);
		p->joined = 1;
	}
}

static int rp_wait(struct rk_proc *base, struct rk_exit_status *st, struct rk_error *err)
{
	struct rproc *p = (struct rproc *)base;
	rp_join(p);
	*st = p->st;
	return 0;
}

static void rp_free(struct rk_proc *base)
{
	struct rproc *p = (struct rproc *)base;
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_mutex_unlock(&p->mu);
	shutdown(p->fds[0], SHUT_RDWR); /* a thread blocked on a full socket wakes */
	rp_join(p);
	close(p->fds[0]);
	close(p->fds[1]);
	p->c->free(p->cmd);
	if (p->free_ctx)
		p->free_ctx(p->r_ctx);
	pthread_mutex_destroy(&p->mu);
	free(p->dir);
	free(p);
}

static const struct rk_proc_ops rproc_ops = {
	.poll_fd = rp_poll_fd,
	.read = rp_read,
	.write = rp_write,
	.close_stdin = rp_close_stdin,
	.signal = rp_signal,
	.resize = rp_resize,
	.wait = rp_wait,
	.free = rp_free,
};

struct rk_proc *rk_remote_proc_new(const struct rk_remote_ops *r, void *r_ctx, void (*free_ctx)(void *),
				   const struct rk_remote_cmd_ops *c, void *cmd, const char *dir)
{
	struct rproc *p = rk_xcalloc(1, sizeof(*p));
	p->base.ops = &rproc_ops;
	p->r = r;
	p->r_ctx = r_ctx;
	p->free_ctx = free_ctx;
	p->c = c;
	p->cmd = cmd;
	p->dir = rk_xstrdup(dir);
	pthread_mutex_init(&p->mu, NULL);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p->fds) != 0)
		abort(); /* out of descriptors: nothing sensible to hand back */
	if (pthread_create(&p->thread, NULL, rp_thread, p) != 0)
		abort();
	return &p->base;
}

/* --- files ------------------------------------------------------------------ */

static int run_checked(const struct rk_remote_ops *r, void *ctx, const char *script, struct rk_buf *out, int *code,
		       struct rk_error *err)
{
	rk_buf_reset(out);
	return r->run(ctx, script, out, code, err);
}

static const char list_py[] = "import os,sys,json,stat\n"
			      "d=sys.argv[1]\n"
			      "if not os.path.isdir(d):raise SystemExit(45 if os.path.lexists(d) else 44)\n"
			      "out=[]\n"
			      "for n in sorted(os.listdir(d)):\n"
			      " s=os.lstat(os.path.join(d,n))\n"
			      " t=\"d\" if stat.S_ISDIR(s.st_mode) else \"f\" if stat.S_ISREG(s.st_mode) else "
			      "\"l\" if stat.S_ISLNK(s.st_mode) else \"o\"\n"
			      " out.append([n,t,s.st_size,int(s.st_mtime*1000),1 if s.st_mode&0o111 else 0])\n"
			      "print(json.dumps(out))\n";

int rk_remote_file_list(const struct rk_remote_ops *r, void *ctx, const char *ws, const char *path,
			struct rk_file_entry **out, size_t *n, struct rk_error *err)
{
	*out = NULL;
	*n = 0;
	char *abs = rk_remote_path(ws, path);
	char *q = rk_remote_shq(abs);
	char *script = rk_xasprintf("python3 -c '%s' %s", list_py, q);
	struct rk_buf o;
	rk_buf_init(&o);
	int code = 0;
	int rc = run_checked(r, ctx, script, &o, &code, err);
	if (rc == 0 && code == 44)
		rc = rk_error_set(err, RK_ENOTFOUND, "no such directory: %s", path && *path ? path : ".");
	else if (rc == 0 && code == 45)
		rc = rk_error_set(err, RK_EINVALID, "not a directory: %s", path);
	else if (rc == 0 && code != 0)
		rc = rk_error_set(err, RK_EFAILED, "cannot list %s: %.200s", abs, o.data);
	cJSON *doc = rc == 0 ? rk_json_parse(o.data, o.len, "file list", err) : NULL;
	if (rc == 0 && !cJSON_IsArray(doc))
		rc = rk_error_set(err, RK_EFAILED, "the machine's file list is not an array");
	if (rc == 0) {
		size_t cnt = (size_t)cJSON_GetArraySize(doc);
		struct rk_file_entry *es = rk_xcalloc(cnt ? cnt : 1, sizeof(*es));
		size_t i = 0;
		for (const cJSON *e = doc->child; e; e = e->next) {
			const cJSON *nm = cJSON_GetArrayItem(e, 0), *t = cJSON_GetArrayItem(e, 1);
			if (!cJSON_IsString(nm) || !cJSON_IsString(t))
				continue;
			es[i].name = rk_xstrdup(nm->valuestring);
			char k = t->valuestring[0];
			es[i].type = k == 'd'	? RK_FILE_DIR
				     : k == 'f' ? RK_FILE_REGULAR
				     : k == 'l' ? RK_FILE_LINK
						: RK_FILE_OTHER;
			es[i].size = (uint64_t)cJSON_GetNumberValue(cJSON_GetArrayItem(e, 2));
			es[i].mtime_ms = (int64_t)cJSON_GetNumberValue(cJSON_GetArrayItem(e, 3));
			es[i].executable = es[i].type == RK_FILE_REGULAR &&
					   cJSON_GetNumberValue(cJSON_GetArrayItem(e, 4)) > 0;
			i++;
		}
		*out = es;
		*n = i;
	}
	cJSON_Delete(doc);
	rk_buf_release(&o);
	free(script);
	free(q);
	free(abs);
	return rc;
}

int rk_remote_file_read(const struct rk_remote_ops *r, void *ctx, const char *ws, const char *path, size_t max_bytes,
			struct rk_buf *out, struct rk_error *err)
{
	char *abs = rk_remote_path(ws, path);
	int rc = r->download(ctx, abs, max_bytes, out, err);
	free(abs);
	return rc;
}

/* The move into place refuses a target whose real path leaves the
 * workspace (a link the machine made), and sets the mode. */
int rk_remote_file_write(const struct rk_remote_ops *r, void *ctx, const char *ws, const char *path, const void *data,
			 size_t len, int executable, struct rk_error *err)
{
	char *abs = rk_remote_path(ws, path);
	char *id = rk_id_new("up");
	char *tmp = rk_xasprintf("/tmp/rakazo-%s", id);
	int rc = r->upload(ctx, tmp, data, len, err);
	if (rc == 0) {
		char *qa = rk_remote_shq(abs), *qt = rk_remote_shq(tmp), *qw = rk_remote_shq(ws);
		char *script = rk_xasprintf(
			"t=%s; w=%s; mkdir -p \"$w\" \"$(dirname \"$t\")\" || exit 1; r=$(realpath -m -- \"$t\") || exit 1; "
			"wr=$(realpath -m -- \"$w\"); case \"$r\" in \"$wr\"/*) ;; *) rm -f %s; exit 40 ;; esac; "
			"[ -d \"$r\" ] && { rm -f %s; exit 41; }; chmod %s %s && mv -f %s \"$r\"",
			qa, qw, qt, qt, executable ? "700" : "600", qt, qt);
		if (abs[0] == '/' && strncmp(abs, ws, strlen(ws)) != 0) {
			/* an absolute path outside the workspace is taken as given */
			free(script);
			script = rk_xasprintf("mkdir -p \"$(dirname %s)\" && chmod %s %s && mv -f %s %s", qa,
					      executable ? "700" : "600", qt, qt, qa);
		}
		struct rk_buf o;
		rk_buf_init(&o);
		int code = 0;
		rc = r->run(ctx, script, &o, &code, err);
		if (rc == 0 && code == 40)
			rc = rk_error_set(err, RK_EDENIED, "%s leads out of the workspace (a symbolic link)", path);
		else if (rc == 0 && code == 41)
			rc = rk_error_set(err, RK_EINVALID, "%s is a directory", path);
		else if (rc == 0 && code != 0)
			rc = rk_error_set(err, RK_EFAILED, "cannot write %s: %.200s", path, o.data);
		rk_buf_release(&o);
		free(script);
		free(qa);
		free(qt);
		free(qw);
	}
	free(tmp);
	free(id);
	free(abs);
	return rc;
}

int rk_remote_file_remove(const struct rk_remote_ops *r, void *ctx, const char *ws, const char *path,
			  struct rk_error *err)
{
	char *abs = rk_remote_path(ws, path);
	char *q = rk_remote_shq(abs);
	char *script = rk_xasprintf("p=%s; [ -e \"$p\" ] || [ -L \"$p\" ] || exit 44; rm -rf -- \"$p\"", q);
	struct rk_buf o;
	rk_buf_init(&o);
	int code = 0;
	int rc = r->run(ctx, script, &o, &code, err);
	if (rc == 0 && code == 44)
		rc = rk_error_set(err, RK_ENOTFOUND, "no such file: %s", path);
	else if (rc == 0 && code != 0)
		rc = rk_error_set(err, RK_EFAILED, "cannot remove %s: %.200s", path, o.data);
	rk_buf_release(&o);
	free(script);
	free(q);
	free(abs);
	return rc;
}

/* --- the workspace ----------------------------------------------------------- */

#define TAR_MAX ((size_t)4 << 30)

/* The reference's rule: the browser's caches and locks under each profile
 * (e2b's export uses it too). */
const char *const rk_profile_skips[] = {
	"Cache",
	"Code Cache",
	"GPUCache",
	"GrShaderCache",
	"ShaderCache",
	"DawnGraphiteCache",
	"DawnWebGPUCache",
	"Crashpad",
	"BrowserMetrics",
	"DevToolsActivePort",
	"SingletonCookie",
	"SingletonLock",
	"SingletonSocket",
	".parentlock",
	"lock",
	NULL,
};

/* Names without a "./" prefix (the engine's path rule refuses "."), no
 * browser lock files (Singleton*) anywhere, no profile caches. */
int rk_remote_export(const struct rk_remote_ops *r, void *ctx, const char *ws, int fd, struct rk_error *err)
{
	char *id = rk_id_new("exp");
	char *tmp = rk_xasprintf("/tmp/rakazo-%s.tar", id);
	char *qw = rk_remote_shq(ws), *qt = rk_remote_shq(tmp);
	struct rk_buf prune;
	rk_buf_init(&prune);
	rk_buf_adds(&prune, "-name 'Singleton*'");
	for (size_t i = 0; rk_profile_skips[i]; i++)
		rk_buf_printf(&prune, " -o -path './.browser-profiles/*/%s'", rk_profile_skips[i]);
	char *script = rk_xasprintf("mkdir -p %s && cd %s && find . -mindepth 1 \\( %s \\) -prune -o "
				    "-mindepth 1 -printf '%%P\\0' | tar --null --no-recursion -T - -cf %s",
				    qw, qw, prune.data, qt);
	rk_buf_release(&prune);
	struct rk_buf o;
	rk_buf_init(&o);
	int code = 0;
	int rc = r->run(ctx, script, &o, &code, err);
	if (rc == 0 && code != 0)
		rc = rk_error_set(err, RK_EFAILED, "cannot pack the workspace in the machine: %.200s", o.data);
	rk_buf_reset(&o);
	if (rc == 0)
		rc = r->download(ctx, tmp, TAR_MAX, &o, err);
	if (rc == 0 && rk_fs_write_fd(fd, o.data, o.len) != 0)
		rc = rk_error_errno(err, RK_EIO, errno, "cannot write the workspace stream");
	free(script);
	script = rk_xasprintf("rm -f %s", qt);
	struct rk_buf o2;
	struct rk_error e2;
	rk_buf_init(&o2);
	r->run(ctx, script, &o2, &code, &e2);
	rk_buf_release(&o2);
	rk_buf_release(&o);
	free(script);
	free(qw);
	free(qt);
	free(tmp);
	free(id);
	return rc;
}

/* The stream is checked here first by the one archive reader (everything
 * it refuses refuses the whole stream: no absolute names, no "..", no
 * escaping links, no devices, FIFOs or sockets, no setuid bits) and written
 * again from what came out, then sent as one archive and unpacked in place.
 * Import never deletes what the machine already has. */
int rk_remote_import(const struct rk_remote_ops *r, void *ctx, const char *ws, int fd, struct rk_error *err)
{
	struct rk_buf data;
	rk_buf_init(&data);
	int rc = rk_tar_repack_buf(fd, &data, NULL, NULL, err);
	char *id = rk_id_new("imp");
	char *tmp = rk_xasprintf("/tmp/rakazo-%s.tar", id);
	if (rc == 0)
		rc = r->upload(ctx, tmp, data.data, data.len, err);
	if (rc == 0) {
		char *qw = rk_remote_shq(ws), *qt = rk_remote_shq(tmp);
		char *script = rk_xasprintf("mkdir -p %s && tar -C %s --no-same-owner -xf %s; s=$?; rm -f %s; exit $s",
					    qw, qw, qt, qt);
		struct rk_buf o;
		rk_buf_init(&o);
		int code = 0;
		rc = r->run(ctx, script, &o, &code, err);
		if (rc == 0 && code != 0)
			rc = rk_error_set(err, RK_EFAILED, "cannot unpack the workspace in the machine: %.200s",
					  o.data);
		rk_buf_release(&o);
		free(script);
		free(qw);
		free(qt);
	}
	rk_buf_release(&data);
	free(tmp);
	free(id);
	return rc;
}

/* --- extra Team screens ------------------------------------------------------- */

/* Pid files hold "PID STARTTIME" (field 22 of /proc/PID/stat): /tmp outlives
 * a sandbox stop, so a pid alone may name another process after the next start. */
#define STARTED_FN                                                                                                     \
	"started() { s=$(cat /proc/$1/stat 2>/dev/null) || return 1; s=${s##*) }; set -- $s; echo \"${20}\"; }\n"

char *rk_remote_screen_start_script(int index, int width, int height)
{
	int n = index + 1, view = 6080 + 2 * index, control = 6081 + 2 * index;
	return rk_xasprintf(
		"d=/tmp/rakazo/display-%d; mkdir -p $d; export DISPLAY=:%d\n" STARTED_FN
		"alive() { [ -f $d/$1.pid ] && read -r p t <$d/$1.pid && [ -n \"$t\" ] && "
		"[ \"$(started $p)\" = \"$t\" ]; }\n"
		"spawn() { n=$1; shift; alive $n && return 0; setsid \"$@\" >$d/$n.log 2>&1 </dev/null & "
		"echo \"$! $(started $!)\" >$d/$n.pid; }\n"
		"spawn xvfb Xvfb :%d -screen 0 %dx%dx24 -nolisten tcp\n"
		"i=0; until xdpyinfo >/dev/null 2>&1; do i=$((i+1)); [ $i -ge 200 ] && { cat $d/xvfb.log >&2; exit 1; }; "
		"sleep 0.05; done\n"
		"mkdir -p /tmp/openbox-%d; HOME=/tmp/openbox-%d spawn wm openbox\n"
		"spawn view x11vnc -display :%d -rfbport %d -viewonly -forever -shared -nopw -quiet\n"
		"spawn control x11vnc -display :%d -rfbport %d -forever -shared -nopw -quiet\n"
		"echo RAKAZO_SCREEN_INDEX=%d VIEW_PORT=%d CONTROL_PORT=%d\n",
		n, n, n, width, height, n, n, n, view, n, control, index, view, control);
}

char *rk_remote_screen_stop_script(int index)
{
	int n = index + 1;
	return rk_xasprintf(STARTED_FN
			    "d=/tmp/rakazo/display-%d; for p in control view wm xvfb; do "
			    "[ -f $d/$p.pid ] && read -r q t <$d/$p.pid && [ \"$(started $q)\" = \"$t\" ] && "
			    "kill $q 2>/dev/null; rm -f $d/$p.pid; done; true",
			    n);
}

char *rk_remote_capture_script(const char *display)
{
	return rk_xasprintf("export DISPLAY=%s; import -window root png:- | base64 -w0 && echo && "
			    "eval $(xdotool getmouselocation --shell) && echo \"$X $Y\"",
			    display);
}

int rk_remote_capture_parse(const struct rk_buf *out, struct rk_frame *f, struct rk_error *err)
{
	memset(f, 0, sizeof(*f));
	const char *nl = memchr(out->data, '\n', out->len);
	if (!nl || nl == out->data)
		return rk_error_set(err, RK_EFAILED, "the screen capture returned no image: %.200s", out->data);
	struct rk_buf png;
	rk_buf_init(&png);
	int rc = 0;
	if (rk_remote_unb64(out->data, (size_t)(nl - out->data), &png) != 0)
		rc = rk_error_set(err, RK_EFAILED, "the screen capture is not base64");
	if (rc == 0)
		rc = rk_remote_png_rgb(png.data, png.len, &f->rgb, &f->width, &f->height, err);
	if (rc == 0 && sscanf(nl + 1, "%d %d", &f->cursor_x, &f->cursor_y) != 2)
		f->cursor_x = f->cursor_y = 0;
	rk_buf_release(&png);
	return rc;
}

static int xbutton(const cJSON *a)
{
	const char *b = rk_json_string(a, "button", "left");
	return strcmp(b, "middle") == 0 ? 2 : strcmp(b, "right") == 0 ? 3 : 1;
}

static void add_point(struct rk_buf *b, const cJSON *a)
{
	const cJSON *x = cJSON_GetObjectItem(a, "x"), *y = cJSON_GetObjectItem(a, "y");
	if (cJSON_IsNumber(x) && cJSON_IsNumber(y))
		rk_buf_printf(b, " mousemove %d %d", x->valueint, y->valueint);
}

char *rk_remote_act_script(const char *display, const char *action_json, struct rk_error *err)
{
	cJSON *a = rk_json_parse(action_json, strlen(action_json), "action", err);
	if (!a)
		return NULL;
	const char *kind = rk_json_string(a, "action", "");
	struct rk_buf b;
	rk_buf_init(&b);
	rk_buf_printf(&b, "export DISPLAY=%s; xdotool", display);
	int ok = 1;
	if (strcmp(kind, "move") == 0) {
		add_point(&b, a);
	} else if (strcmp(kind, "click") == 0 || strcmp(kind, "double_click") == 0 ||
		   strcmp(kind, "right_click") == 0) {
		add_point(&b, a);
		int count = strcmp(kind, "double_click") == 0
				    ? 2
				    : (int)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "count"));
		if (count < 1)
			count = 1;
		rk_buf_printf(&b, " click --repeat %d %d", count, strcmp(kind, "right_click") == 0 ? 3 : xbutton(a));
	} else if (strcmp(kind, "down") == 0 || strcmp(kind, "up") == 0) {
		add_point(&b, a);
		rk_buf_printf(&b, " mouse%s %d", kind, xbutton(a));
	} else if (strcmp(kind, "drag") == 0) {
		const cJSON *path = cJSON_GetObjectItem(a, "path");
		int i = 0;
		for (const cJSON *p = path ? path->child : NULL; p; p = p->next, i++) {
			const cJSON *px = cJSON_IsArray(p) ? cJSON_GetArrayItem(p, 0) : cJSON_GetObjectItem(p, "x");
			const cJSON *py = cJSON_IsArray(p) ? cJSON_GetArrayItem(p, 1) : cJSON_GetObjectItem(p, "y");
			rk_buf_printf(&b, " mousemove %d %d", (int)cJSON_GetNumberValue(px),
				      (int)cJSON_GetNumberValue(py));
			if (i == 0)
				rk_buf_printf(&b, " mousedown %d", xbutton(a));
		}
		rk_buf_printf(&b, " mouseup %d", xbutton(a));
	} else if (strcmp(kind, "scroll") == 0) {
		add_point(&b, a);
		int dx = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "dx"));
		int dy = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "dy"));
		if (dy)
			rk_buf_printf(&b, " click --repeat %d %d", abs(dy), dy > 0 ? 5 : 4);
		if (dx)
			rk_buf_printf(&b, " click --repeat %d %d", abs(dx), dx > 0 ? 7 : 6);
	} else if (strcmp(kind, "type") == 0) {
		char *q = rk_remote_shq(rk_json_string(a, "text", ""));
		rk_buf_printf(&b, " type --delay 1 -- %s", q);
		free(q);
	} else if (strcmp(kind, "key") == 0 || strcmp(kind, "key_down") == 0 || strcmp(kind, "key_up") == 0) {
		char *q = rk_remote_shq(rk_json_string(a, "keys", ""));
		rk_buf_printf(&b, " %s -- %s",
			      strcmp(kind, "key") == 0	      ? "key"
			      : strcmp(kind, "key_down") == 0 ? "keydown"
							      : "keyup",
			      q);
		free(q);
	} else if (strcmp(kind, "wait") == 0) {
		rk_buf_reset(&b);
		rk_buf_printf(&b, "sleep %.3f", cJSON_GetNumberValue(cJSON_GetObjectItem(a, "ms")) / 1000.0);
	} else {
		ok = 0;
		rk_error_set(err, RK_EINVALID, "unknown action \"%s\"", kind);
	}
	cJSON_Delete(a);
	if (!ok) {
		rk_buf_release(&b);
		return NULL;
	}
	return rk_buf_detach(&b, NULL);
}
