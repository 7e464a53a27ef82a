#ifndef RK_NAMES_H
#define RK_NAMES_H
/* String tables for the engine's states and kinds. A family (computer
 * states, run states, ...) is one enum whose value 0 is its UNKNOWN, and one
 * table names[value] = the stable name stored in the database and shown in
 * JSON and the CLI; names[0] is "unknown". The owner of a family wraps these
 * two calls as rk_<family>_name() and rk_<family>_of(). */

/* The value whose name is s: its index in names[0..count), or 0 (UNKNOWN)
 * for NULL or a name not in the table (text from a newer build's database). */
int rk_names_find(const char *const *names, int count, const char *s);
/* names[value], or names[0] ("unknown") for a value out of range. */
const char *rk_names_name(const char *const *names, int count, int value);

#endif
