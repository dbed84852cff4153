# mk/tests.mk: the tests and their orchestration, included by the top Makefile (which builds flinklet, fetches
# Flink's jars and the test jobs, and defines the variables used here): unit tests (plain and under ASan/UBSan),
# check-fast and check, the static tests of the tree's layout, the end-to-end suites (e2e, e2e-asan, e2e-rest,
# e2e-matrix, valgrind), fault injection, chaos, fuzzing, parity with the operator's autoscaler and with Quartz,
# Flink's REST routes, and the benchmarks.

unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

unit-asan: $(ASAN_BINS)
	@set -e; for t in $(ASAN_BINS); do echo "== $$t (asan+ubsan)"; \
	  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 $$t; done

# E2E_FILES narrows e2e, e2e-asan and e2e-rest to some files (scripts/lanes.py runs them a file at a time)
E2E_FILES ?= tests/e2e
e2e: $(BUILD)/flinklet flink-lib jobs kafka-lib kafka-sql-lib
	FLINKLET_BIN=$(CURDIR)/$(BUILD)/flinklet FLINK_HOME=$(CURDIR)/$(FLINK_HOME_DIR) \
	FLINKLET_JOBS_JAR=$(CURDIR)/$(JOBS_JAR) FLINKLET_KAFKA_LIBS=$(CURDIR)/$(KAFKA_LIB) \
	FLINKLET_KAFKA_SQL_DIR=$(CURDIR)/$(KAFKA_SQL_DIR) python3 -m pytest -v --durations=20 $(E2E_FILES) $(E2E_ARGS)

# check-fast: the two-minute loop: the build, the unit tests, lint, the fuzz harnesses and the C benchmarks compiled (not run), and the
# files of tests/e2e that start no JVM, and the static tests of tests/static (the tree's layout, from src/ and docs/)
# (no Flink jars needed); nothing is installed. `make check` runs all of them too.
NO_JVM_FILES = tests/static tests/e2e/test_manifests.py tests/e2e/test_plan_golden.py tests/e2e/test_plan_hook.py \
               tests/e2e/test_units.py tests/e2e/test_deployment_docs.py tests/e2e/test_image_build.py
