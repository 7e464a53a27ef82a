#include "out.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/util/buf.h"
#include "opt.h"

int out_is_json(void)
{
	return opt_json;
}

int out_use_color(FILE *f)
{
	const char *nc = getenv("NO_COLOR");
	if (nc && *nc)
		return 0;
	return isatty(fileno(f));
}

int out_is_tty(FILE *f)
{
	return isatty(fileno(f));
}

/* Text from outside (names, paths, titles, file contents, messages) on a
 * terminal: its control characters and stray bytes escaped, so none of it
 * can move the cursor, retitle the window or clear the screen. */
static size_t add_text(struct rk_buf *b, const char *s, size_t n, int tty)
{
	if (!tty) {
		rk_buf_add(b, s, n);
		return 0;
	}
	return rk_utf8_escape(b, s, n, RK_ESCAPE_CONTROLS | RK_ESCAPE_KEEP_LINES);
}

size_t out_text(FILE *f, const char *s, size_t n)
{
	if (!out_is_tty(f)) {
		fwrite(s, 1, n, f);
		return 0;
	}
	struct rk_buf b;
	rk_buf_init(&b);
	size_t escaped = add_text(&b, s, n, 1);
	fwrite(b.data, 1, b.len, f);
	rk_buf_release(&b);
	return escaped;
}

static void print_json_line(FILE *f, const cJSON *doc)
{
	char *s = cJSON_PrintUnformatted(doc);
	if (out_is_tty(f)) { /* cJSON escapes C0 but passes DEL, C1 and stray bytes */
		struct rk_buf b;
		rk_buf_init(&b);
		rk_utf8_escape(&b, s, strlen(s), RK_ESCAPE_CONTROLS | RK_ESCAPE_IN_JSON);
		free(s);
		s = rk_buf_detach(&b, NULL);
	}
	fputs(s, f);
	fputc('\n', f);
	free(s);
	fflush(f);
}

static void human_value(struct rk_buf *b, const cJSON *v, int tty)
{
	if (cJSON_IsString(v))
		add_text(b, v->valuestring, strlen(v->valuestring), tty);
	else if (cJSON_IsNull(v))
		rk_buf_adds(b, "-");
	else if (cJSON_IsBool(v))
		rk_buf_adds(b, cJSON_IsTrue(v) ? "yes" : "no");
	else if (cJSON_IsNumber(v))
		rk_buf_printf(b, "%.15g", v->valuedouble);
	else {
		char *s = cJSON_PrintUnformatted(v); /* JSON: controls are escaped already */
		add_text(b, s, strlen(s), tty);
		free(s);
	}
}

static void human_object(const cJSON *o, int indent)
{
	size_t w = 0;
	for (const cJSON *c = o->child; c; c = c->next)
		if (c->string && strlen(c->string) > w)
			w = strlen(c->string);
	int color = out_use_color(stdout), tty = out_is_tty(stdout);
	for (const cJSON *c = o->child; c; c = c->next) {
		struct rk_buf k, b;
		rk_buf_init(&k);
		rk_buf_init(&b);
		add_text(&k, c->string ? c->string : "", c->string ? strlen(c->string) : 0, tty);
		if (cJSON_IsObject(c) && c->child) {
			printf("%*s%s%s%s:\n", indent, "", color ? "\033[1m" : "", k.data, color ? "\033[0m" : "");
			human_object(c, indent + 2);
		} else {
			human_value(&b, c, tty);
			printf("%*s%s%-*s%s  %s\n", indent, "", color ? "\033[1m" : "", (int)w, k.data,
			       color ? "\033[0m" : "", b.data);
		}
		rk_buf_release(&k);
		rk_buf_release(&b);
	}
}

void out_doc(cJSON *doc)
{
	if (opt_json)
		print_json_line(stdout, doc);
	else if (cJSON_IsObject(doc))
		human_object(doc, 0);
	else {
		struct rk_buf b;
		rk_buf_init(&b);
		human_value(&b, doc, out_is_tty(stdout));
		puts(b.data);
		rk_buf_release(&b);
	}
	fflush(stdout);
	cJSON_Delete(doc);
}

void out_removed(const char *key, const char *value)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, key, value);
	cJSON_AddBoolToObject(o, "removed", 1);
	out_doc(o);
}

static const cJSON *dig(const cJSON *row, const char *key)
{
	char *k = rk_xstrdup(key);
	const cJSON *v = row;
	for (char *part = strtok(k, "."); part && v; part = strtok(NULL, "."))
		v = cJSON_GetObjectItemCaseSensitive(v, part);
	free(k);
	return v;
}

