#ifndef RK_CMD_OUT_H
#define RK_CMD_OUT_H
/* The one printer: every result is a cJSON document; with --json it is
 * printed as it is (one line), on a terminal as aligned human text. */

#include <cJSON.h>
#include <stdio.h>

#include "engine/util/err.h"

struct out_col {
	const char *key;   /* member of each row; "a.b" reaches into objects */
	const char *title; /* column heading */
};

/* Prints an object (human: "key  value" lines) and frees it. */
void out_doc(cJSON *doc);
/* Prints {key: value, "removed": true}, what a removing verb answers. */
void out_removed(const char *key, const char *value);
/* Prints an array of objects (human: a table of cols) and frees it. */
void out_list(cJSON *rows, const struct out_col *cols);
/* One NDJSON line (JSON mode) or a human line from fmt_human; frees doc. */
void out_stream(cJSON *doc, const char *human);
/* Errors: "rakazo: code: message" or {"error":{...}} on stderr; returns the exit status. */
int out_error(const struct rk_error *err);
/* The engine's warnings (util/log.h rk_warn) on stderr: "rakazo: warning: ..."
 * or, under --json, one line {"warning":{"message":...}}. */
void out_warning(const char *message);
int out_is_json(void);
int out_use_color(FILE *f);
/* Human text goes to a terminal with its control characters (C0 but \n
 * and \t, DEL, C1) and bytes that are not UTF-8 shown escaped (\x1b,
 * \u009b), so a name, path, title, message or file from a computer cannot
 * drive the terminal; to a pipe or file it goes as it is. JSON output is
 * JSON (cJSON escapes controls). */
int out_is_tty(FILE *f);
/* Writes s[0..n) to f by that rule; returns how many characters were escaped. */
size_t out_text(FILE *f, const char *s, size_t n);
/* Progress lines on stderr, only on a terminal and never with --json. */
void out_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A piece of a progress line (streamed text) as it is, no newline added,
 * under the same rule: 0 when written, -1 when progress is not shown. */
int out_progress_piece(const char *s, size_t n);

#endif