.PHONY: check-fast
check-fast: all unit lint
	@for f in $(FUZZ_SRCS) $(wildcard bench/*.c); do $(CC) $(CFLAGS) -fsyntax-only -Itests/support $$f || exit 1; done
	FLINKLET_NO_JVM=1 FLINKLET_BIN=$(CURDIR)/$(BUILD)/flinklet python3 -m pytest -q -p no:cacheprovider $(NO_JVM_FILES)

e2e-rest: $(BUILD)/flinklet flink-lib jobs kafka-lib kafka-sql-lib
	FLINKLET_BIN=$(CURDIR)/$(BUILD)/flinklet FLINK_HOME=$(CURDIR)/$(FLINK_HOME_DIR) \
	FLINKLET_JOBS_JAR=$(CURDIR)/$(JOBS_JAR) FLINKLET_KAFKA_LIBS=$(CURDIR)/$(KAFKA_LIB) \
	FLINKLET_KAFKA_SQL_DIR=$(CURDIR)/$(KAFKA_SQL_DIR) \
	python3 -m pytest -v --durations=20 -m "heavy or asan_elsewhere" $(E2E_FILES) $(E2E_ARGS)

# e2e-matrix: the core e2e files (recovery, never-rewind, lifecycle, promotion) on each Flink version of
# MATRIX_VERSIONS, the jars of each fetched through Maven like FLINK_VERSION's; the heavy suites stay on FLINK_VERSION.
# test_rescale_history runs on the versions that have Flink's rescale history (2.3+) and skips on the others;
# test_flink_readonly holds the routes open under /flink/ without the token to each version's real REST API;
# test_flink_metrics holds flinklet's Prometheus reporter (java/reporter, built against each version's jars) to each;
# test_sql_script holds the SQL runner and the launcher (java/sqlrunner and java/launcher, built against each
# version's jars) to each: a script job whose main() returns after submitting, its savepoint restored into its
# compiled plan, and --preflight.
# test_finished_upgrade and test_last_state_no_checkpoints hold issue 38's cases 4 and 3 to each: what a bounded job
# leaves when it FINISHED, and which checkpoint intervals Flink takes, are each version's.
# A test marked single_version (a longer one whose ground a shorter test of its file covers) runs on FLINK_VERSION only.
MATRIX_VERSIONS ?= 1.20.5 2.3.0
MATRIX_MARK     ?= not heavy and not single_version
MATRIX_FILES    ?= tests/e2e/test_recovery.py tests/e2e/test_never_rewind.py tests/e2e/test_lifecycle.py \
                   tests/e2e/test_promotion.py tests/e2e/test_job_failure.py tests/e2e/test_rescale_history.py \
                   tests/e2e/test_flink_metrics.py tests/e2e/test_flink_readonly.py tests/e2e/test_sql_script.py \
                   tests/e2e/test_finished_upgrade.py tests/e2e/test_last_state_no_checkpoints.py
.PHONY: e2e-rest e2e-matrix
e2e-matrix: $(BUILD)/flinklet
	@set -e; for v in $(MATRIX_VERSIONS); do \
	  echo "== e2e-matrix: Flink $$v"; \
	  $(MAKE) --no-print-directory flink-lib jobs FLINK_VERSION=$$v; \
	  FLINKLET_BIN=$(CURDIR)/$(BUILD)/flinklet FLINK_HOME=$(CURDIR)/$(BUILD)/flink-$$v \
	  FLINKLET_JOBS_JAR=$(CURDIR)/$(BUILD)/jobs-$$v/flinklet-test-jobs.jar \
	  python3 -m pytest -v -p no:cacheprovider --durations=10 -m "$(MATRIX_MARK)" $(MATRIX_FILES) $(E2E_ARGS); \
	done

lint:
	scripts/lint.sh

# check runs each e2e file once: under ASan and UBSan (e2e-asan) unless it is heavy or its C paths run under
# them elsewhere (asan_elsewhere), those against the optimised build (e2e-rest); `make e2e` runs them all against
# the optimised build. e2e-matrix: the core files again on the other Flink versions. After the build, the unit
# tests and lint, everything that makes check's tests is built (so that no two makes build the same file), then
# scripts/lanes.py runs the suites on CHECK_LANES lanes as one item per test file and suite (and the static tests,
# the fault injection, valgrind, chaos, the fuzzers' smoke run and the parity harnesses as an item each), longest
# first by the seconds of tests/lanes.json, and says where the time went; its logs are in build/lanes/, and
# `make check-times` refreshes tests/lanes.json from the last run's build/lanes/times.json.
CHECK_LANES ?= 3
CHECK_WHOLE  = static faults valgrind chaos fuzz-smoke parity quartz-parity restroutes
# the random stops of test_never_rewind (20 moments when run alone): check takes 6 of them, nightly 40; chaos's
# random faults (20 rounds when run alone): check 14, nightly 100; the fuzzers' smoke run: 6 s a target
CHECK_NEVER_REWIND_MOMENTS ?= 6
CHECK_CHAOS_ROUNDS         ?= 14
CHECK_FUZZ_SMOKE_SECONDS   ?= 6
check: export FLINKLET_NEVER_REWIND_MOMENTS ?= $(CHECK_NEVER_REWIND_MOMENTS)
check: export CHAOS_ROUNDS = $(CHECK_CHAOS_ROUNDS)
check: export FUZZ_SMOKE_SECONDS = $(CHECK_FUZZ_SMOKE_SECONDS)
# the C builds that come first (flinklet, its ASan build, the unit tests' binaries, the volume shim) go
# CHECK_BUILD_JOBS at a time: the one stretch of check that is all CPU
CHECK_BUILD_JOBS ?= 2
check: deps
	$(MAKE) -j$(CHECK_BUILD_JOBS) $(BUILD)/flinklet $(BUILD)/asan/flinklet $(UNIT_BINS) $(ASAN_BINS) $(BUILD)/volshim.so
	$(MAKE) all unit unit-asan lint
	$(MAKE) $(BUILD)/asan/flinklet $(BUILD)/volshim.so flink-lib jobs kafka-lib kafka-sql-lib fuzz-build $(PARITY_JAR) \
	  $(BUILD)/bench-bin/as_cycle $(BUILD)/bench-bin/promtext_parse \
	  parity-116-harness $(QUARTZ_JAR) $(QUARTZ_DIR)/period_answers \
	  $(RESTROUTES_DIR)/RestRoutes.class $(RESTROUTES_DIR)/route_table
	@set -e; for v in $(MATRIX_VERSIONS); do $(MAKE) --no-print-directory flink-lib jobs FLINK_VERSION=$$v; done
	python3 scripts/lanes.py --lanes $(CHECK_LANES) --make "$(MAKE)" --out $(BUILD)/lanes \
	  --estimates tests/lanes.json --record $(BUILD)/lanes/times.json --whole "$(CHECK_WHOLE)" \
	  --matrix-versions "$(MATRIX_VERSIONS)" --matrix-files "$(MATRIX_FILES)" $(if $(CHECK_ONLY),--only "$(CHECK_ONLY)")

# nightly: what check leaves out to stay under 45 minutes on 2 cores, for a machine with time (about an hour more):
# the matrix files whole (their single_version tests too) on every other Flink version, test_never_rewind's random
# stops at 40 moments, and chaos at 100 rounds. Run it after `make check` (which builds and fetches everything).
NIGHTLY_NEVER_REWIND_MOMENTS ?= 40
NIGHTLY_CHAOS_ROUNDS         ?= 100
.PHONY: nightly
nightly: $(BUILD)/flinklet flink-lib jobs
	$(MAKE) e2e-matrix MATRIX_MARK="not heavy"
	$(MAKE) e2e-rest E2E_FILES=tests/e2e/test_never_rewind.py \
	  E2E_ARGS="-k sigterm_at_random_moments" FLINKLET_NEVER_REWIND_MOMENTS=$(NIGHTLY_NEVER_REWIND_MOMENTS)
	$(MAKE) chaos CHAOS_ROUNDS=$(NIGHTLY_CHAOS_ROUNDS)

.PHONY: check-times
check-times:
	cp $(BUILD)/lanes/times.json tests/lanes.json

# ---- the static tests (tests/static/): what the tree's files must be to each other (test_layout.py: src/ against
# docs/architecture.md and docs/CODE_STYLE.md); they run nothing, read the tree only, and need no build
.PHONY: static
static:
	python3 -m pytest -v -p no:cacheprovider tests/static

# ---- fuzzing (issue 8, item 5; tests/fuzz/README.md) -----------------------------------------------------
# libFuzzer targets built by clang with ASan and UBSan: every src/*/*.c but main.c compiled with the fuzz
# flags into build/fuzz/obj/, one binary per tests/fuzz/fuzz_*.c. `fuzz` runs each target FUZZ_SECONDS,
# `fuzz-smoke` FUZZ_SMOKE_SECONDS (make check); both start from tests/fuzz/corpus/<target>/ and save any
# crash under tests/fuzz/crashes/<target>/. FUZZ_TARGETS picks some (e.g. FUZZ_TARGETS="fuzz_config").
FUZZ_CC            ?= clang
FUZZ_SECONDS       ?= 60
FUZZ_SMOKE_SECONDS ?= 10
FUZZ_SANITIZE       = -fsanitize=address,undefined -fno-omit-frame-pointer
FUZZ_CFLAGS         = -O1 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter $(INCLUDES) \
                      -DFLINKLET_VERSION=\"$(VERSION)\" $(CURL_CFLAGS) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
FUZZ_SRCS           = $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_ALL            = $(FUZZ_SRCS:tests/fuzz/%.c=%)
FUZZ_TARGETS       ?= $(FUZZ_ALL)
FUZZ_BINS           = $(FUZZ_SRCS:tests/fuzz/%.c=$(BUILD)/fuzz/%)
FUZZ_OBJS           = $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(notdir $(LIB_SRCS))) $(BUILD)/fuzz/obj/web_assets.o

