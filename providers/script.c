/* The image's scripts, by name or by their text (see script.h). */

#include "providers/script.h"

#include <string.h>

#include "engine/util/buf.h"

/* The text of each script, read at build time from the image's recipe (the
 * Makefile makes this object depend on the files), NUL-terminated. */
#define SCRIPT_TEXT(sym, file)                                                                                         \
	__asm__(".section .rodata\n"                                                                                   \
		".global " #sym "\n"                                                                                   \
		".type " #sym ", @object\n" #sym ":\n"                                                                 \
		".incbin \"image/rootfs/usr/local/bin/" file "\"\n"                                                    \
		".byte 0\n"                                                                                            \
		".size " #sym ", . - " #sym "\n"                                                                       \
		".previous\n")
SCRIPT_TEXT(rk_script_browser_close, "rakazo-browser-close");
extern const char rk_script_browser_close[];

static const struct {
	const char *name, *text;
} scripts[] = {
	{"rakazo-browser-close", rk_script_browser_close},
};

char *rk_script_command(const char *name, const char *args)
{
	const char *text = NULL;
	for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++)
		if (!strcmp(scripts[i].name, name))
			text = scripts[i].text;
	if (!args)
		args = "";
	if (!text)
		return rk_xasprintf("%s %s", name, args);
	/* the installed script when there is one; else its text, with the
	 * same arguments, in this shell */
	return rk_xasprintf("if command -v %s >/dev/null 2>&1; then exec %s %s; fi\nset -- %s\n%s", name, name, args,
			    args, text);
}
