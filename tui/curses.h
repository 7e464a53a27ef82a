#ifndef RK_TUI_CURSES_H
#define RK_TUI_CURSES_H
/* The one file that includes curses (ncursesw: wide characters). */

#define NCURSES_WIDECHAR 1
#include <curses.h>

#endif