.PHONY: fuzz fuzz-smoke fuzz-build bench
.SECONDARY: $(FUZZ_OBJS)

$(eval $(call objects,$(BUILD)/fuzz/obj,$$(FUZZ_CC) $$(FUZZ_CFLAGS) $$(FUZZ_SANITIZE) -fsanitize=fuzzer-no-link))

$(BUILD)/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz.h $(SUPPORT_DEPS) $(FUZZ_OBJS) $(CURL_A) | $(BUILD)/fuzz/obj
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Werror $(FUZZ_SANITIZE) -fsanitize=fuzzer -Itests/support -o $@ $< $(SUPPORT_SRCS) \
	  $(FUZZ_OBJS) $(LDLIBS)

$(BUILD)/fuzz/obj:
	mkdir -p $@

fuzz-build: $(FUZZ_BINS)

fuzz:
	@tests/fuzz/run.sh "$(MAKE)" "$(BUILD)" "$(FUZZ_CC)" $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke:
	@tests/fuzz/run.sh "$(MAKE)" "$(BUILD)" "$(FUZZ_CC)" $(FUZZ_SMOKE_SECONDS) $(FUZZ_TARGETS)

# ---- parity with the operator's own autoscaler (issue 19; tests/parity/, docs/autoscaler.md) -----------------
# A Java harness (tests/parity/pom.xml: the operator's flink-autoscaler release from Maven Central, test-only, built
# into build/parity/ like the test jobs: fetched once, then from the Maven cache) runs the operator's classes on
# PARITY_CASES plan documents that tests/parity/parity.py generates from PARITY_SEED; every difference from
# `flinklet autoscaler plan` must be one of the listed changes made upstream after that release.
# The second oracle (issue 27; tests/parity/oracle-1.16/pom.xml, into build/parity-1.16/) runs the operator 1.16
# autoscaler on the same cases; it is built when flink-autoscaler $(PARITY_116_VERSION) resolves (the local Maven
# repository or Maven Central), and its tests say why they are skipped when it does not. What the two harnesses
# share is tests/parity/common/ (ParityCommon.java), which both builds compile (their compileSourceRoots).
PARITY_CASES ?= 4000
PARITY_SEED  ?= 19
# the memory-tuning cases against the operator's MemoryTuning (tests/parity/memparity.py, issue 28)
PARITY_MEM_CASES ?= 400
PARITY_DIR    = $(BUILD)/parity
PARITY_JAR    = $(PARITY_DIR)/flinklet-parity-harness.jar
PARITY_116_DIR     = $(BUILD)/parity-1.16
PARITY_116_JAR     = $(PARITY_116_DIR)/flinklet-parity-harness-116.jar
PARITY_116_VERSION ?= 1.16-SNAPSHOT
.PHONY: parity parity-116-harness
PARITY_COMMON = $(shell find tests/parity/common -name '*.java' 2>/dev/null)
$(PARITY_JAR): $(shell find tests/parity/src -name '*.java' 2>/dev/null) $(PARITY_COMMON) tests/parity/pom.xml
	cd tests/parity && mvn -B -q package -Dparity.build.dir=$(CURDIR)/$(PARITY_DIR)
