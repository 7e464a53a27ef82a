#ifndef RK_NAMES_H
#define RK_NAMES_H
/* String tables for the engine's states and kinds. A family (computer
 * states, run states, ...) is one list in its owner's header, each entry
 * X(VALUE, "name") with the stable name the database stores and JSON and
 * the CLI show:
 *
 *   #define RK_SESSION_STATES(X) X(RK_SESSION_RUNNING, "running") X(RK_SESSION_ENDED, "ended")
 *   RK_NAMES_ENUM(rk_session_state, RK_SESSION_STATE, RK_SESSION_STATES);
 *
 * declares enum rk_session_state { RK_SESSION_STATE_UNKNOWN, RK_SESSION_RUNNING,
 * RK_SESSION_ENDED, RK_SESSION_STATE_COUNT } and
 *
 *   const char *rk_session_state_name(enum rk_session_state v);  the name; "unknown" for UNKNOWN or out of range
 *   enum rk_session_state rk_session_state_of(const char *name); UNKNOWN for NULL or a name not listed
 *
 * and RK_NAMES_DEFINE(rk_session_state, RK_SESSION_STATE, RK_SESSION_STATES)
 * in the owner's .c defines them over the one table. UNKNOWN is value 0,
 * so a zeroed struct and text from a newer build's database both read as
 * unknown. */

#define RK_NAMES_VALUE_(value, name) value,
#define RK_NAMES_ENTRY_(value, name) [value] = name,

#define RK_NAMES_ENUM(type, PREFIX, LIST)                                                                              \
	enum type { PREFIX##_UNKNOWN, LIST(RK_NAMES_VALUE_) PREFIX##_COUNT };                                          \
	const char *type##_name(enum type v);                                                                          \
	enum type type##_of(const char *name)

#define RK_NAMES_DEFINE(type, PREFIX, LIST)                                                                            \
	static const char *const type##_names_[PREFIX##_COUNT] = {[PREFIX##_UNKNOWN] = "unknown",                      \
								  LIST(RK_NAMES_ENTRY_)};                              \
	const char *type##_name(enum type v)                                                                           \
	{                                                                                                              \
		return rk_names_name(type##_names_, PREFIX##_COUNT, (int)v);                                           \
	}                                                                                                              \
	enum type type##_of(const char *name)                                                                          \
	{                                                                                                              \
		return (enum type)rk_names_find(type##_names_, PREFIX##_COUNT, name);                                  \
	}

/* The value whose name is s: its index in names[0..count), or 0 (UNKNOWN)
 * for NULL or a name not in the table. */
int rk_names_find(const char *const *names, int count, const char *s);
/* names[value], or names[0] ("unknown") for a value out of range. */
const char *rk_names_name(const char *const *names, int count, int value);

#endif
