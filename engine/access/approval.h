#ifndef RK_APPROVAL_H
#define RK_APPROVAL_H
/* Approval rules: which tool calls a person must approve before they run.
 *
 * A rule has an effect (allow or require_approval) and matches a tool by
 * its name (match tool), its connector (match connector: computer, memory,
 * http, secrets) or its category (match category: read, write, shell, act,
 * network). A rule is personal (it applies to the calls of the user who set
 * it, in the space it was set in) unless it was set --shared for everyone
 * in that space.
 *
 * Precedence: tool rules over connector rules over category rules; within
 * the first level that has a matching rule, require_approval wins over
 * allow; no matching rule means allow. shell, write_stdin and computer_act
 * (and browser_act when it exists) are exempt from category rules: what a
 * command or a click does cannot be told from the call, so clicking a
 * purchase button is not caught by a rule; give those a tool rule.
 *
 * The judge (optional, RAKAZO_JUDGE_MODEL set; RAKAZO_JUDGE_BASE_URL, else
 * the model's base URL): when no rule matched and the tool changes data or
 * acts outside (write, shell, act, network), an OpenAI-compatible model is
 * shown the call and answers ALLOW or ASK; anything else, or an error, is
 * ASK. The judge is the agent wing's (a model client): it registers it with
 * rk_approval_set_judge where it sets up the tools (engine/agent/model.h,
 * rk_model_judge_register), so access never calls up; a process with no
 * judge registered asks a person.
 *
 * Always and never: create_space always needs a person's approval,
 * whatever the rules say, and so does a call the model's vendor flagged
 * with a safety check (RK_APPROVAL_FLAGGED, source "vendor"). A run started by a webhook (RK_APPROVAL_WEBHOOK)
 * gets the stricter gate: a call that changes data or acts outside (write,
 * shell, act, network; the exempt tools included) needs approval unless a
 * tool rule allows that very tool; connector and category allow rules and
 * the judge do not let it through.
 *
 * The judge and the approval record see the call's arguments without the
 * user's secrets (engine/access/secret.h), which a model may have put there.
 *
 * Ask: inside a run the call waits. A pending approval is recorded, the
 * run's state is waiting_approval, and `rakazo run approve|deny RUN
 * [--note]` decides it (the run goes back to running; a denied call gives
 * the model a denied error with the note). Outside a run (no run id) an
 * ask is a denial. */

#include <cJSON.h>
#include <signal.h>
#include <stddef.h>

#include "engine/access/actor.h"
#include "engine/state/engine.h"
#include "engine/util/err.h"
#include "engine/util/names.h"

struct rk_approval_decision {
	int ask;	  /* 1: a person must approve the call */
	char source[16];  /* "policy", "rule", "judge", "webhook" or "default" */
	char reason[256]; /* why, for the person and the model */
};

/* What the rules see of a tool (NULL for an unknown one). */
const char *rk_approval_category(const char *tool);
const char *rk_approval_connector(const char *tool);
int rk_approval_exempt(const char *tool); /* from category rules */

/* Rules. effect: allow|require_approval; match: tool|connector|category. */
int rk_approval_rule_add(struct rk_engine *eng, const struct rk_actor *a, const char *effect, const char *match,
			 const char *value, int shared, char **id, struct rk_error *err);
/* The rules a's calls are under (a's own and the space's shared ones), a
 * cJSON array of {id, effect, match, value, shared, created_at}. */
int rk_approval_rule_list(struct rk_engine *eng, const struct rk_actor *a, cJSON **out, struct rk_error *err);
/* Removes one of a's rules (or a shared rule of a's space). */
int rk_approval_rule_remove(struct rk_engine *eng, const struct rk_actor *a, const char *id, struct rk_error *err);

/* How a call is judged (bits). */
#define RK_APPROVAL_JUDGE 1u   /* the judge may be asked */
#define RK_APPROVAL_WEBHOOK 2u /* the call is a webhook-started run's: the stricter gate */
/* The model's vendor attached safety checks to the call (OpenAI's
 * pending_safety_checks): a person must approve it, whatever the rules say,
 * and only their approval acknowledges the checks. */
#define RK_APPROVAL_FLAGGED 4u

/* The judge: 0 allow, 1 ask (also for any failure), with why in reason
 * (size bytes). data_dir: the engine's, where the model config lives. */
typedef int (*rk_approval_judge_fn)(const char *data_dir, const char *tool, const char *args_json, char *reason,
				    size_t size);
/* Registers the judge of this process (NULL: none). Safe from any thread. */
void rk_approval_set_judge(rk_approval_judge_fn fn);

/* The decision for one call. */
int rk_approval_evaluate(struct rk_engine *eng, const struct rk_actor *a, const char *tool, const char *args_json,
			 unsigned flags, struct rk_approval_decision *d, struct rk_error *err);

/* The gate tools.c runs before each call: evaluate, and on ask wait for a
 * person when run_id is set (until approve/deny, or *cancel). 0: go on;
 * RK_EDENIED: denied (err says by whom and the note); RK_EINTERRUPTED. */
int rk_approval_check(struct rk_engine *eng, const struct rk_actor *a, const char *run_id,
		      volatile sig_atomic_t *cancel, const char *tool, const char *args_json, unsigned flags,
		      struct rk_approval_decision *d, struct rk_error *err);

/* Decides the run's pending approval: only the user whose call waits, never
 * a bot (RK_EDENIED). RK_ENOTFOUND when none is pending. */
int rk_approval_decide(struct rk_engine *eng, const struct rk_actor *a, const char *run_id, int approve,
		       const char *note, struct rk_error *err);
/* Pending approvals (run_id NULL: all), a cJSON array of {id, run_id, tool,
 * arguments, reason, created_at}. */
int rk_approval_pending(struct rk_engine *eng, const char *run_id, cJSON **out, struct rk_error *err);

/* An approval request's state (approvals.state). */
#define RK_APPROVAL_STATES(X)                                                                                          \
	X(RK_APPROVAL_PENDING, "pending")                                                                              \
	X(RK_APPROVAL_APPROVED, "approved")                                                                            \
	X(RK_APPROVAL_DENIED, "denied")
RK_NAMES_ENUM(rk_approval_state, RK_APPROVAL_STATE, RK_APPROVAL_STATES);

#endif