$(PARITY_116_JAR): $(shell find tests/parity/oracle-1.16/src -name '*.java' 2>/dev/null) $(PARITY_COMMON) \
  tests/parity/oracle-1.16/pom.xml
	cd tests/parity/oracle-1.16 && mvn -B -q package -Dparity.build.dir=$(CURDIR)/$(PARITY_116_DIR) \
	  -Dautoscaler.version=$(PARITY_116_VERSION)
parity-116-harness:
	@mkdir -p $(BUILD)
	@$(MAKE) --no-print-directory $(PARITY_116_JAR) > $(BUILD)/parity-1.16.log 2>&1 || \
	  { mkdir -p $(PARITY_116_DIR); echo "org.apache.flink:flink-autoscaler:$(PARITY_116_VERSION) did not resolve \
	(see $(BUILD)/parity-1.16.log)" > $(PARITY_116_DIR)/UNAVAILABLE; rm -f $(PARITY_116_JAR); }
	@if [ -f $(PARITY_116_JAR) ]; then rm -f $(PARITY_116_DIR)/UNAVAILABLE; fi
parity: $(BUILD)/flinklet $(PARITY_JAR) parity-116-harness
	FLINKLET_BIN=$(CURDIR)/$(BUILD)/flinklet PARITY_HARNESS=$(CURDIR)/$(PARITY_DIR) \
	PARITY_HARNESS_116=$(CURDIR)/$(PARITY_116_DIR) PARITY_CASES=$(PARITY_CASES) \
	PARITY_SEED=$(PARITY_SEED) PARITY_MEM_CASES=$(PARITY_MEM_CASES) python3 -m pytest -v -p no:cacheprovider tests/parity

