# One Makefile: everything builds into build/. make never installs anything: the README's
# commands (./test.sh, ./run_all.sh) install what they need first (scripts/deps.sh).
#   make            all binaries (servers, loadgen, tests, test helpers)
#   make deps       install the missing build packages (scripts/deps.sh build; sudo when not root);
#                   any other goal names the missing ones and stops, when one is missing
#   make test       build, then run every test (tests/run.sh)
#   make bench-build  build every bench program (CI builds them, so none is left broken)
#   make check-tsan actor runtime tests, it_actor.py and the contract suite at --threads 4
#                   under ThreadSanitizer (build-thread/)
#   SANITIZER=address|undefined|thread   build with that sanitizer (into build-$(SANITIZER)/)
#   WERROR=1        warnings are errors (CI)
#   ASSERTS=1       the invariants (ASSERT, common/base/util.h) checked in the binaries
#                   too (into build-assert/); see "Invariants" below

CC      ?= cc
PKGS    := libuv ck sqlite3 jansson
LLHTTP_SRC := /usr/share/llhttp
LLHTTP_INC := /usr/share/include/llhttp

# Invariants: ASSERT (common/base/util.h) is compiled out of the benchmark build (the
# default build, -DNDEBUG: the binaries the runner measures) and kept everywhere else: the
# sanitizer builds, the fuzz targets, ASSERTS=1 builds, and the unit test programs and test
# helpers of every build, which link a checking copy of the libraries ($(BUILD)/assert/).
ifdef SANITIZER
ASSERTS ?= 1
else
ASSERTS ?= 0
endif

ifdef SANITIZER
BUILD ?= build-$(SANITIZER)
else ifeq ($(ASSERTS),1)
BUILD ?= build-assert
else
BUILD ?= build
endif

WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wformat=2 -Wvla -Wno-unused-parameter
OPT     ?= -O2 -g
CFLAGS  := -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) -pthread -I. -I$(LLHTTP_INC) \
           -DLLHTTP_STRICT_MODE=1 $(EXTRA_CFLAGS)
ifeq ($(WERROR),1)
CFLAGS  += -Werror
endif
ifneq ($(ASSERTS),1)
CFLAGS  += -DNDEBUG
endif
ifdef SANITIZER
CFLAGS  += -fsanitize=$(SANITIZER) -fno-omit-frame-pointer
ifeq ($(SANITIZER),address)
CFLAGS  += -fsanitize=undefined -fno-sanitize-recover=undefined
endif
LDFLAGS += -fsanitize=$(SANITIZER)
ifeq ($(SANITIZER),address)
LDFLAGS += -fsanitize=undefined
endif
endif
DEPFLAGS = -MMD -MP

# The commit the binaries are built from, for the servers' --version (common/app/options.c);
# "-dirty" when tracked files differ from it. $(BUILD)/git-commit changes only when the
# commit does, and options.o depends on it, so a new commit rebuilds that one object.
GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null)
ifneq ($(GIT_COMMIT),)
GIT_COMMIT := $(GIT_COMMIT)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
endif

# The build's packages, checked when make starts (one pkg-config call and two file names
# when all is there): a missing one is named, with its Debian package and `make deps`,
# instead of a compiler error about its first header. Not for deps, clean or fuzz*.
DEB_libuv := libuv1-dev
DEB_ck := libck-dev
DEB_sqlite3 := libsqlite3-dev
DEB_jansson := libjansson-dev
DEB_cmocka := libcmocka-dev
ifneq ($(filter-out deps clean fuzz fuzz-ci,$(or $(MAKECMDGOALS),all)),)
ifneq ($(shell pkg-config --exists $(PKGS) cmocka 2>/dev/null && echo ok),ok)
BUILD_MISSING := $(if $(shell pkg-config --version 2>/dev/null),,pkg-config) \
    $(foreach m,$(PKGS) cmocka,$(if $(shell pkg-config --exists $(m) 2>/dev/null && echo ok),,$(DEB_$(m))))
endif
ifneq ($(words $(wildcard $(LLHTTP_INC)/llhttp.h $(LLHTTP_SRC)/api.c)),2)
BUILD_MISSING += node-llhttp
endif
ifneq ($(strip $(BUILD_MISSING)),)
$(error missing build packages: $(strip $(BUILD_MISSING)). Run `make deps` to install them (scripts/deps.sh build))
endif
endif

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS  += $(PKG_CFLAGS)
LDLIBS  := $(PKG_LIBS) -lm -pthread
TEST_LIBS := $(shell pkg-config --libs cmocka 2>/dev/null)

