# tickd build.
#
#   make            build build/libtickd.a, build/tickd, build/tickctl
#   make run        install missing dependencies, build, run tickd in the foreground
#   make check      install missing dependencies, build, run every test, then one
#                   more pass of the unit and integration tests under ASan + UBSan
#   make bench      build without sanitizers, run the benchmarks, write build/bench.json
#   make hostile    hostile clients against a real daemon (outside make check)
#   make tsan       every test under ThreadSanitizer (outside make check)
#   make install    PREFIX=/usr/local DESTDIR=
#
# Dependencies come from Debian packages; `make deps` installs the ones pkg-config
# cannot find (apt-get, as root or through sudo) and does nothing otherwise.

BUILD    ?= build
CC       ?= cc
PREFIX   ?= /usr/local
DESTDIR  ?=
SAN      ?=
PKG_CONFIG ?= pkg-config

# pkg-config name -> Debian package
DEP_PKGS  := libevent:libevent-dev jansson:libjansson-dev inih:libinih-dev check:check
DEB_TOOLS := pkg-config
# command -> Debian package: tools the tests run (promtool and prometheus
# check and scrape the /metrics endpoint; python3 and pip3 run and install
# the Python client, tests/python)
DEP_CMDS  := promtool:prometheus prometheus:prometheus python3:python3 pip3:python3-pip
# Python module -> Debian package: modules the Python tests import (jsonschema
# checks rpc.discover's document against the OpenRPC meta-schema; yaml reads
# the Kubernetes manifests of deploy/k8s); found in python3 or in the system's
# /usr/bin/python3
DEP_PYMODS := jsonschema:python3-jsonschema yaml:python3-yaml

CSTD     := -std=c11 -D_GNU_SOURCE
WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wno-unused-parameter
OPT      ?= -O2 -g
# float-cast-overflow: not in gcc's "undefined" (clang's has it: the fuzz
# build found a negative default converted to an unsigned integer).
ifeq ($(SAN),1)
OPT      := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined,float-cast-overflow \
            -fno-sanitize-recover=undefined,float-cast-overflow
SANLD    := -fsanitize=address,undefined,float-cast-overflow
endif
ifeq ($(SAN),thread)
OPT      := -O1 -g -fno-omit-frame-pointer -fsanitize=thread
SANLD    := -fsanitize=thread
endif
CFLAGS   ?=
CFLAGS   += $(CSTD) $(WARN) $(OPT) -Iinclude -Isrc -MMD -MP \
            -DTKD_PLUGIN_DIR='"$(PREFIX)/lib/tickd/plugins"'
LDFLAGS  += $(SANLD)

# Only resolved when something needs them, so `make deps` works on a bare machine.
PC_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(1) 2>/dev/null)
PC_LIBS   = $(shell $(PKG_CONFIG) --libs $(1) 2>/dev/null)

