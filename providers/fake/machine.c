/* Where a fake machine lives and the faults tests inject into it: shared by
 * the provider's lifecycle (fake.c) and its screen (screen.c). See fake.c
 * for RAKAZO_FAKE_FAULTS and RAKAZO_FAKE_DELAY_MS. */

#include "providers/fake/machine.h"

#include <stdlib.h>
#include <string.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/time.h"

/* The machine of m: its ref, or when the engine has none (a provision whose
 * reply was lost) the one recorded for the computer, as docker finds a
 * container by label. malloc'd or NULL. */
char *rk_fake_machine_ref(const struct rk_machine *m)
{
	if (m->ref)
		return rk_xstrdup(m->ref);
	char *path = rk_xasprintf("%s/fake/by-computer/%s", m->data_dir, m->computer_id);
	struct rk_buf b;
	rk_buf_init(&b);
	char *ref = NULL;
	if (rk_fs_read_all(path, 256, &b, NULL) == 0 && b.len)
		ref = rk_xstrndup(b.data, strcspn(b.data, "\n"));
	rk_buf_release(&b);
	free(path);
	return ref;
}

int rk_fake_record_machine(const struct rk_machine *m, const char *ref, struct rk_error *err)
{
	char *dir = rk_xasprintf("%s/fake/by-computer", m->data_dir);
	char *path = rk_path_join(dir, m->computer_id);
	int r = rk_fs_mkdirs(dir, 0700, err);
	if (r == 0)
		r = rk_fs_write_atomic(path, ref, strlen(ref), 0600, err);
	free(path);
	free(dir);
	return r;
}

char *rk_fake_machine_dir(const struct rk_machine *m)
{
	char *ref = rk_fake_machine_ref(m);
	char *dir = rk_xasprintf("%s/fake/%s", m->data_dir, ref ? ref : "none");
	free(ref);
	return dir;
}

/* --- faults -------------------------------------------------------------- */

enum fault { FAULT_NONE, FAULT_FAIL, FAULT_UNAVAILABLE, FAULT_LOST_REPLY };

static enum fault fault_for(const char *op)
{
	const char *spec = getenv("RAKAZO_FAKE_FAULTS");
	size_t n = strlen(op);
	for (const char *p = spec; p && *p;) {
		if (strncmp(p, op, n) == 0 && p[n] == '=') {
			const char *v = p + n + 1;
			if (strncmp(v, "fail", 4) == 0)
				return FAULT_FAIL;
			if (strncmp(v, "unavailable", 11) == 0)
				return FAULT_UNAVAILABLE;
			if (strncmp(v, "lost_reply", 10) == 0)
				return FAULT_LOST_REPLY;
		}
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return FAULT_NONE;
}

static void lifecycle_delay(void)
{
	const char *d = getenv("RAKAZO_FAKE_DELAY_MS");
	if (d)
		rk_sleep_ms(atoll(d));
}

int rk_fake_fault(const char *op, struct rk_error *err)
{
	lifecycle_delay();
	switch (fault_for(op)) {
	case FAULT_FAIL:
		return rk_error_set(err, RK_EFAILED, "fake %s failed (injected)", op);
	case FAULT_UNAVAILABLE:
		return rk_error_set(err, RK_EUNAVAILABLE, "fake provider unavailable (injected)");
	default:
		return 0;
	}
}

int rk_fake_fault_after(const char *op, struct rk_error *err)
{
	if (fault_for(op) == FAULT_LOST_REPLY)
		return rk_error_set(err, RK_EOUTCOME_UNKNOWN, "fake %s: the reply was lost (injected)", op);
	return 0;
}
