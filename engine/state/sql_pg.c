/* The PostgreSQL driver of sql.h (libpq), chosen by RAKAZO_DATABASE_URL. The
 * only engine file that includes libpq-fe.h.
 *
 * SQLite's parameters (?N, and ? for the next number) become $N, "x IS ?"
 * becomes IS NOT DISTINCT FROM, "WHERE 1 " WHERE true, and
 * length(CAST(x AS BLOB)) octet_length(x). A bound
 * integer is sent as int8, a blob as bytea (binary), a string or NULL with
 * no type so the server infers it from where it is used; a parameter that
 * only meets IS [NOT] NULL is cast to text, where the server could not
 * infer one. A statement is prepared once per connection (by its SQL and
 * parameter types), runs when it is first stepped, and its rows are read
 * from the one result. Errors map to sql.h's numbers by SQLSTATE: a
 * constraint class 23 is RK_SQL_CONSTRAINT, a lost or refused connection, a
 * lock timeout, a deadlock or a serialization failure is RK_SQL_BUSY. */

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/state/sql_driver.h"
#include "engine/util/buf.h"

/* Statements prepared on the connection, by their SQL and parameter types:
 * the engine runs a few dozen distinct statements over and over, so each is
 * parsed once per connection, not per run. */
struct prepared {
	struct prepared *next;
	char *key;
	size_t key_len;
	char name[24];
};

#define PREPARED_BUCKETS 256

struct pg_conn {
	PGconn *c;
	int errcode;
	char *errmsg;
	int64_t changes;
	struct prepared *prepared[PREPARED_BUCKETS];
	unsigned next_name;
};

struct pg_stmt {
	struct rk_stmt base;
	char *sql;
	int nparams, cap;
	char **values;
	int *lengths, *formats;
	Oid *types;
	PGresult *res;
	int row, nrows;
	unsigned char **blobs; /* unescaped bytea of the current row, by column */
	size_t *blob_len;
};

#define C(db) ((struct pg_conn *)(db)->conn)
#define P(st) ((struct pg_stmt *)(st))

enum {
	INT8OID = 20,
	BOOLOID = 16,
	INT2OID = 21,
	INT4OID = 23,
	FLOAT4OID = 700,
	FLOAT8OID = 701,
	NUMERICOID = 1700,
	BYTEAOID = 17,
	OIDOID = 26
};

static void quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message; /* the engine prints nothing; notices are not errors */
}

/* The message is prefix then detail (either may be NULL), without the newline libpq ends its own with. */
static void set_error(struct rk_db *db, int code, const char *prefix, const char *detail)
{
	struct pg_conn *pc = C(db);
	free(pc->errmsg);
	struct rk_buf b;
	rk_buf_init(&b);
	rk_buf_adds(&b, prefix ? prefix : "");
	for (const char *d = detail ? detail : ""; *d; d++) {
		if (*d == '\n' || *d == '\t') { /* one line: libpq's messages span several */
			if (b.len && b.data[b.len - 1] != ' ' && d[1] && d[1] != '\n')
				rk_buf_adds(&b, d[1] == '\t' ? "; " : " ");
			continue;
		}
		rk_buf_addc(&b, *d);
	}
	while (b.len && b.data[b.len - 1] == ' ')
		b.data[--b.len] = '\0';
	pc->errmsg = rk_buf_detach(&b, NULL);
	pc->errcode = code;
}

static void connection_lost(struct rk_db *db)
{
	char *prefix = rk_xasprintf("PostgreSQL at %s is not reachable (is the server running?): ", db->path);
	set_error(db, RK_SQL_BUSY, prefix, PQerrorMessage(C(db)->c));
	free(prefix);
}

