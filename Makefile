# rakazo: one Makefile, no generators.
#   make            build ./rakazo (and librakazo.a)
#   make check      layer check, unit tests, conformance, bats suites
#   make lint       scan-build (the clang analyser) and cppcheck; any report fails
#   make format     clang-format the sources (.clang-format); format-check: dry run
#   make check-pg   the state's tests on a throwaway PostgreSQL (scripts/pg.sh)
#   make bench      benchmarks (BENCH=NAME for one)
#   make model-server  the scripted model server the demo replays
#   make asan       ASan+UBSan build in build-asan/ and the tests against it
#   make install    PREFIX=/usr/local DESTDIR=
#   make deps       the Debian packages the build and tests need (idempotent)
#   make image      the computer image (debootstrap + docker import)

VERSION := 0.1.0
PREFIX ?= /usr/local
DESTDIR ?=
BUILD ?= build
CC ?= cc

PKGS := libcurl libcjson libsodium libarchive libvncclient sqlite3 libpng libjpeg libzstd libmicrohttpd libwebsockets libpq
UI_PKGS := ncursesw readline

IMAGE_TAG := $(shell sh image/build.sh --tag 2>/dev/null)

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
CFLAGS ?= -O2 -g
ALL_CFLAGS := -std=c17 -D_GNU_SOURCE -iquote . $(WARN) $(CFLAGS) $(EXTRA_CFLAGS) -MMD -MP \
	-DRK_VERSION='"$(VERSION)"' -DRK_IMAGE_TAG='"$(IMAGE_TAG)"' \
	$(shell pkg-config --cflags $(PKGS) $(UI_PKGS) 2>/dev/null)
LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lutil -lpthread -lm
UI_LIBS := $(shell pkg-config --libs $(UI_PKGS) 2>/dev/null)
LDFLAGS ?=
ALL_LDFLAGS := $(LDFLAGS) $(EXTRA_LDFLAGS)

# The version and image tag are compiled in: the stamp changes when they do
# (a new image recipe), and everything compiled depends on it, so no object
# keeps an old tag.
STAMP := $(BUILD)/version.stamp
$(shell mkdir -p $(BUILD); echo "$(VERSION) $(IMAGE_TAG)" | cmp -s - $(STAMP) 2>/dev/null || \
	echo "$(VERSION) $(IMAGE_TAG)" >$(STAMP))