# llhttp: Debian's generated sources, strict mode, warnings of our own off (not our code).
LLHTTP_OBJ := $(BUILD)/obj/llhttp/llhttp.o $(BUILD)/obj/llhttp/api.o $(BUILD)/obj/llhttp/http.o
$(BUILD)/obj/llhttp/%.o: $(LLHTTP_SRC)/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(OPT) -DLLHTTP_STRICT_MODE=1 -I$(LLHTTP_INC) $(if $(SANITIZER),-fsanitize=$(SANITIZER)) -w -c $< -o $@

COMMON_SRC := $(sort $(wildcard common/*/*.c))
COMMON_OBJ := $(COMMON_SRC:%.c=$(BUILD)/obj/%.o)
LIBCOMMON  := $(BUILD)/libcommon.a

ASYNC_OBJ  := $(patsubst %.c,$(BUILD)/obj/%.o,$(sort $(wildcard async-server/*.c)))
ACTOR_OBJ  := $(patsubst %.c,$(BUILD)/obj/%.o,$(sort $(wildcard actor-server/*.c)))
# the actor runtime (actor/): a library of its own, used by actor-server/, its tests and
# bench/contention
ACTOR_LIB_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(sort $(wildcard actor/*.c)))
LIBACTOR   := $(BUILD)/libactor.a
# what the unit tests and test helpers link: the libraries with ASSERT on (the same ones
# when the build has them on already)
ifeq ($(ASSERTS),1)
CHECK_LIBCOMMON := $(LIBCOMMON)
CHECK_LIBACTOR  := $(LIBACTOR)
else
CHECK_LIBCOMMON := $(BUILD)/assert/libcommon.a
CHECK_LIBACTOR  := $(BUILD)/assert/libactor.a
endif
LOADGEN_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(sort $(wildcard loadgen/*.c)))
LOADGEN_LIB_OBJ := $(filter-out $(BUILD)/obj/loadgen/main.o,$(LOADGEN_OBJ))

BINS := $(BUILD)/async-server
ifneq ($(ACTOR_OBJ),)
BINS += $(BUILD)/actor-server
endif
ifneq ($(LOADGEN_OBJ),)
BINS += $(BUILD)/loadgen
endif

# tests/test_X.c -> $(BUILD)/tests/test_X (cmocka); test_actor_* link the actor runtime,
# test_loadgen_* the load generator's modules. tests/helpers/*.c are small test servers.
TEST_SRC   := $(sort $(wildcard tests/test_*.c))
TEST_BINS  := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
HELPER_SRC := $(sort $(wildcard tests/helpers/*.c))
HELPER_BINS := $(HELPER_SRC:tests/helpers/%.c=$(BUILD)/tests/helpers/%)

# Keep the objects of test programs (otherwise make deletes them as intermediates and
# relinks every time).
.SECONDARY:

.PHONY: all binaries deps test check-tsan check-asan check-bundle clean bench-micro bench-instr \
        bench-contention bench-build fuzz
all: binaries

binaries: $(BINS) $(TEST_BINS) $(HELPER_BINS)
	@:

deps:
	@scripts/deps.sh build

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/assert/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -UNDEBUG $(DEPFLAGS) -c $< -o $@

# the test programs themselves too: ASSERTs inline in headers (actor.h's actor_send,
# sched.h's sched_local_push) are compiled into them
$(BUILD)/obj/tests/%.o: CFLAGS += -UNDEBUG

# the commit --version prints: the servers' (common/app/options.c) and the load generator's
VERSION_OBJ := $(BUILD)/obj/common/app/options.o $(BUILD)/assert/obj/common/app/options.o \
               $(BUILD)/obj/loadgen/main.o
$(VERSION_OBJ): CFLAGS += -DBUILD_GIT_COMMIT='"$(GIT_COMMIT)"'
$(VERSION_OBJ): $(BUILD)/git-commit
$(BUILD)/git-commit: FORCE
	@mkdir -p $(dir $@)
	@echo '$(GIT_COMMIT)' | cmp -s - $@ 2>/dev/null || echo '$(GIT_COMMIT)' > $@
.PHONY: FORCE
FORCE:

$(LIBCOMMON): $(COMMON_OBJ) $(LLHTTP_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/async-server: $(ASYNC_OBJ) $(LIBCOMMON)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(LIBACTOR): $(ACTOR_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/assert/libcommon.a: $(COMMON_SRC:%.c=$(BUILD)/assert/obj/%.o) $(LLHTTP_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/assert/libactor.a: $(patsubst $(BUILD)/obj/%,$(BUILD)/assert/obj/%,$(ACTOR_LIB_OBJ))
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/actor-server: $(ACTOR_OBJ) $(LIBACTOR) $(LIBCOMMON)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/loadgen: $(LOADGEN_OBJ) $(LIBCOMMON)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tests/test_actor_%: $(BUILD)/obj/tests/test_actor_%.o $(CHECK_LIBACTOR) $(CHECK_LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(TEST_LIBS) $(LDLIBS) -o $@

$(BUILD)/tests/test_loadgen_%: $(BUILD)/obj/tests/test_loadgen_%.o $(LOADGEN_LIB_OBJ) $(CHECK_LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(TEST_LIBS) $(LDLIBS) -o $@

$(BUILD)/tests/test_%: $(BUILD)/obj/tests/test_%.o $(CHECK_LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(TEST_LIBS) $(LDLIBS) -o $@

$(BUILD)/tests/helpers/%: $(BUILD)/obj/tests/helpers/%.o $(CHECK_LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

test: binaries
	@BUILD=$(BUILD) tests/run.sh

# The actor runtime's unit tests (topology and the ladder's mailboxes included), then
# it_actor.py, it_counters.py (every ladder rung: spread, malloc, copy, ring, mutex) and
# the contract suite at --threads 4 (both servers) on the TSan build: races under real
# parallelism.
check-tsan:
	@$(MAKE) --no-print-directory SANITIZER=thread all
	@BUILD=build-thread TEST_FILTER=actor tests/run.sh --unit-only
	@BUILD=build-thread TEST_FILTER=it_actor tests/run.sh --it-only
	@BUILD=build-thread TEST_FILTER=it_counters tests/run.sh --it-only
	@BUILD=build-thread TEST_FILTER=it_contract_t4 tests/run.sh --it-only

# The bundle on a bare Debian 12 root cut off from the network (tests/check_bundle.sh, TAP;
# root and debootstrap, minutes): apart from `make test` to keep the suite's time, run by CI.
check-bundle:
	@tests/check_bundle.sh

# ASan+UBSan: the C unit tests, the server suites and the load generator's (the runner, sweep,
# distributed, report, servers, cores, re-run, command-line, cost, calibration, campaign,
# render, peers and harness suites and the Python tests
# measure speed-shaped behaviour or only the Python analysis, and are left to the normal build).
check-asan:
	@$(MAKE) --no-print-directory SANITIZER=address all
	@BUILD=build-address TEST_SKIP="it_runner it_sweep it_distributed it_report it_servers it_cores it_reruns it_cli test_analysis test_sweep test_verdict test_scaling test_cpuplan test_threads test_rounds test_stationary test_stats test_servers test_verify it_calibrate it_campaign it_cost it_render it_peers it_running it_testrun test_atomic test_calibration test_campaign test_cost test_includes test_make_deps test_private_dir test_promtext test_ran" tests/run.sh

clean:
	rm -rf build build-assert build-address build-undefined build-thread

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# ---- bench (bench/README.md): micro-benchmarks of the request path, no sockets ----
BENCH_OBJ := $(BUILD)/obj/bench/micro.o

$(BUILD)/bench/micro: $(BENCH_OBJ) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

bench-micro: $(BUILD)/bench/micro
	@BUILD=$(BUILD) bench/micro.sh $(BENCH_ARGS)

# message passing against mutex contention, no sockets (bench/contention.sh)
$(BUILD)/bench/contention: $(BUILD)/obj/bench/contention.o $(LIBACTOR) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

bench-contention: $(BUILD)/bench/contention
	@BUILD=$(BUILD) bench/contention.sh $(BENCH_ARGS)

# every bench program, built and not run
bench-build: $(BUILD)/bench/micro $(BUILD)/bench/contention
	@:

# whole-server instructions per request under callgrind (bench/instr-per-req.sh)
bench-instr: $(BUILD)/async-server $(BUILD)/actor-server
	@BUILD=$(BUILD) bench/instr-per-req.sh $(BENCH_ARGS)
# ---- end bench ----

# ---- fuzzing (issues 7 and 25; tests/fuzz/) ------------------------------------------
#   make fuzz       libFuzzer (clang, ASan+UBSan) for FUZZ_SECONDS (default 60) per target:
#                   fuzz_request (the request path, no sockets) and fuzz_conn (the
#                   connection layer on a socketpair, the timing in the input); new inputs
#                   go to build-fuzz/corpus/ and build-fuzz/corpus_conn/
#   make fuzz-ci    the same for a short fixed time (20 s per target), for CI
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_BUILD   := build-fuzz
FUZZ_FLAGS   := -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
                -fno-sanitize-recover=undefined -fno-omit-frame-pointer -I. \
                -I$(LLHTTP_INC) -DLLHTTP_STRICT_MODE=1 $(PKG_CFLAGS)
# $(1): target, $(2): seconds, $(3): new-input dir, $(4): seed corpus
FUZZ_RUN     = $(FUZZ_BUILD)/$(1) -max_total_time=$(2) -max_len=16384 \
                -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
                $(FUZZ_BUILD)/$(3) $(4)

.PHONY: fuzz fuzz-ci
# the request path only: no sockets, so not the connection layer (common/net/) nor the
# process skeleton (common/app/process.c)
FUZZ_SRC     := $(filter-out common/net/% common/app/process.c,$(COMMON_SRC))
# the connection layer: everything but the process skeleton (common/app/process.c)
FUZZ_CONN_SRC := $(filter-out common/app/process.c,$(COMMON_SRC))
FUZZ_LLHTTP  := $(LLHTTP_SRC)/llhttp.c $(LLHTTP_SRC)/api.c $(LLHTTP_SRC)/http.c
$(FUZZ_BUILD)/fuzz_request: tests/fuzz/fuzz_request.c $(FUZZ_SRC) $(wildcard common/*/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) tests/fuzz/fuzz_request.c $(FUZZ_SRC) $(FUZZ_LLHTTP) \
	    $(PKG_LIBS) -lm -pthread -o $@

$(FUZZ_BUILD)/fuzz_conn: tests/fuzz/fuzz_conn.c $(FUZZ_CONN_SRC) $(wildcard common/*/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) tests/fuzz/fuzz_conn.c $(FUZZ_CONN_SRC) $(FUZZ_LLHTTP) \
	    $(PKG_LIBS) -lm -pthread -o $@

fuzz: $(FUZZ_BUILD)/fuzz_request $(FUZZ_BUILD)/fuzz_conn
	@mkdir -p $(FUZZ_BUILD)/corpus $(FUZZ_BUILD)/corpus_conn
	$(call FUZZ_RUN,fuzz_request,$(FUZZ_SECONDS),corpus,tests/fuzz/corpus)
	$(call FUZZ_RUN,fuzz_conn,$(FUZZ_SECONDS),corpus_conn,tests/fuzz/corpus_conn)

fuzz-ci: $(FUZZ_BUILD)/fuzz_request $(FUZZ_BUILD)/fuzz_conn
	@mkdir -p $(FUZZ_BUILD)/corpus $(FUZZ_BUILD)/corpus_conn
	$(call FUZZ_RUN,fuzz_request,20,corpus,tests/fuzz/corpus)
	$(call FUZZ_RUN,fuzz_conn,20,corpus_conn,tests/fuzz/corpus_conn)
# ---- end of fuzzing block -------------------------------------------------------------

# ---- bundle (docs/many-cores.md): the suite as one tarball that runs with no install ----
#   make bundle     dist/actor-vs-async-<commit>-linux-x86_64.tar.gz (scripts/bundle.py): the
#                   servers and load generator (build-bundle/, run path $ORIGIN/../lib), the
#                   tracked tree, jq/curl/ps/pkill/strace/valgrind and their libraries
.PHONY: bundle
BUNDLE_BUILD := build-bundle
bundle:
	@$(MAKE) --no-print-directory BUILD=$(BUNDLE_BUILD) 'LDFLAGS=-Wl,--disable-new-dtags,-rpath,\$$$$ORIGIN/../lib' \
	    $(BUNDLE_BUILD)/async-server $(BUNDLE_BUILD)/actor-server $(BUNDLE_BUILD)/loadgen
	@scripts/bundle.py --build=$(BUNDLE_BUILD)
# ---- end bundle ----