/* Records res's error (res may be NULL); returns the rc. */
static int result_error(struct rk_db *db, PGresult *res)
{
	if (!res || PQstatus(C(db)->c) != CONNECTION_OK) {
		connection_lost(db);
		return RK_SQL_BUSY;
	}
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	int code = RK_SQL_ERROR;
	if (state && !strncmp(state, "23", 2))
		code = RK_SQL_CONSTRAINT;
	else if (state && (!strcmp(state, "40001") || !strcmp(state, "40P01") || !strcmp(state, "55P03") ||
			   !strncmp(state, "08", 2) || !strncmp(state, "57P", 3)))
		code = RK_SQL_BUSY;
	else if (state && !strcmp(state, "53100"))
		code = RK_SQL_FULL;
	else if (state && !strncmp(state, "XX", 2))
		code = RK_SQL_CORRUPT;
	set_error(db, code, NULL, msg ? msg : PQresultErrorMessage(res));
	return code;
}

static void forget_prepared(struct pg_conn *pc)
{
	for (int i = 0; i < PREPARED_BUCKETS; i++) {
		while (pc->prepared[i]) {
			struct prepared *p = pc->prepared[i];
			pc->prepared[i] = p->next;
			free(p->key);
			free(p);
		}
	}
}

static int pg_open(struct rk_db *db, const char *target, int flags)
{
	(void)flags;
	struct pg_conn *pc = calloc(1, sizeof(*pc));
	if (!pc)
		return RK_SQL_ERROR;
	db->conn = pc;
	pc->c = PQconnectdb(target);
	if (!pc->c) {
		set_error(db, RK_SQL_ERROR, NULL, "out of memory");
		return RK_SQL_ERROR;
	}
	if (PQstatus(pc->c) != CONNECTION_OK) {
		connection_lost(db);
		return RK_SQL_BUSY;
	}
	PQsetNoticeProcessor(pc->c, quiet, NULL);
	PGresult *res = PQexec(pc->c, "SET client_min_messages = warning");
	PQclear(res);
	return RK_SQL_OK;
}

static void pg_close(struct rk_db *db)
{
	struct pg_conn *pc = C(db);
	if (!pc)
		return;
	if (pc->c)
		PQfinish(pc->c);
	forget_prepared(pc);
	free(pc->errmsg);
	free(pc);
	db->conn = NULL;
}

/* A connection the server dropped (a restart) is tried once more, outside a transaction. */
static int ready(struct rk_db *db)
{
	struct pg_conn *pc = C(db);
	if (PQstatus(pc->c) == CONNECTION_OK)
		return 1;
	PQreset(pc->c);
	forget_prepared(pc); /* a new session has none */
	if (PQstatus(pc->c) == CONNECTION_OK) {
		PQsetNoticeProcessor(pc->c, quiet, NULL);
		return 1;
	}
	connection_lost(db);
	return 0;
}

static int pg_exec(struct rk_db *db, const char *sql)
{
	if (!ready(db))
		return RK_SQL_BUSY;
	PGresult *res = PQexec(C(db)->c, sql);
	ExecStatusType s = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	int rc = RK_SQL_OK;
	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK && s != PGRES_EMPTY_QUERY)
		rc = result_error(db, res);
	PQclear(res);
	return rc;
}