# ---- Flink's REST routes (issue 36; tests/restroutes/) -------------------------------------------------------------
# flinklet's table of the GET routes open without the token (src/flink/restroutes.c) against every route the real
# jars of each of RESTROUTES_VERSIONS declare (RestRoutes.java, compiled with javac into build/restroutes/, reads
# them by reflection; route_table prints the table and flinklet's answers): a route not classified or an entry a
# version lacks fails.
RESTROUTES_VERSIONS ?= $(sort 1.20.5 2.3.0 $(FLINK_VERSION))
RESTROUTES_DIR       = $(BUILD)/restroutes
.PHONY: restroutes
$(RESTROUTES_DIR)/RestRoutes.class: tests/restroutes/RestRoutes.java
	@mkdir -p $(RESTROUTES_DIR)
	javac --release 11 -d $(RESTROUTES_DIR) $<

$(RESTROUTES_DIR)/route_table: tests/restroutes/route_table.c $(LIB_OBJS)
	@mkdir -p $(RESTROUTES_DIR)
	$(CC) $(CFLAGS) -o $@ $< $(LIB_OBJS) $(LDLIBS)

restroutes: $(RESTROUTES_DIR)/RestRoutes.class $(RESTROUTES_DIR)/route_table
	@set -e; for v in $(RESTROUTES_VERSIONS); do $(MAKE) --no-print-directory flink-lib FLINK_VERSION=$$v; done
	RESTROUTES_DIR=$(CURDIR)/$(RESTROUTES_DIR) \
	RESTROUTES_FLINK="$(foreach v,$(RESTROUTES_VERSIONS),$(CURDIR)/$(BUILD)/flink-$(v))" \
	python3 -m pytest -v -p no:cacheprovider tests/restroutes

# ---- benchmarks (issue 9, docs/performance.md) ---------------------------------------------------------------
# BENCH: which ones (footprint recovery shutdown autoscaler http startup memory page image state promtext runtime upgrade,
# or all); each prints its figures and one table at the end. They measure side by side in one run and assert no
# timing. runtime compares the distribution's runtime with the module jars' (FLINK_RUNTIME=modules, built here for it).
BENCH ?= all
bench: all flink-lib jobs $(BUILD)/bench-bin/as_cycle $(BUILD)/bench-bin/promtext_parse
	$(if $(filter all runtime image,$(BENCH)),$(MAKE) --no-print-directory flink-lib FLINK_RUNTIME=modules)
	FLINKLET_BIN=$(CURDIR)/$(BUILD)/flinklet FLINK_HOME=$(CURDIR)/$(FLINK_HOME_DIR) \
	FLINKLET_JOBS_JAR=$(CURDIR)/$(JOBS_JAR) python3 bench/run.py $(BENCH)