void out_list(cJSON *rows, const struct out_col *cols)
{
	if (opt_json) {
		print_json_line(stdout, rows);
		cJSON_Delete(rows);
		return;
	}
	size_t ncol = 0;
	while (cols[ncol].key)
		ncol++;
	size_t nrow = (size_t)cJSON_GetArraySize(rows);
	char **cells = rk_xcalloc((nrow + 1) * ncol, sizeof(*cells));
	size_t *w = rk_xcalloc(ncol, sizeof(*w));
	for (size_t c = 0; c < ncol; c++) {
		cells[c] = rk_xstrdup(cols[c].title);
		w[c] = strlen(cols[c].title);
	}
	size_t r = 1;
	int tty = out_is_tty(stdout);
	for (const cJSON *row = rows->child; row; row = row->next, r++) {
		for (size_t c = 0; c < ncol; c++) {
			struct rk_buf b;
			rk_buf_init(&b);
			const cJSON *v = dig(row, cols[c].key);
			if (v)
				human_value(&b, v, tty);
			else
				rk_buf_adds(&b, "-");
			/* one line per row: a newline in a value would break the table */
			for (size_t i = 0; i < b.len; i++)
				if (b.data[i] == '\n' || b.data[i] == '\t')
					b.data[i] = ' ';
			cells[r * ncol + c] = rk_buf_detach(&b, NULL);
			size_t len = strlen(cells[r * ncol + c]);
			if (len > w[c])
				w[c] = len;
		}
	}
	int color = out_use_color(stdout);
	for (size_t i = 0; i < r; i++) {
		for (size_t c = 0; c < ncol; c++) {
			const char *cell = cells[i * ncol + c];
			if (i == 0 && color)
				fputs("\033[1m", stdout);
			if (c + 1 < ncol)
				printf("%-*s  ", (int)w[c], cell);
			else
				fputs(cell, stdout);
			if (i == 0 && color)
				fputs("\033[0m", stdout);
		}
		fputc('\n', stdout);
	}
	if (nrow == 0 && isatty(1))
		fputs("(none)\n", stdout);
	for (size_t i = 0; i < r * ncol; i++)
		free(cells[i]);
	free(cells);
	free(w);
	fflush(stdout);
	cJSON_Delete(rows);
}

void out_stream(cJSON *doc, const char *human)
{
	if (opt_json)
		print_json_line(stdout, doc);
	else if (human) {
		out_text(stdout, human, strlen(human));
		fputc('\n', stdout);
		fflush(stdout);
	}
	cJSON_Delete(doc);
}

int out_error(const struct rk_error *err)
{
	const char *code = rk_code_name(err->code);
	if (opt_json) {
		cJSON *o = cJSON_CreateObject();
		cJSON *e = cJSON_AddObjectToObject(o, "error");
		cJSON_AddStringToObject(e, "code", code);
		struct rk_buf m = RK_BUF_INIT;
		rk_buf_init(&m);
		rk_utf8_escape(&m, err->message, strlen(err->message), 0); /* the line stays UTF-8 */
		cJSON_AddStringToObject(e, "message", m.data);
		rk_buf_release(&m);
		print_json_line(stderr, o);
		cJSON_Delete(o);
	} else {
		int color = out_use_color(stderr);
		struct rk_buf m;
		rk_buf_init(&m);
		add_text(&m, err->message, strlen(err->message), out_is_tty(stderr));
		fprintf(stderr, "rakazo: %s%s%s: %s\n", color ? "\033[31m" : "", code, color ? "\033[0m" : "", m.data);
		rk_buf_release(&m);
	}
	return rk_code_exit_status(err->code);
}

void out_warning(const char *message)
{
	if (opt_json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "warning"), "message", message);
		print_json_line(stderr, o);
		cJSON_Delete(o);
	} else {
		int color = out_use_color(stderr);
		fprintf(stderr, "rakazo: %swarning%s: %s\n", color ? "\033[33m" : "", color ? "\033[0m" : "", message);
	}
}

int out_progress_piece(const char *s, size_t n)
{
	if (opt_json || !isatty(2))
		return -1;
	out_text(stderr, s, n);
	fflush(stderr);
	return 0;
}

void out_progress(const char *fmt, ...)
{
	if (opt_json || !isatty(2))
		return;
	va_list ap;
	va_start(ap, fmt);
	char *s = rk_xvasprintf(fmt, ap);
	va_end(ap);
	out_text(stderr, s, strlen(s));
	free(s);
	fputc('\n', stderr);
}