CORE_SRC   := $(wildcard src/core/*.c)
SIM_SRC    := $(wildcard src/sim/*.c)
DAEMON_SRC := $(filter-out src/daemon/main.c,$(wildcard src/daemon/*.c))
CLI_SRC    := $(wildcard src/cli/*.c)
LOAD_SRC   := $(wildcard src/load/*.c)
# Code shared by tickctl, tickd-load (the default socket, --world) and the
# daemon (instance names).
COMMON_SRC := $(wildcard src/common/*.c)
UNIT_SRC   := $(wildcard tests/test_*.c)
DUNIT_SRC  := $(wildcard tests/daemon/test_*.c)
INTEG_SRC  := $(wildcard tests/integration/test_*.c)
INTEG_LIB  := $(filter-out $(INTEG_SRC),$(wildcard tests/integration/*.c))
BENCH_SRC  := $(wildcard bench/bench_*.c)
BENCH_LIB  := $(filter-out $(BENCH_SRC),$(wildcard bench/*.c))
EXAMPLES   := $(wildcard examples/*.c)
PLUGIN_SRC := $(wildcard plugins/*.c)
TPLUGIN_SRC:= $(wildcard tests/plugins/*.c)
PLUGINS    = $(patsubst plugins/%.c,$(BUILD)/plugins/%.so,$(PLUGIN_SRC))
TPLUGINS   = $(patsubst tests/plugins/%.c,$(BUILD)/tests/plugins/%.so,$(TPLUGIN_SRC))
FUZZ_SRC     := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_NAMES   := $(patsubst tests/fuzz/fuzz_%.c,%,$(FUZZ_SRC))
FUZZ_SECONDS ?= 60
# Per-input limits of `make fuzz`: past any of them libFuzzer stops and saves
# the input as a finding (build/fuzz/crash-<name>-timeout-*, -oom-*).  Inputs
# take milliseconds (the slowest stored ones, a second under ASan); one
# allocation of more than FUZZ_MALLOC_MB is a bug by itself (the 116-byte
# snapshot naming timer slot 16,777,214 asked for 512 MiB at once, then ran
# 11 s in 1.5 GiB).
FUZZ_TIMEOUT   ?= 10
FUZZ_RSS_MB    ?= 2048
FUZZ_MALLOC_MB ?= 256
FUZZ_BUILD   := build/fuzz
FUZZ_FLAGS   := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
# The core and the entity layer are built for fuzzing without comparison
# tracing (trace-cmp: a call per comparison, for the mutator's table of
# compared values): their comparisons are of ids, counters and indexes in
# hot loops, not of input bytes; edge coverage stays.  The daemon's
# parsers (requests, params, config, snapshots) keep it.  The request
# target runs a quarter faster for it.
NOCMP_FUZZ   := src/core/% src/sim/%
REPLAY_BIN   := $(if $(FUZZ_SRC),$(BUILD)/tests/fuzz/replay)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

LIBTICKD   := $(BUILD)/libtickd.a
LIBDAEMON  := $(BUILD)/libtickdd.a
TICKD      := $(BUILD)/tickd
TICKCTL    := $(BUILD)/tickctl
TICKLOAD   := $(BUILD)/tickd-load
UNIT_BIN   := $(patsubst tests/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
DUNIT_BIN  := $(patsubst tests/daemon/%.c,$(BUILD)/tests/daemon/%,$(DUNIT_SRC))
INTEG_BIN  := $(patsubst tests/integration/%.c,$(BUILD)/tests/integration/%,$(INTEG_SRC))
BENCH_BIN  := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))
EXAMPLE_BIN:= $(patsubst examples/%.c,$(BUILD)/examples/%,$(EXAMPLES))

DAEMON_PKGS := libevent jansson inih
BINARIES := $(LIBTICKD)
ifneq ($(wildcard src/daemon/main.c),)
BINARIES += $(TICKD)
endif
ifneq ($(CLI_SRC),)
BINARIES += $(TICKCTL)
endif
ifneq ($(LOAD_SRC),)
BINARIES += $(TICKLOAD)
endif

.PHONY: all deps build run check check-run check-tests unit integration bench benchbins clean install uninstall FORCE \
        fuzz fuzzbins valgrind soak hostile model-fuzz crash-soak \
        tests examples
.DEFAULT_GOAL := all

all: deps
	@$(MAKE) --no-print-directory build

build: $(BINARIES) $(EXAMPLE_BIN) $(PLUGINS)

# Entity-class plugins (tickd/plugin.h): shared objects, one per source.
$(BUILD)/plugins/%.so: plugins/%.c include/tickd/plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -shared -o $@ $< $(LDFLAGS) -lm

$(BUILD)/tests/plugins/%.so: tests/plugins/%.c include/tickd/plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -shared -o $@ $< $(LDFLAGS) -lm

deps:
	@missing=""; \
	command -v $(PKG_CONFIG) >/dev/null 2>&1 || missing="$(DEB_TOOLS)"; \
	for pair in $(DEP_PKGS); do \
	  pc=$${pair%%:*}; deb=$${pair#*:}; \
	  $(PKG_CONFIG) --exists $$pc 2>/dev/null || missing="$$missing $$deb"; \
	done; \
	for pair in $(DEP_CMDS); do \
	  cmd=$${pair%%:*}; deb=$${pair#*:}; \
	  command -v $$cmd >/dev/null 2>&1 || case " $$missing " in *" $$deb "*) ;; \
	    *) missing="$$missing $$deb";; esac; \
	done; \
	for pair in $(DEP_PYMODS); do \
	  mod=$${pair%%:*}; deb=$${pair#*:}; \
	  python3 -c "import $$mod" >/dev/null 2>&1 || \
	    /usr/bin/python3 -c "import $$mod" >/dev/null 2>&1 || missing="$$missing $$deb"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; \
	  elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; \
	  else echo "deps: need root or sudo to install:$$missing" >&2; exit 1; fi; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(if $(filter src/core/%,$<),,$(call PC_CFLAGS,$(DAEMON_PKGS) check)) $(if $(filter $(NOCMP_SRC),$<),$(NOCMP_FLAGS)) -c $< -o $@

$(LIBTICKD): $(call obj,$(CORE_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBDAEMON): $(call obj,$(SIM_SRC) $(DAEMON_SRC) $(COMMON_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(TICKD): $(call obj,src/daemon/main.c) $(LIBDAEMON) $(LIBTICKD)
	$(CC) $(LDFLAGS) -o $@ $^ $(call PC_LIBS,$(DAEMON_PKGS)) -lm -ldl -lpthread

# tickctl writes reals as the daemon does (src/daemon/jsonw.c needs jansson only).
$(TICKCTL): $(call obj,$(CLI_SRC) $(COMMON_SRC) src/daemon/jsonw.c)
	$(CC) $(LDFLAGS) -o $@ $^ $(call PC_LIBS,jansson) -lm

$(TICKLOAD): $(call obj,$(LOAD_SRC) $(COMMON_SRC))
	$(CC) $(LDFLAGS) -o $@ $^ $(call PC_LIBS,jansson) -lm

# tickd-load looks for scenario names in SCENARIODIR, where `make install`
# puts scripts/scenarios (after the source trees).  The path is compiled in;
# the stamp holds the value main.o was built with, so a new PREFIX rebuilds it.
SCENARIODIR ?= $(PREFIX)/share/tickd/scenarios
$(BUILD)/obj/src/load/main.o: CFLAGS += -DTICKD_SCENARIO_DIR='"$(SCENARIODIR)"'
$(BUILD)/obj/src/load/main.o: $(BUILD)/scenariodir.stamp
$(BUILD)/scenariodir.stamp: FORCE
	@mkdir -p $(dir $@)
	@echo '$(SCENARIODIR)' | cmp -s - $@ || echo '$(SCENARIODIR)' > $@
FORCE:

# Core unit tests link libtickd alone: the core must stand without the daemon.
$(BUILD)/tests/test_%: $(call obj,tests/test_%.c) $(LIBTICKD)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(call PC_LIBS,check) -lm -lpthread

$(BUILD)/tests/daemon/%: $(call obj,tests/daemon/%.c) $(LIBDAEMON) $(LIBTICKD)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(call PC_LIBS,check $(DAEMON_PKGS)) -lm -ldl -lpthread

$(BUILD)/tests/integration/%: $(call obj,tests/integration/%.c $(INTEG_LIB)) $(LIBDAEMON) $(LIBTICKD)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(call PC_LIBS,check $(DAEMON_PKGS)) -lm -ldl -lpthread

$(BUILD)/bench/%: $(call obj,bench/%.c $(BENCH_LIB)) $(LIBDAEMON) $(LIBTICKD)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(call PC_LIBS,$(DAEMON_PKGS)) -lm -ldl -lpthread

$(BUILD)/examples/%: $(call obj,examples/%.c) $(LIBTICKD)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lm -lpthread

tests: $(BINARIES) $(UNIT_BIN) $(DUNIT_BIN) $(INTEG_BIN) $(EXAMPLE_BIN) $(REPLAY_BIN) \
       $(PLUGINS) $(TPLUGINS)

run: deps
	@$(MAKE) --no-print-directory build
	@mkdir -p run
	exec ./$(TICKD) --config config/tickd.ini

# One pass with the normal build, one under AddressSanitizer + UBSan.
# The plain and the sanitized pass are built one after the other (each with
# every core), then run side by side (most integration tests wait on 60 Hz
# frames, not on a CPU); each pass's output is printed whole once both ended.
check: deps
	@$(MAKE) --no-print-directory -j$(JOBS) tests
	@$(MAKE) --no-print-directory BUILD=build/asan SAN=1 -j$(JOBS) tests
	@mkdir -p build/asan; \
	  $(MAKE) --no-print-directory check-tests >build/check.log 2>&1 & plain=$$!; \
	  $(MAKE) --no-print-directory BUILD=build/asan SAN=1 check-tests >build/asan/check.log 2>&1; \
	  asan=$$?; wait $$plain; plain=$$?; \
	  cat build/check.log build/asan/check.log; \
	  test $$plain = 0 && test $$asan = 0

# Builds use every core (JOBS); the tests run one binary at a time.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

check-run:
	@$(MAKE) --no-print-directory -j$(JOBS) tests
	@$(MAKE) --no-print-directory check-tests

check-tests:
	@BUILD=$(BUILD) SAN=$(SAN) scripts/run-tests.sh $(UNIT_BIN) $(DUNIT_BIN) $(INTEG_BIN) $(EXAMPLE_BIN) $(REPLAY_BIN) \
	  tests/python/run_tests.py

bench: deps
	@$(MAKE) --no-print-directory BUILD=build/bench SAN= OPT="-O2 -g" benchbins
	@scripts/bench.sh build/bench

benchbins: build $(BENCH_BIN)

# libFuzzer targets (clang): tests/fuzz/fuzz_<name>.c each define
# tkd_fuzz_<name>(data, size); tests/fuzz/libfuzzer.c is their libFuzzer entry
# and tests/fuzz/replay.c a plain main that replays corpora (make check runs it).

$(BUILD)/tests/fuzz/replay: $(call obj,tests/fuzz/replay.c $(FUZZ_SRC)) $(LIBDAEMON) $(LIBTICKD)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(call PC_LIBS,$(DAEMON_PKGS)) -lm -ldl -lpthread

fuzzbins: deps
	@command -v clang >/dev/null || { echo "fuzz: clang is needed (apt-get install clang)" >&2; exit 1; }
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=clang SAN= OPT="-O1 -g $(FUZZ_FLAGS)" \
	  NOCMP_SRC="$(NOCMP_FUZZ)" NOCMP_FLAGS=-fno-sanitize-coverage=trace-cmp \
	  $(FUZZ_BUILD)/libtickd.a $(FUZZ_BUILD)/libtickdd.a \
	  $(foreach n,$(FUZZ_NAMES),$(FUZZ_BUILD)/obj/tests/fuzz/fuzz_$(n).o) \
	  $(FUZZ_BUILD)/obj/tests/fuzz/libfuzzer.o
	@for n in $(FUZZ_NAMES); do \
	  clang -fsanitize=fuzzer,address,undefined -DTKD_FUZZ_TARGET=tkd_fuzz_$$n -o $(FUZZ_BUILD)/fuzz_$$n \
	    -Iinclude -Isrc tests/fuzz/libfuzzer.c $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_$$n.o \
	    $(FUZZ_BUILD)/libtickdd.a $(FUZZ_BUILD)/libtickd.a \
	    $$($(PKG_CONFIG) --libs $(DAEMON_PKGS)) -lm -ldl -lpthread || exit 1; \
	done

# make fuzz FUZZ_SECONDS=60: run each target for that long on its corpus
# (new inputs go to build/fuzz/corpus-<name>); each ends with libFuzzer's
# stat:: lines (stat::average_exec_per_sec: the README's figures).
fuzz: fuzzbins
	@for n in $(FUZZ_NAMES); do \
	  mkdir -p build/fuzz/corpus-$$n; \
	  echo "== fuzz_$$n for $(FUZZ_SECONDS) s"; \
	  $(FUZZ_BUILD)/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_TIMEOUT) \
	    -rss_limit_mb=$(FUZZ_RSS_MB) -malloc_limit_mb=$(FUZZ_MALLOC_MB) -print_final_stats=1 \
	    -artifact_prefix=build/fuzz/crash-$$n- build/fuzz/corpus-$$n tests/fuzz/corpus/$$n \
	    || exit 1; \
	done

# ThreadSanitizer: every test binary, with the daemon and the library built
# with -fsanitize=thread (the threads: the tick workers of [engine] threads,
# world.load's reader, the freeing of what a load read; the save child is a
# process).  Outside make check (time).
tsan: deps
	@$(MAKE) --no-print-directory BUILD=build/tsan SAN=thread -j$(JOBS) tests
	@BUILD=build/tsan SAN=thread TKIT_SCALE=5 CK_DEFAULT_TIMEOUT=600 \
	  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  scripts/run-tests.sh $(patsubst $(BUILD)/%,build/tsan/%,$(UNIT_BIN) $(DUNIT_BIN) $(INTEG_BIN))

# Daemon integration tests under valgrind (zero errors, zero definite leaks);
# Check's test timeouts scaled by 20, as the harness scales its deadlines.
valgrind: deps
	@command -v valgrind >/dev/null || { echo "valgrind: apt-get install valgrind" >&2; exit 1; }
	@$(MAKE) --no-print-directory BUILD=build/valgrind SAN= OPT="-O1 -g" tests
	@TICKD_BIN=build/valgrind/tickd TICKD_VALGRIND=1 BUILD=build/valgrind CK_TIMEOUT_MULTIPLIER=20 \
	  scripts/run-tests.sh $(patsubst $(BUILD)/%,build/valgrind/%,$(INTEG_BIN))

# make hostile: the attacks of the hostile-clients issue against a real 60 Hz
# daemon (floods, idle and half-sent connections, huge batches, listings,
# spawns and removals of millions, prerequisite chains, log floods), each
# checked to leave it alive with no frame gap near the watchdog; about a
# minute.  `make bench` reports the same mix's largest gap.
hostile: deps
	@$(MAKE) --no-print-directory BUILD=build/bench SAN= OPT="-O2 -g" benchbins
	@BENCH_BUILD=build/bench build/bench/bench/bench_daemon --hostile

# make model-fuzz SEEDS=N [SEED0=s] [MODE=between|midframe|cycles|batched]
# [FRAMES=n]: a long differential campaign of libtickd against the model of
# Unreal's scheduler (tests/test_tick_model.c), N seeds of each kind; every
# difference is printed with the command that reproduces it.
SEEDS ?= 1000
model-fuzz: deps
	@$(MAKE) --no-print-directory $(BUILD)/tests/test_tick_model
	@TICK_MODEL_FUZZ=$(SEEDS) $(if $(SEED0),TICK_MODEL_SEED0=$(SEED0)) \
	  $(if $(MODE),TICK_MODEL_MODE=$(MODE)) $(if $(FRAMES),TICK_MODEL_FRAMES=$(FRAMES)) \
	  $(BUILD)/tests/test_tick_model

# make crash-soak CRASH_SOAK_KILLS=40: the journal under SIGKILL (not part of
# check, which runs 3 kills): for each fsync policy, a client streams numbered
# mutations under load, the daemon is killed at random moments that many
# times, each crash's files are replayed with tickd --replay (every recorded
# hash checked) and must give the world the restart recovers, and every
# acknowledged mutation must be there after each restart.
CRASH_SOAK_KILLS ?= 40
crash-soak: deps
	@$(MAKE) --no-print-directory BUILD=build/bench SAN= OPT="-O2 -g" build \
	  build/bench/tests/integration/test_journal
	@for p in always everysec no; do \
	  echo "== crash-soak: fsync = $$p, $(CRASH_SOAK_KILLS) kills"; \
	  BUILD=build/bench CK_RUN_CASE=crash CRASH_SOAK_FSYNC=$$p \
	    CRASH_SOAK_KILLS=$(CRASH_SOAK_KILLS) CRASH_SOAK_TIMEOUT=3600 \
	    build/bench/tests/integration/test_journal || exit 1; \
	done; echo "crash-soak: PASS"

# make soak SOAK_SECONDS=600: a long mixed run with checks (not part of check).
SOAK_SECONDS ?= 600
soak: deps
	@$(MAKE) --no-print-directory BUILD=build/bench SAN= OPT="-O2 -g" build
	@SOAK_SECONDS=$(SOAK_SECONDS) TICKD_BIN=build/bench/tickd TICKCTL_BIN=build/bench/tickctl \
	  scripts/soak.sh

clean:
	rm -rf build

# make install PREFIX=/usr/local DESTDIR= SYSCONFDIR=/etc: binaries, library and
# headers, the plugins in PREFIX/lib/tickd/plugins, tickd-load's scenarios in
# SCENARIODIR (PREFIX/share/tickd/scenarios), man pages, the systemd units
# (tickd.service and tickd@.service for one world per instance; ExecStart and
# the config path follow PREFIX and SYSCONFDIR), the sysusers.d snippet (user and group tickd), and
# SYSCONFDIR/tickd/tickd.ini: config/tickd.ini with the service's socket,
# snapshot and metrics paths (metrics on the Unix socket
# /run/tickd/metrics.sock: the unit allows no TCP), installed only when no
# such file exists.
SYSCONFDIR  ?= /etc
MANDIR      ?= $(PREFIX)/share/man
UNITDIR     ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
INST_CONFIG := $(DESTDIR)$(SYSCONFDIR)/tickd/tickd.ini

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/tickd \
	  $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(UNITDIR) \
	  $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(SYSCONFDIR)/tickd $(BUILD)/install
	install -m 0644 $(LIBTICKD) $(DESTDIR)$(PREFIX)/lib/
	install -m 0644 include/tickd/*.h $(DESTDIR)$(PREFIX)/include/tickd/
	install -m 0755 $(filter $(TICKD) $(TICKCTL) $(TICKLOAD),$(BINARIES)) $(DESTDIR)$(PREFIX)/bin/
	$(if $(PLUGINS),install -d $(DESTDIR)$(PREFIX)/lib/tickd/plugins)
	$(if $(PLUGINS),install -m 0755 $(PLUGINS) $(DESTDIR)$(PREFIX)/lib/tickd/plugins/)
	install -m 0644 man/tickd.8 $(DESTDIR)$(MANDIR)/man8/tickd.8
	install -m 0644 man/tickctl.1 $(DESTDIR)$(MANDIR)/man1/tickctl.1
	install -m 0644 man/tickd-load.1 $(DESTDIR)$(MANDIR)/man1/tickd-load.1
	install -d $(DESTDIR)$(SCENARIODIR)
	install -m 0644 scripts/scenarios/*.jsonl $(DESTDIR)$(SCENARIODIR)/
	sed -e 's|/usr/local/bin/tickd |$(PREFIX)/bin/tickd |' -e 's|/etc/tickd/|$(SYSCONFDIR)/tickd/|' \
	  systemd/tickd.service > $(BUILD)/install/tickd.service
	install -m 0644 $(BUILD)/install/tickd.service $(DESTDIR)$(UNITDIR)/tickd.service
	install -m 0644 systemd/tickd.socket $(DESTDIR)$(UNITDIR)/tickd.socket
	sed -e 's|/usr/local/bin/tickd |$(PREFIX)/bin/tickd |' -e 's|/etc/tickd/|$(SYSCONFDIR)/tickd/|' \
	  systemd/tickd@.service > $(BUILD)/install/tickd@.service
	install -m 0644 $(BUILD)/install/tickd@.service $(DESTDIR)$(UNITDIR)/tickd@.service
	install -m 0644 systemd/tickd@.socket $(DESTDIR)$(UNITDIR)/tickd@.socket
	install -m 0644 systemd/tickd.sysusers $(DESTDIR)$(SYSUSERSDIR)/tickd.conf
	@if [ -e $(INST_CONFIG) ]; then \
	  echo "install: keeping $(INST_CONFIG)"; \
	else \
	  sed -e 's|^socket = run/tickd.sock$$|socket = /run/tickd/tickd.sock|' \
	      -e 's|^path = run/tickd.snapshot.json$$|path = /var/lib/tickd/tickd.snapshot.json|' \
	      -e 's|^listen = 127.0.0.1:8497$$|listen = unix:/run/tickd/metrics.sock|' \
	      config/tickd.ini > $(BUILD)/install/tickd.ini && \
	  grep -q '^socket = /run/tickd/tickd.sock$$' $(BUILD)/install/tickd.ini && \
	  grep -q '^path = /var/lib/tickd/tickd.snapshot.json$$' $(BUILD)/install/tickd.ini && \
	  grep -q '^listen = unix:/run/tickd/metrics.sock$$' $(BUILD)/install/tickd.ini || \
	  { echo "install: config/tickd.ini: cannot set the service's socket, snapshot and metrics paths" >&2; exit 1; }; \
	  echo "install -m 0644 $(BUILD)/install/tickd.ini $(INST_CONFIG)"; \
	  install -m 0644 $(BUILD)/install/tickd.ini $(INST_CONFIG); \
	fi

# Removes what install put there, except the config file (the operator's).
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/lib/libtickd.a $(DESTDIR)$(PREFIX)/bin/tickd $(DESTDIR)$(PREFIX)/bin/tickctl \
	  $(DESTDIR)$(PREFIX)/bin/tickd-load
	rm -rf $(DESTDIR)$(PREFIX)/lib/tickd
	rm -rf $(DESTDIR)$(PREFIX)/include/tickd
	rm -f $(DESTDIR)$(MANDIR)/man8/tickd.8 $(DESTDIR)$(MANDIR)/man1/tickctl.1 \
	  $(DESTDIR)$(MANDIR)/man1/tickd-load.1
	rm -f $(patsubst scripts/scenarios/%,$(DESTDIR)$(SCENARIODIR)/%,$(wildcard scripts/scenarios/*.jsonl))
	rmdir $(DESTDIR)$(SCENARIODIR) $(DESTDIR)$(PREFIX)/share/tickd 2>/dev/null || :
	rm -f $(DESTDIR)$(UNITDIR)/tickd.service $(DESTDIR)$(UNITDIR)/tickd.socket \
	  $(DESTDIR)$(UNITDIR)/tickd@.service $(DESTDIR)$(UNITDIR)/tickd@.socket
	rm -f $(DESTDIR)$(SYSUSERSDIR)/tickd.conf
	@if [ -e $(INST_CONFIG) ]; then echo "uninstall: kept $(INST_CONFIG)"; fi

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
