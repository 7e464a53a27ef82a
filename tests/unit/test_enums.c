/* The string tables of the engine's states and kinds (engine/util/names.h):
 * every value round-trips through its stable name, the names are exactly
 * the ones the database stores (the schema's CHECK lists in db.c), and text
 * this build does not know, or NULL, is the family's UNKNOWN. */

#include <string.h>

#include "engine/access/approval.h"
#include "engine/access/secret.h"
#include "engine/machine/computer.h"
#include "engine/machine/execution.h"
#include "engine/machine/reservation.h"
#include "engine/machine/session.h"
#include "engine/machine/team.h"
#include "engine/state/db_runs.h"
#include "engine/util/names.h"
#include "providers/provider.h"
#include "check.h"

/* One family: its names in value order (value 1 first), as stored. */
#define CHECK_FAMILY(fn, count, ...)                                                                   \
	do {                                                                                           \
		static const char *const want[] = {__VA_ARGS__};                                       \
		CHECK_EQ_INT((count)-1, sizeof(want) / sizeof(want[0]));                               \
		for (int v = 1; v < (count); v++) {                                                    \
			CHECK_EQ_STR(fn##_name(v), want[v - 1]);                                       \
			CHECK_EQ_INT(fn##_of(want[v - 1]), v);                                         \
		}                                                                                      \
		CHECK_EQ_STR(fn##_name(0), "unknown");                                                 \
		CHECK_EQ_STR(fn##_name(count), "unknown");                                             \
		CHECK_EQ_STR(fn##_name(-1), "unknown");                                                \
		CHECK_EQ_INT(fn##_of(NULL), 0);                                                        \
		CHECK_EQ_INT(fn##_of(""), 0);                                                          \
		CHECK_EQ_INT(fn##_of("unknown"), 0);                                                   \
		CHECK_EQ_INT(fn##_of("no_such_name"), 0);                                              \
		CHECK_EQ_INT(fn##_of("RUNNING"), 0); /* names are exact, lowercase */                  \
	} while (0)

TEST(names_helper)
{
	static const char *const t[] = {"unknown", "a", "b"};
	CHECK_EQ_INT(rk_names_find(t, 3, "a"), 1);
	CHECK_EQ_INT(rk_names_find(t, 3, "b"), 2);
	CHECK_EQ_INT(rk_names_find(t, 3, "c"), 0);
	CHECK_EQ_INT(rk_names_find(t, 3, "unknown"), 0);
	CHECK_EQ_INT(rk_names_find(t, 3, NULL), 0);
	CHECK_EQ_INT(rk_names_find(t, 2, "b"), 0); /* past count */
	CHECK_EQ_STR(rk_names_name(t, 3, 2), "b");
	CHECK_EQ_STR(rk_names_name(t, 3, 3), "unknown");
	CHECK_EQ_STR(rk_names_name(t, 3, -7), "unknown");
}

TEST(computer_state)
{
	CHECK_FAMILY(rk_computer_state, RK_COMPUTER_STATE_COUNT, "starting", "running", "paused", "stopped", "offline",
		     "failed", "restoring", "deleted");
	CHECK_EQ_INT(rk_computer_state_of("running"), RK_COMPUTER_RUNNING);
}

TEST(computer_mode)
{
	CHECK_FAMILY(rk_computer_mode, RK_COMPUTER_MODE_COUNT, "private", "team");
	CHECK_EQ_INT(rk_computer_mode_of("team"), RK_COMPUTER_TEAM);
}

TEST(execution_state)
{
	CHECK_FAMILY(rk_execution_state, RK_EXECUTION_STATE_COUNT, "pending", "running", "succeeded", "failed",
		     "cancelled", "outcome_unknown");
	CHECK(rk_execution_state_is_final("succeeded"));
	CHECK(rk_execution_state_is_final("failed"));
	CHECK(rk_execution_state_is_final("cancelled"));
	CHECK(!rk_execution_state_is_final("outcome_unknown"));
	CHECK(!rk_execution_state_is_final("running"));
	CHECK(!rk_execution_state_is_final(NULL));
}

TEST(lifecycle_op)
{
	CHECK_FAMILY(rk_lifecycle_op, RK_LIFECYCLE_OP_COUNT, "create", "pause", "resume", "stop", "delete");
}

TEST(run_state)
{
	CHECK_FAMILY(rk_run_state, RK_RUN_STATE_COUNT, "queued", "running", "waiting_takeover", "waiting_approval",
		     "completed", "failed", "interrupted", "cancelled");
	for (int v = 1; v < RK_RUN_STATE_COUNT; v++)
		CHECK(rk_run_state_valid(rk_run_state_name(v)));
	CHECK(!rk_run_state_valid("unknown"));
	CHECK(!rk_run_state_valid(NULL));
	CHECK(rk_run_state_is_final("completed") && rk_run_state_is_final("failed") &&
	      rk_run_state_is_final("interrupted") && rk_run_state_is_final("cancelled"));
	CHECK(!rk_run_state_is_final("queued") && !rk_run_state_is_final("running") &&
	      !rk_run_state_is_final("waiting_takeover") && !rk_run_state_is_final("waiting_approval"));
	CHECK(!rk_run_state_is_final("bogus"));
}

TEST(session_state_and_history_kind)
{
	CHECK_FAMILY(rk_session_state, RK_SESSION_STATE_COUNT, "running", "ended");
	CHECK_FAMILY(rk_history_kind, RK_HISTORY_KIND_COUNT, "command", "input", "output", "exit");
}

TEST(reservation_state_and_kind)
{
	CHECK_FAMILY(rk_reservation_state, RK_RESERVATION_STATE_COUNT, "active", "interrupted");
	CHECK_FAMILY(rk_reservation_kind, RK_RESERVATION_KIND_COUNT, "update", "recovery");
}

TEST(slot_state)
{
	CHECK_FAMILY(rk_slot_state, RK_SLOT_STATE_COUNT, "free", "starting", "live", "releasing");
}

TEST(approval_state)
{
	CHECK_FAMILY(rk_approval_state, RK_APPROVAL_STATE_COUNT, "pending", "approved", "denied");
}

TEST(secret_auth)
{
	CHECK_FAMILY(rk_secret_auth, RK_SECRET_AUTH_COUNT, "bearer", "header", "basic", "query");
}

/* A paired machine differs by what it can do, not by its name. */
TEST(provider_capabilities)
{
	CHECK(rk_provider_can("paired", RK_CAP_DIALS_IN));
	CHECK(!rk_provider_can("paired", RK_CAP_DIALS_IN | RK_CAP_DESKTOP));
	CHECK(rk_provider_can("paired", 0));
	CHECK(!rk_provider_can("no-such-provider", 0));
	CHECK(!rk_provider_can(NULL, 0));
	int dialers = 0;
	for (size_t i = 0; rk_providers[i]; i++) {
		unsigned caps = rk_providers[i]->caps;
		dialers += !!(caps & RK_CAP_DIALS_IN);
		/* one bit a capability: the new one shares no bit with the others */
		CHECK(!(RK_CAP_DIALS_IN & (RK_CAP_DESKTOP | RK_CAP_MULTI_SCREEN | RK_CAP_TTY | RK_CAP_PAGE_BROWSER |
					   RK_CAP_SNAPSHOTS | RK_CAP_PERSISTENT_HOME | RK_CAP_TAKEOVER | RK_CAP_VNC |
					   RK_CAP_PAUSE | RK_CAP_HOST_HOME | RK_CAP_HOST_EXEC | RK_CAP_LIMIT_MEMORY |
					   RK_CAP_LIMIT_CPUS | RK_CAP_LIMIT_PIDS)));
		/* a machine that dials in is never paused by the server */
		if (caps & RK_CAP_DIALS_IN)
			CHECK(!(caps & RK_CAP_PAUSE));
	}
	CHECK_EQ_INT(dialers, 1);
}

int main(void)
{
	RUN(names_helper);
	RUN(computer_state);
	RUN(computer_mode);
	RUN(execution_state);
	RUN(lifecycle_op);
	RUN(run_state);
	RUN(session_state_and_history_kind);
	RUN(reservation_state_and_kind);
	RUN(slot_state);
	RUN(approval_state);
	RUN(secret_auth);
	RUN(provider_capabilities);
	return check_summary("enums");
}