# ---- sanitizers and valgrind end to end (issue 8, item 6) ----------------------------------------------------
# e2e-asan: the e2e suite against build/asan/flinklet (every src/*/*.c with ASan and UBSan, no recovery); each
# sanitizer writes its report under E2E_SANITIZER_LOGS and tests/e2e/conftest.py fails the test during which one
# appeared. The container test is skipped there (the image's base has no sanitizer runtimes). valgrind: one e2e
# test (tests/e2e/test_valgrind.py: checkpoints, stop with a savepoint, restore from it) with flinklet under
# memcheck; any error or definite/indirect leak in a flinklet process fails it (not in the children it forks and that
# never exec: their copy of the heap is not theirs; tests/e2e/test_valgrind.py says why). VALGRIND_TESTS picks other
# e2e tests to run under it.
E2E_SANITIZER_LOGS ?= $(CURDIR)/$(BUILD)/e2e-asan-logs
VALGRIND_LOGS      ?= $(CURDIR)/$(BUILD)/valgrind-logs
VALGRIND_TESTS     ?= tests/e2e/test_valgrind.py
VALGRIND_CMD        = valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect \
                      --errors-for-leak-kinds=definite,indirect --child-silent-after-fork=yes --track-fds=no \
                      --trace-children=no --num-callers=30 --log-file=$(VALGRIND_LOGS)/valgrind.%p.log
E2E_ENV             = FLINK_HOME=$(CURDIR)/$(FLINK_HOME_DIR) FLINKLET_JOBS_JAR=$(CURDIR)/$(JOBS_JAR)
.PHONY: asan e2e-asan valgrind

asan: $(BUILD)/asan/flinklet
$(BUILD)/asan/flinklet: $(ASAN_OBJS) $(BUILD)/asan/main.o $(CURL_A)
	$(CC) $(CFLAGS) $(ASAN_LINK) -o $@ $(ASAN_OBJS) $(BUILD)/asan/main.o $(LDLIBS)

e2e-asan: $(BUILD)/asan/flinklet flink-lib jobs
	rm -rf $(E2E_SANITIZER_LOGS) && mkdir -p $(E2E_SANITIZER_LOGS)
	$(E2E_ENV) FLINKLET_BIN=$(CURDIR)/$(BUILD)/asan/flinklet FLINKLET_SANITIZER_LOGS=$(E2E_SANITIZER_LOGS) \
	FLINKLET_ASAN_CC="$(CC) $(CFLAGS) $(ASAN_LINK)" \
	ASAN_OPTIONS=detect_leaks=1:log_path=$(E2E_SANITIZER_LOGS)/asan \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(E2E_SANITIZER_LOGS)/ubsan \
	python3 -m pytest -v -p no:cacheprovider --durations=20 -m "not heavy and not asan_elsewhere" $(E2E_FILES) $(E2E_ARGS)

valgrind: $(BUILD)/flinklet flink-lib jobs
	rm -rf $(VALGRIND_LOGS) && mkdir -p $(VALGRIND_LOGS)
	$(E2E_ENV) FLINKLET_BIN=$(CURDIR)/$(BUILD)/flinklet FLINKLET_VALGRIND_LOGS=$(VALGRIND_LOGS) \
	FLINKLET_WRAPPER="$(VALGRIND_CMD)" python3 -m pytest -v -rP -p no:cacheprovider $(VALGRIND_TESTS) $(E2E_ARGS)

# ---- fault injection on Flink's side (issue 8, item 3; tests/faults/) ------------------------------------
# The real build/flinklet against a misbehaving stand-in for Flink's REST API, with a fake "java" that only
# stays up. FAULTS_BIN picks another build of flinklet (for example one with sanitizers). The tests mostly wait on
# flinklet's timers, so FAULTS_JOBS of them run at once (pytest-xdist; each has its own ports and folders).
FAULTS_BIN  ?= $(CURDIR)/$(BUILD)/flinklet
FAULTS_JOBS ?= 4
.PHONY: faults
# volshim: the LD_PRELOAD library of the volume fault tests (test_volume_faults.py); never installed
$(BUILD)/volshim.so: tests/faults/volshim.c
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -O1 -g -Wall -Wextra -Werror -shared -fPIC -o $@ $< -ldl
faults: $(BUILD)/flinklet $(BUILD)/volshim.so
	FLINKLET_BIN=$(FAULTS_BIN) FLINKLET_VOLSHIM=$(CURDIR)/$(BUILD)/volshim.so python3 -m pytest -v -p no:cacheprovider \
	  -n $(FAULTS_JOBS) tests/faults $(FAULTS_ARGS)

