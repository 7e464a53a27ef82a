#ifndef RK_PROVIDER_SCRIPT_H
#define RK_PROVIDER_SCRIPT_H
/* Scripts of the computer image (image/rootfs/usr/local/bin) that the
 * engine runs on a machine by name. A machine made from the rakazo image
 * (docker) has them on its PATH; one that is not (the fake provider's host,
 * a remote sandbox of e2b, daytona or box) gets the same file's text, built
 * into the binary, so the shell logic has one home: the script. */

/* The command that runs script NAME with ARGS (words with no shell
 * metacharacters, or NULL): by name where the machine has it, else its
 * text. malloc'd. */
char *rk_script_command(const char *name, const char *args);

#endif
