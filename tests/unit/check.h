#ifndef RK_CHECK_H
#define RK_CHECK_H
/* A tiny unit-test runner (after redis' testhelp.h).
 *
 *   TEST(parse_ok) { CHECK_EQ_INT(parse("1"), 1); }
 *   int main(void) { RUN(parse_ok); return check_summary("parse"); }
 *
 * A test passes when none of its checks failed. check_summary prints
 * "unit: N passed, N failed" (the closing line CI reads) and returns the exit
 * status. check_skip("why") inside a test counts it as neither. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_passed, check_failed, check_current_failed, check_current_skipped;
static const char *check_current_name;

#define TEST(name) static void test_##name(void)

#define RUN(name)                                                                                  \
	do {                                                                                       \
		check_current_name = #name;                                                        \
		check_current_failed = 0;                                                          \
		check_current_skipped = 0;                                                         \
		test_##name();                                                                     \
		if (check_current_skipped)                                                         \
			printf("skip %s\n", #name);                                                \
		else if (check_current_failed)                                                     \
			check_failed++, printf("FAIL %s\n", #name);                                \
		else                                                                               \
			check_passed++, printf("ok   %s\n", #name);                                \
		fflush(stdout);                                                                    \
	} while (0)

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			printf("  %s:%d: %s: check failed: %s\n", __FILE__, __LINE__,              \
			       check_current_name, #cond);                                         \
			check_current_failed = 1;                                                  \
		}                                                                                  \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
	do {                                                                                       \
		long long check_a_ = (long long)(a), check_b_ = (long long)(b);                    \
		if (check_a_ != check_b_) {                                                        \
			printf("  %s:%d: %s: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__,  \
			       check_current_name, #a, check_a_, #b, check_b_);                    \
			check_current_failed = 1;                                                  \
		}                                                                                  \
	} while (0)

#define CHECK_EQ_STR(a, b)                                                                         \
	do {                                                                                       \
		const char *check_a_ = (a), *check_b_ = (b);                                       \
		if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_) != 0) {                   \
			printf("  %s:%d: %s: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__,    \
			       check_current_name, #a, check_a_ ? check_a_ : "(null)",             \
			       check_b_ ? check_b_ : "(null)");                                    \
			check_current_failed = 1;                                                  \
		}                                                                                  \
	} while (0)

/* Stops the current test when a check failed, for checks later ones depend on. */
#define REQUIRE(cond)                                                                              \
	do {                                                                                       \
		CHECK(cond);                                                                       \
		if (check_current_failed)                                                          \
			return;                                                                    \
	} while (0)

static inline void check_skip(const char *why)
{
	printf("  skip: %s: %s\n", check_current_name, why);
	check_current_skipped = 1;
}

static inline int check_summary(const char *suite)
{
	printf("%s: %d passed, %d failed\n", suite, check_passed, check_failed);
	printf("unit: %d passed, %d failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}

#endif