/* ?N -> $N and ? -> $(last + 1), outside quotes; "?N IS [NOT] NULL" casts to text. */
static char *translate(const char *sql, int *nparams)
{
	struct rk_buf b;
	rk_buf_init(&b);
	int last = 0, max = 0;
	for (const char *p = sql; *p;) {
		if (*p == '\'' || *p == '"') {
			char q = *p;
			const char *e = strchr(p + 1, q);
			size_t n = e ? (size_t)(e - p) + 1 : strlen(p);
			rk_buf_add(&b, p, n);
			p += n;
			continue;
		}
		/* SQLite's "WHERE 1" (true as an integer): WHERE true */
		if (!strncmp(p, "WHERE 1 ", 8)) {
			rk_buf_adds(&b, "WHERE true ");
			p += 8;
			continue;
		}
		/* SQLite's bytes of a text, length(CAST(x AS BLOB)): octet_length(x) */
		const char *cast_end = !strncmp(p, "length(CAST(", 12) ? strstr(p, " AS BLOB))") : NULL;
		if (cast_end && memchr(p, ')', (size_t)(cast_end - p)) == NULL) {
			rk_buf_adds(&b, "octet_length(");
			rk_buf_add(&b, p + 12, (size_t)(cast_end - p - 12));
			rk_buf_addc(&b, ')');
			p = cast_end + strlen(" AS BLOB))");
			continue;
		}
		if (*p != '?') {
			rk_buf_addc(&b, *p++);
			continue;
		}
		p++;
		int n = 0;
		if (*p >= '0' && *p <= '9') {
			while (*p >= '0' && *p <= '9')
				n = n * 10 + (*p++ - '0');
		} else {
			n = max + 1;
		}
		last = n;
		if (n > max)
			max = n;
		/* SQLite's "a IS ?" and "a IS NOT ?" compare NULLs as values */
		if (b.len >= 8 && !strncmp(b.data + b.len - 8, " IS NOT ", 8)) {
			b.len -= 4;
			rk_buf_adds(&b, "DISTINCT FROM ");
		} else if (b.len >= 4 && !strncmp(b.data + b.len - 4, " IS ", 4)) {
			rk_buf_adds(&b, "NOT DISTINCT FROM ");
		}
		rk_buf_printf(&b, "$%d", last);
		if (!strncmp(p, " IS NULL", 8) || !strncmp(p, " IS NOT NULL", 12))
			rk_buf_adds(&b, "::text");
	}
	*nparams = max;
	return rk_buf_detach(&b, NULL);
}

static int pg_prepare(struct rk_db *db, const char *sql, struct rk_stmt **out)
{
	struct pg_stmt *st = rk_xcalloc(1, sizeof(*st));
	st->base.drv = &rk_sql_pg;
	st->base.db = db;
	st->sql = translate(sql, &st->nparams);
	st->cap = st->nparams;
	st->values = rk_xcalloc((size_t)st->cap + 1, sizeof(char *));
	st->lengths = rk_xcalloc((size_t)st->cap + 1, sizeof(int));
	st->formats = rk_xcalloc((size_t)st->cap + 1, sizeof(int));
	st->types = rk_xcalloc((size_t)st->cap + 1, sizeof(Oid));
	*out = &st->base;
	return RK_SQL_OK;
}

static void clear_blobs(struct pg_stmt *st)
{
	if (!st->blobs || !st->res)
		return;
	int nf = PQnfields(st->res);
	for (int i = 0; i < nf; i++) {
		if (st->blobs[i])
			PQfreemem(st->blobs[i]);
		st->blobs[i] = NULL;
	}
}

static int set_param(struct rk_stmt *s, int i, char *value, int len, int format, Oid type)
{
	struct pg_stmt *st = P(s);
	if (i < 1 || i > st->nparams) {
		free(value);
		return RK_SQL_ERROR; /* SQLite's SQLITE_RANGE: the statement has no such parameter */
	}
	free(st->values[i - 1]);
	st->values[i - 1] = value;
	st->lengths[i - 1] = len;
	st->formats[i - 1] = format;
	st->types[i - 1] = type;
	return RK_SQL_OK;
}

static int pg_bind_int64(struct rk_stmt *st, int i, int64_t v)
{
	return set_param(st, i, rk_xasprintf("%lld", (long long)v), 0, 0, INT8OID);
}

static int pg_bind_double(struct rk_stmt *st, int i, double v)
{
	return set_param(st, i, rk_xasprintf("%.17g", v), 0, 0, FLOAT8OID);
}

static int pg_bind_text(struct rk_stmt *st, int i, const char *s, int len)
{
	return set_param(st, i, len < 0 ? rk_xstrdup(s) : rk_xstrndup(s, (size_t)len), 0, 0, 0);
}

static int pg_bind_blob(struct rk_stmt *st, int i, const void *p, size_t n)
{
	char *copy = rk_xmalloc(n + 1);
	if (n)
		memcpy(copy, p, n);
	return set_param(st, i, copy, (int)n, 1, BYTEAOID);
}

static int pg_bind_null(struct rk_stmt *st, int i)
{
	return set_param(st, i, NULL, 0, 0, 0);
}

/* The name of st's statement prepared on the connection, preparing it the
 * first time; NULL with the error recorded when the server refused it. */