# ---- chaos (issue 8, item 1; tests/chaos/chaos.py) -------------------------------------------------------
# The exactly-once job under flinklet, faulted CHAOS_ROUNDS times at random (kill -9 of the JVM, flinklet or both,
# SIGTERM, a port clash or a missing jar at a restart, a stop during startup, a volume copied with cp -r;
# while steady, during a savepoint, a restore, a rescale). CHAOS_SEED repeats a run. `check` runs `chaos`
# (20 kills, a few minutes); `soak` is the long version (200).
CHAOS_ROUNDS ?= 20
SOAK_ROUNDS  ?= 200
CHAOS_ENV     = FLINKLET_BIN=$(CURDIR)/$(BUILD)/flinklet FLINK_HOME=$(CURDIR)/$(FLINK_HOME_DIR) \
                FLINKLET_JOBS_JAR=$(CURDIR)/$(JOBS_JAR)
.PHONY: chaos soak
chaos: $(BUILD)/flinklet flink-lib jobs
	$(CHAOS_ENV) python3 tests/chaos/chaos.py --rounds $(CHAOS_ROUNDS) $(if $(CHAOS_SEED),--seed $(CHAOS_SEED))

soak: $(BUILD)/flinklet flink-lib jobs
	$(CHAOS_ENV) python3 tests/chaos/chaos.py --rounds $(SOAK_ROUNDS) $(if $(CHAOS_SEED),--seed $(CHAOS_SEED))

# ---- Quartz parity (issue 17, item 5; tests/quartz/README.md) ----------------------------------------------
# The excluded periods of the autoscaler (src/autoscaler/as_periods.c) against the real Quartz library: a seeded generator's
# QUARTZ_COUNT expressions (valid and invalid) and their instants, answered by Quartz (tests/quartz, a Maven
# project built from the local cache into build/quartz) and by build/quartz/period_answers; any difference fails.
QUARTZ_DIR   = $(BUILD)/quartz
QUARTZ_JAR   = $(QUARTZ_DIR)/flinklet-quartz-parity.jar
QUARTZ_SEED  ?= 17
QUARTZ_COUNT ?= 20000
.PHONY: quartz-parity
$(QUARTZ_JAR): $(shell find tests/quartz/src -name '*.java' 2>/dev/null) tests/quartz/pom.xml
	cd tests/quartz && mvn -B -q package -Dquartz.build.dir=$(CURDIR)/$(QUARTZ_DIR)

$(QUARTZ_DIR)/period_answers: tests/quartz/period_answers.c $(LIB_OBJS)
	@mkdir -p $(QUARTZ_DIR)
	$(CC) $(CFLAGS) -o $@ $< $(LIB_OBJS) $(LDLIBS)

quartz-parity: $(QUARTZ_JAR) $(QUARTZ_DIR)/period_answers
	python3 tests/quartz/parity.py --java-cp "$(QUARTZ_JAR):$(QUARTZ_DIR)/lib/*" \
	  --answers $(QUARTZ_DIR)/period_answers --seed $(QUARTZ_SEED) --count $(QUARTZ_COUNT)

# bench/as_cycle.c: one control-loop cycle of the autoscaler as the supervisor runs it, for bench/autoscaler.py
$(BUILD)/bench-bin/as_cycle: bench/as_cycle.c $(LIB_OBJS) $(CURL_A) | $(BUILD)/bench-bin
	$(CC) $(CFLAGS) -o $@ $< $(LIB_OBJS) $(LDLIBS)

# bench/promtext_parse.c: promtext_parse on a 10,000-family scrape at the 4 MiB cap, for bench/promtext.py
$(BUILD)/bench-bin/promtext_parse: bench/promtext_parse.c $(LIB_OBJS) $(CURL_A) | $(BUILD)/bench-bin
	$(CC) $(CFLAGS) -o $@ $< $(LIB_OBJS) $(LDLIBS)

$(BUILD)/bench-bin:
	mkdir -p $@