# The static in-computer exec agent (and its DevTools bridge) is not engine code.
AGENT_SRC := providers/docker/agent.c providers/docker/cdp_bridge.c
ENGINE_SRC := $(filter-out $(AGENT_SRC),$(sort $(wildcard engine/*/*.c providers/*.c providers/*/*.c)))
# The HTTP API is a client of the engine, like cmd/: its own archive.
API_SRC := $(sort $(wildcard api/*.c))
CLI_SRC := $(sort $(wildcard cmd/*.c tui/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
HELPER_SRC := $(sort $(wildcard tests/fixtures/*.c tests/emulators/*.c tests/bench/*.c tests/conformance/*.c))
# What lint and format cover: the engine, its providers and its clients.
TREE_SRC := $(sort $(wildcard engine/*/*.[ch] api/*.[ch] providers/*.[ch] providers/*/*.[ch] cmd/*.[ch] tui/*.[ch]))

ENGINE_OBJ := $(ENGINE_SRC:%.c=$(BUILD)/%.o)
API_OBJ := $(API_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/unit/%)
HELPER_BIN := $(HELPER_SRC:%.c=$(BUILD)/%)

# The sub-commands that get rakazo-SUB links (kept equal to cmd/main.c's table by a test).
SUBCOMMANDS := $(filter-out help version,$(shell sh scripts/subcommands.sh))

all: rakazo $(BUILD)/rakazo-agent

rakazo: $(BUILD)/rakazo
	@ln -sf $(BUILD)/rakazo rakazo

$(BUILD)/librakazo.a: $(ENGINE_OBJ)
	@mkdir -p $(@D)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/librakazo-api.a: $(API_OBJ)
	@mkdir -p $(@D)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/rakazo: $(CLI_OBJ) $(BUILD)/librakazo-api.a $(BUILD)/librakazo.a
	$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/librakazo-api.a $(BUILD)/librakazo.a $(UI_LIBS) $(LIBS)

# Plain libc and static: it runs inside whatever image a computer has.
$(BUILD)/rakazo-agent: $(AGENT_SRC)
	@mkdir -p $(@D)
	$(CC) -std=c17 -D_GNU_SOURCE -iquote . $(WARN) $(CFLAGS) -static -o $@ $(AGENT_SRC)

$(BUILD)/%.o: %.c $(STAMP)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<
# providers/script.c builds the image's scripts in (.incbin)
$(BUILD)/providers/script.o: $(wildcard image/rootfs/usr/local/bin/rakazo-*)

$(BUILD)/tests/unit/%: tests/unit/%.c tests/unit/check.h $(BUILD)/librakazo-api.a $(BUILD)/librakazo.a $(STAMP)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/librakazo-api.a $(BUILD)/librakazo.a $(LIBS)

$(BUILD)/tests/%: tests/%.c $(BUILD)/librakazo-api.a $(BUILD)/librakazo.a $(STAMP)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/librakazo-api.a $(BUILD)/librakazo.a $(LIBS)

test-bins: $(UNIT_BIN) $(HELPER_BIN) $(BUILD)/rakazo-agent

# The scripted model the README demo replays (scripts/demo.sh): the server
# and its protocols (tests/emulators/model/), which decode the requests'
# PNG and JPEG images.
MODEL_SERVER_SRC := tests/emulators/model_server.c $(sort $(wildcard tests/emulators/model/*.c))
$(BUILD)/tests/emulators/model_server: $(MODEL_SERVER_SRC) $(wildcard tests/emulators/model/*.h) \
		$(BUILD)/librakazo-api.a $(BUILD)/librakazo.a $(STAMP)
	@mkdir -p $(@D)
	$(CC) $(filter-out -MMD -MP,$(ALL_CFLAGS)) $(ALL_LDFLAGS) -o $@ $(MODEL_SERVER_SRC) $(BUILD)/librakazo-api.a \
		$(BUILD)/librakazo.a $(LIBS) -ljpeg

model-server: $(BUILD)/tests/emulators/model_server

# The engine and providers never touch the terminal (no curses, no stdout, no
# exit()), and the wings' arrows point down: no upward edge, no cycle
# (scripts/graph.py --check, which reads calls from the objects: built first).
layer-check: $(BUILD)/rakazo
	@BUILD=$(BUILD) sh scripts/layer-check.sh

# The include and call graph between the wings' modules, its upward edges
# and its cycles (calls are read from the objects: built first).
graph: $(BUILD)/rakazo
	@python3 scripts/graph.py --build $(BUILD)

check: rakazo test-bins layer-check
	RAKAZO_BIN=$(CURDIR)/$(BUILD)/rakazo BUILD=$(BUILD) sh tests/run.sh

unit: test-bins
	BUILD=$(BUILD) sh tests/run.sh unit

# The state on PostgreSQL alone (make check runs it too, last): a throwaway
# server on a unix socket (scripts/pg.sh), then the database unit tests and
# the state-heavy bats suites against it (tests/run.sh's PG_UNITS, PG_SUITES).
check-pg: rakazo test-bins
	RAKAZO_BIN=$(CURDIR)/$(BUILD)/rakazo BUILD=$(BUILD) sh tests/run.sh pg

bench: rakazo test-bins
	RAKAZO_BIN=$(CURDIR)/$(BUILD)/rakazo BUILD=$(BUILD) sh tests/bench/run.sh $(BENCH)

asan:
	$(MAKE) BUILD=build-asan CFLAGS='-O1 -g -fno-omit-frame-pointer' \
		EXTRA_CFLAGS='-fsanitize=address,undefined -fno-sanitize-recover=undefined' \
		EXTRA_LDFLAGS='-fsanitize=address,undefined' build-asan/rakazo test-bins-asan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
		RAKAZO_BIN=$(CURDIR)/build-asan/rakazo BUILD=build-asan sh tests/run.sh

test-bins-asan:
	$(MAKE) BUILD=build-asan CFLAGS='-O1 -g -fno-omit-frame-pointer' \
		EXTRA_CFLAGS='-fsanitize=address,undefined -fno-sanitize-recover=undefined' \
		EXTRA_LDFLAGS='-fsanitize=address,undefined' test-bins

# Static analysis, clean or it fails. cppcheck first (seconds), then the
# clang analyser over a fresh build of its own in build-lint/ (build/ stays
# as it is; fresh, or unchanged files would go unread). A false positive is
# restructured away, or suppressed at its line with the reason why
# (// cppcheck-suppress id); what err.h and db.h tell the analyser about
# code in other files is under __clang_analyzer__ there.
LINT_BUILD := build-lint
LINT_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# sys/queue.h's LIST_* macros, which cppcheck cannot see without the system headers
QUEUE_H := $(firstword $(wildcard /usr/include/*/sys/queue.h /usr/include/sys/queue.h))
CPPCHECK_FLAGS := -q -j$(LINT_JOBS) --std=c11 --enable=warning,portability --inline-suppr --error-exitcode=1 \
	-I. -D_GNU_SOURCE $(if $(QUEUE_H),--include=$(QUEUE_H)) --suppress=missingIncludeSystem \
	--template='{file}:{line}:{column}: {severity}: {message} [{id}]'

lint: format-check
	cppcheck $(CPPCHECK_FLAGS) $(filter %.c,$(TREE_SRC))
	rm -rf $(LINT_BUILD)
	scan-build --status-bugs -o $(LINT_BUILD)/scan $(MAKE) -s -j$(LINT_JOBS) BUILD=$(LINT_BUILD) \
		CFLAGS='-O0 -g0' $(LINT_BUILD)/rakazo $(LINT_BUILD)/rakazo-agent

# The house format (.clang-format, tuned with clang-format 14).
format:
	clang-format -i $(TREE_SRC)

format-check:
	clang-format --dry-run --Werror $(TREE_SRC)

deps:
	sh scripts/deps.sh

image:
	sh scripts/dockerd.sh >/dev/null
	sh image/build.sh

install: rakazo $(BUILD)/rakazo-agent
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/rakazo/image \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions \
		$(DESTDIR)$(PREFIX)/share/zsh/site-functions \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	install -m 0755 $(BUILD)/rakazo $(DESTDIR)$(PREFIX)/bin/rakazo
	install -m 0755 $(BUILD)/rakazo-agent $(DESTDIR)$(PREFIX)/bin/rakazo-agent
	for s in $(SUBCOMMANDS); do ln -sf rakazo $(DESTDIR)$(PREFIX)/bin/rakazo-$$s; done
	install -m 0644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	cp -R image/. $(DESTDIR)$(PREFIX)/share/rakazo/image/
	install -m 0644 completions/rakazo.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/rakazo
	install -m 0644 completions/_rakazo $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_rakazo
	install -m 0644 completions/rakazo.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/rakazo.fish

clean:
	rm -rf build build-asan build-lint rakazo

.PHONY: all check check-pg unit bench asan test-bins model-server test-bins-asan layer-check graph lint format \
	format-check deps image install clean

-include $(ENGINE_OBJ:.o=.d) $(API_OBJ:.o=.d) $(CLI_OBJ:.o=.d)