static const char *prepared_name(struct rk_db *db, struct pg_stmt *st)
{
	struct pg_conn *pc = C(db);
	size_t sql_len = strlen(st->sql), types_len = (size_t)st->nparams * sizeof(Oid);
	size_t key_len = sql_len + 1 + types_len;
	char *key = rk_xmalloc(key_len);
	memcpy(key, st->sql, sql_len + 1);
	if (types_len)
		memcpy(key + sql_len + 1, st->types, types_len);
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < key_len; i++)
		h = (h ^ (unsigned char)key[i]) * 16777619u;
	struct prepared **bucket = &pc->prepared[h % PREPARED_BUCKETS];
	for (struct prepared *p = *bucket; p; p = p->next) {
		if (p->key_len == key_len && !memcmp(p->key, key, key_len)) {
			free(key);
			return p->name;
		}
	}
	struct prepared *p = rk_xcalloc(1, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "rk_%u", pc->next_name++);
	PGresult *res = PQprepare(pc->c, p->name, st->sql, st->nparams, st->types);
	if (!res || PQresultStatus(res) != PGRES_COMMAND_OK) {
		result_error(db, res);
		PQclear(res);
		free(key);
		free(p);
		return NULL;
	}
	PQclear(res);
	p->key = key;
	p->key_len = key_len;
	p->next = *bucket;
	*bucket = p;
	return p->name;
}

static int pg_step(struct rk_stmt *s)
{
	struct pg_stmt *st = P(s);
	struct rk_db *db = s->db;
	if (!st->res) {
		if (!ready(db))
			return RK_SQL_BUSY;
		const char *name = prepared_name(db, st);
		if (!name)
			return C(db)->errcode;
		st->res = PQexecPrepared(C(db)->c, name, st->nparams, (const char *const *)st->values, st->lengths,
					 st->formats, 0);
		ExecStatusType x = st->res ? PQresultStatus(st->res) : PGRES_FATAL_ERROR;
		if (x != PGRES_COMMAND_OK && x != PGRES_TUPLES_OK) {
			int rc = result_error(db, st->res);
			PQclear(st->res);
			st->res = NULL;
			return rc;
		}
		const char *n = PQcmdTuples(st->res);
		if (n && *n)
			C(db)->changes = strtoll(n, NULL, 10);
		st->nrows = PQntuples(st->res);
		st->row = 0;
		st->blobs = rk_xcalloc((size_t)PQnfields(st->res) + 1, sizeof(*st->blobs));
		st->blob_len = rk_xcalloc((size_t)PQnfields(st->res) + 1, sizeof(*st->blob_len));
	} else {
		clear_blobs(st);
		if (st->row < st->nrows)
			st->row++;
	}
	return st->row < st->nrows ? RK_SQL_ROW : RK_SQL_DONE;
}

static int have(struct pg_stmt *st, int i)
{
	return st->res && st->row < st->nrows && i >= 0 && i < PQnfields(st->res) && !PQgetisnull(st->res, st->row, i);
}

static int pg_column_type(struct rk_stmt *s, int i)
{
	struct pg_stmt *st = P(s);
	if (!have(st, i))
		return RK_SQL_NULL;
	switch (PQftype(st->res, i)) {
	case INT8OID:
	case INT4OID:
	case INT2OID:
	case BOOLOID:
	case OIDOID:
		return RK_SQL_INTEGER;
	case FLOAT4OID:
	case FLOAT8OID:
	case NUMERICOID:
		return RK_SQL_FLOAT;
	case BYTEAOID:
		return RK_SQL_BLOB;
	default:
		return RK_SQL_TEXT;
	}
}

static int64_t pg_column_int64(struct rk_stmt *s, int i)
{
	struct pg_stmt *st = P(s);
	if (!have(st, i))
		return 0;
	const char *v = PQgetvalue(st->res, st->row, i);
	if (PQftype(st->res, i) == BOOLOID)
		return *v == 't';
	return strtoll(v, NULL, 10);
}

