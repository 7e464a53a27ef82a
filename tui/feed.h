#ifndef RK_TUI_FEED_H
#define RK_TUI_FEED_H
/* The dashboard's data, gathered off the UI thread. Two threads, each with
 * an engine handle of its own, call the engine: the data thread (SQLite and
 * the workspace on disk: computers, runs, a run's timeline, terminal
 * history, the file browser) and the screen thread (the display holder: a
 * provider or Docker may take seconds). The UI thread only reads what they
 * publish, under the feed's lock, and tells them what it looks at; a byte
 * on wake_fd says something new arrived. No curses here. */

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/state/engine.h"

struct feed_computer {
	char *id, *name, *kind, *state, *home_key;
	int desktop;
	int screens;	       /* live now (rk_team_screen_count) */
	char *checkpoint;      /* the latest revision: "rev-... (reason)", or NULL */
	int64_t checkpoint_at; /* ms, 0: none */
};

struct feed_run {
	char *id, *computer_id, *task, *model, *state, *error;
	int64_t steps, input_tokens, output_tokens, created_at, started_at, finished_at;
};

/* A line of text to show (UTF-8, no control characters). */
struct feed_lines {
	char **v;
	size_t n, cap;
};
void feed_lines_add(struct feed_lines *l, const char *s, size_t len);
void feed_lines_clear(struct feed_lines *l);

/* A frame the model was shown, in the timeline: drawn over the blank lines
 * it takes there. */
struct feed_thumb {
	unsigned char *rgb; /* packed RGB, w x h */
	int w, h;
	size_t line; /* its first line, counted from the first event line */
};

struct feed_file {
	char *name;
	char type; /* 'd' directory, 'f' file, 'l' symlink, '?' other */
	int64_t size, mtime;
};

/* What the UI looks at; the threads work for it. */
enum feed_view { FEED_VIEW_TIMELINE = 1, FEED_VIEW_HISTORY = 2, FEED_VIEW_FILES = 4, FEED_VIEW_SCREEN = 8 };

#define FEED_HISTORY_MAX_LINES 50000

struct feed {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int wake_fd[2];
	int stop;
	pthread_t data_thread, screen_thread;
	int threads;
	int screen_done; /* the screen thread has ended */

	/* requests, written by the UI */
	char *want_computer;	      /* id */
	char *want_run;		      /* id */
	char *want_dir;		      /* workspace-relative directory, "" the root */
	char *want_file;	      /* workspace-relative file to preview, or NULL */
	unsigned views;		      /* enum feed_view bits: what is visible */
	int screen_cols, screen_rows; /* the screen pane's cells */
	uint64_t poke;		      /* bumped on every request change */

	/* results, written by the threads */
	int loaded;  /* the first full load is in */
	char *error; /* the last engine error, or NULL */
	struct feed_computer *computers;
	size_t ncomputers;
	struct feed_run *runs;
	size_t nruns;
	char *timeline_run;
	struct feed_lines timeline; /* the run's row, then one line per event */
	size_t timeline_head;	    /* how many lines the row takes */
	int64_t timeline_seq;	    /* the last event in it */
	struct feed_thumb *thumbs;  /* pictures among the event lines, in order */
	size_t nthumbs;
	char *history_computer;
	struct feed_lines history;
	int history_partial; /* the last line has no newline yet */
	int64_t history_last_id;
	uint64_t history_ver;
	char *files_computer, *files_dir;
	struct feed_file *files;
	size_t nfiles;
	char *files_error; /* the workspace could not be read */
	char *preview_path;
	struct feed_lines preview;
	char *preview_note; /* "binary file", "first 64 KiB" ... or NULL */
	uint64_t files_ver;

	/* the screen */
	char *screen_computer;
	unsigned char *screen_rgb; /* packed RGB, screen_w x screen_h */
	int screen_w, screen_h, screen_full_w, screen_full_h;
	uint64_t screen_frames;
	char screen_hash[17];
	char *screen_status; /* why there is no picture, or NULL */
	uint64_t screen_ver;

	/* takeover: the control lease and the input waiting to go out */
	int takeover_want, takeover_held;
	char *takeover_error;
	char **input; /* action batches (JSON), in order */
	size_t ninput;

	/* a download or an upload, one at a time, on a thread of its own */
	pthread_t transfer_thread;
	int transfer_started, transfer_busy;
	char *transfer_msg; /* its outcome, for the footer, or NULL */

	const char *data_dir; /* borrowed from the UI's engine */
	char *consumer;
};

/* Starts both threads. 0, or a negative code with err set. */
int feed_start(struct feed *f, const char *data_dir, struct rk_error *err);
/* Stops and joins them (releasing a held lease), then frees everything;
 * for the process's exit only if the screen thread is stuck in a display
 * call (then it and the feed are left as they are). */
int feed_stop(struct feed *f); /* 1: the screen thread was left running */
/* With the lock held: after changing a request. */
void feed_poke(struct feed *f);
/* With the lock held: queues one takeover action (a JSON object) for the screen thread. */
void feed_input(struct feed *f, const char *action_json);
/* With the lock held: starts a download (remote file of the computer to
 * local, which must not exist) or an upload (local file to remote) through
 * the provider. -1 while another one runs. */
int feed_transfer(struct feed *f, int upload, const char *computer, const char *remote, const char *local);
/* Reads the wake pipe dry. */
void feed_drain(struct feed *f);

/* The timeline's pictures: FEED_THUMB_W x FEED_THUMB_H pixels at most, drawn from
 * this column of the pane. */
#define FEED_THUMB_W 32
#define FEED_THUMB_H 20
#define FEED_THUMB_X 9

#endif