static double pg_column_double(struct rk_stmt *s, int i)
{
	struct pg_stmt *st = P(s);
	return have(st, i) ? strtod(PQgetvalue(st->res, st->row, i), NULL) : 0.0;
}

static const unsigned char *pg_column_text(struct rk_stmt *s, int i)
{
	struct pg_stmt *st = P(s);
	if (!have(st, i))
		return NULL;
	if (PQftype(st->res, i) == BOOLOID)
		return (const unsigned char *)(*PQgetvalue(st->res, st->row, i) == 't' ? "1" : "0");
	return (const unsigned char *)PQgetvalue(st->res, st->row, i);
}

static const void *blob(struct pg_stmt *st, int i, size_t *len)
{
	*len = 0;
	if (!have(st, i))
		return NULL;
	if (PQftype(st->res, i) != BYTEAOID) {
		*len = (size_t)PQgetlength(st->res, st->row, i);
		return PQgetvalue(st->res, st->row, i);
	}
	if (!st->blobs[i])
		st->blobs[i] = PQunescapeBytea((const unsigned char *)PQgetvalue(st->res, st->row, i),
					       &st->blob_len[i]);
	*len = st->blob_len[i];
	return st->blobs[i];
}

static const void *pg_column_blob(struct rk_stmt *s, int i)
{
	size_t n;
	return blob(P(s), i, &n);
}

static int pg_column_bytes(struct rk_stmt *s, int i)
{
	size_t n;
	blob(P(s), i, &n);
	return (int)n;
}

static void pg_finalize(struct rk_stmt *s)
{
	struct pg_stmt *st = P(s);
	clear_blobs(st);
	free(st->blobs);
	free(st->blob_len);
	PQclear(st->res);
	for (int i = 0; i < st->cap; i++)
		free(st->values[i]);
	free(st->values);
	free(st->lengths);
	free(st->formats);
	free(st->types);
	free(st->sql);
	free(st);
}

static int64_t pg_changes(struct rk_db *db)
{
	return C(db)->changes;
}

static int pg_in_transaction(struct rk_db *db)
{
	PGTransactionStatusType t = PQtransactionStatus(C(db)->c);
	return t == PQTRANS_INTRANS || t == PQTRANS_INERROR || t == PQTRANS_ACTIVE;
}

static int pg_errcode(struct rk_db *db)
{
	return C(db) ? C(db)->errcode : RK_SQL_ERROR;
}

static const char *pg_errmsg(struct rk_db *db)
{
	return C(db) && C(db)->errmsg ? C(db)->errmsg : "out of memory";
}

static void pg_busy_timeout(struct rk_db *db, int ms)
{
	/* SQLite waits up to ms for a lock, then answers busy; PostgreSQL's lock_timeout does the same */
	char sql[64];
	snprintf(sql, sizeof(sql), "SET lock_timeout = %d", ms);
	if (PQstatus(C(db)->c) == CONNECTION_OK)
		PQclear(PQexec(C(db)->c, sql));
}

static const char *pg_version(void)
{
	static char v[32];
	int n = PQlibVersion();
	snprintf(v, sizeof(v), "%d.%d", n / 10000, n % 10000);
	return v;
}

const struct rk_sql_driver rk_sql_pg = {
	.name = "postgresql",
	.dialect = RK_DIALECT_PG,
	.open = pg_open,
	.close = pg_close,
	.exec = pg_exec,
	.prepare = pg_prepare,
	.bind_int64 = pg_bind_int64,
	.bind_double = pg_bind_double,
	.bind_text = pg_bind_text,
	.bind_blob = pg_bind_blob,
	.bind_null = pg_bind_null,
	.step = pg_step,
	.column_type = pg_column_type,
	.column_int64 = pg_column_int64,
	.column_double = pg_column_double,
	.column_text = pg_column_text,
	.column_blob = pg_column_blob,
	.column_bytes = pg_column_bytes,
	.finalize = pg_finalize,
	.changes = pg_changes,
	.in_transaction = pg_in_transaction,
	.errcode = pg_errcode,
	.errmsg = pg_errmsg,
	.busy_timeout = pg_busy_timeout,
	.version = pg_version,
};
