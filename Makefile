# flinklet: build, test and demo targets. `make check` and `make demo` work on a fresh machine:
# both start with `deps`, which installs what is missing and fetches the Flink jars through Maven.

FLINK_VERSION ?= 2.2.1
# flink-statebackend-forst in lib/ (state.backend.type: forst): Flink 2.x only, none for 1.20.x. Maven Central has
# no 2.2.1 of it (nor any 2.1.x): 2.2.1 takes 2.2.0's, checked by tests/e2e/test_native_savepoints.py. Empty: none.
FORST_VERSION ?= $(if $(filter 2.2.1,$(FLINK_VERSION)),2.2.0,$(if $(filter 2.%,$(FLINK_VERSION)),$(FLINK_VERSION)))
PREFIX        ?= /usr/local
BUILD         ?= build
FLINK_HOME_DIR = $(BUILD)/flink-$(FLINK_VERSION)
FLINK_LIB      = $(FLINK_HOME_DIR)/lib
JOBS_DIR       = $(BUILD)/jobs-$(FLINK_VERSION)
JOBS_JAR       = $(JOBS_DIR)/flinklet-test-jobs.jar
# the same jobs with the Kafka connector inside (tests/jobs/pom.xml), for tests/e2e/test_kafka.py; the connector
# release is the one built for FLINK_VERSION's minor (newer 2.x: the 2.2 one)
KAFKA_JOBS_JAR = $(JOBS_DIR)/flinklet-test-jobs-kafka.jar
KAFKA_CONNECTOR_VERSION ?= $(strip $(if $(filter 1.19.%,$(FLINK_VERSION)),3.3.0-1.19,\
                             $(if $(filter 1.20.%,$(FLINK_VERSION)),3.4.0-1.20,\
                             $(if $(filter 2.0.%,$(FLINK_VERSION)),4.0.1-2.0,\
                             $(if $(filter 2.1.%,$(FLINK_VERSION)),5.0.0-2.1,5.0.0-2.2)))))
# a single-node KRaft Kafka broker and Kafka's console tools from Maven Central (deps/kafka/pom.xml), which
# tests/e2e/test_kafka.py starts on loopback; not part of flinklet
KAFKA_VERSION ?= 4.1.1
KAFKA_LIB      = $(BUILD)/kafka-$(KAFKA_VERSION)/libs
VERSION       := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

CC      ?= cc
PKGS     = libcjson yaml-0.1 libsystemd libmicrohttpd nettle zlib
# libcurl: CURL=bundled (the default) links a static libcurl built from Debian's own curl source package with only
# what flinklet uses (scripts/curl.sh: HTTP/1.1, http and https, GnuTLS, proxies, AWS SigV4), cached under
# $(BUILD)/curl/<Debian version>/ and built once (`make curl-refresh` looks for a newer Debian source). None of the
# libraries Debian's libcurl needs at load (libssh2 and its libcrypto, Kerberos, LDAP, SASL, rtmp, psl, nghttp2,
# brotli) is mapped then (docs/performance.md, "The supervisor's footprint"). CURL=system links Debian's libcurl in
# its GnuTLS flavour (libcurl3-gnutls: TLS is libmicrohttpd's GnuTLS), with the headers of whichever libcurl -dev
# package is installed (the same for every flavour); rest.c then initialises libssh2 without crypto before
# curl_global_init. CURL_SYSTEM_LIBS=-lcurl builds against the -dev package's own flavour instead.
# A source tree without scripts/curl.sh builds with CURL=system. container/Containerfile's build stage has it and
# asks for CURL=bundled (the image has no libcurl of Debian's: docs/deployment.md, "The image").
CURL     ?= $(if $(wildcard scripts/curl.sh),bundled,system)
CURL_DIR  = $(BUILD)/curl/current
ifeq ($(CURL),bundled)
CURL_A      = $(CURL_DIR)/lib/libcurl.a
CURL_CFLAGS = -I$(CURL_DIR)/include -DCURL_STATICLIB
CURL_LIBS   = $(CURL_A)
PKGS       += gnutls
else ifeq ($(CURL),system)
CURL_A           =
CURL_SYSTEM_LIBS ?= -l:libcurl-gnutls.so.4
CURL_CFLAGS      = $(shell pkg-config --cflags libcurl 2>/dev/null) -DFLINKLET_SYSTEM_CURL
CURL_LIBS        = $(CURL_SYSTEM_LIBS)
PKGS            += libssh2
else
$(error CURL must be bundled or system (got "$(CURL)"))
endif
# the objects are rebuilt when CURL changes (rest.c differs): $(CURL_MODE) holds the mode of the last build
CURL_MODE = $(BUILD)/gen/curl-mode
$(shell mkdir -p $(BUILD)/gen && { [ "$$(cat $(CURL_MODE) 2>/dev/null)" = "$(CURL)" ] || echo $(CURL) >$(CURL_MODE); })
# src/<module>/: one folder per module (docs/architecture.md), each .c beside its .h; every folder is on the include
# path, so a file includes a header by its name. Object files are named after their source (the names are unique).
MODULES  = $(sort $(dir $(wildcard src/*/*.c)))
INCLUDES = $(patsubst %/,-I%,$(MODULES))
vpath %.c $(MODULES)
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-unused-parameter \
           $(INCLUDES) -DFLINKLET_VERSION=\"$(VERSION)\" $(CURL_CFLAGS) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS  += $(CURL_LIBS) $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm

SRCS     = $(filter-out $(EXCLUDE),$(wildcard src/*/*.c))
LIB_SRCS = $(filter-out src/cli/main.c,$(SRCS))
# the files of web/ (the status page), built into the binary as one generated C file (scripts/embed.sh)
WEB_FILES = $(sort $(wildcard web/*))
WEB_C     = $(BUILD)/gen/web_assets.c
OBJS     = $(patsubst %.c,$(BUILD)/obj/%.o,$(notdir $(SRCS))) $(BUILD)/obj/web_assets.o
LIB_OBJS = $(patsubst %.c,$(BUILD)/obj/%.o,$(notdir $(LIB_SRCS))) $(BUILD)/obj/web_assets.o
# tests/support/: helpers the unit tests and the fuzz targets share (compiled into each of their binaries)
SUPPORT_SRCS = $(wildcard tests/support/*.c)
SUPPORT_DEPS = $(SUPPORT_SRCS) $(wildcard tests/support/*.h)
UNIT_SRCS  = $(wildcard tests/unit/test_*.c)
UNIT_BINS  = $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/unit/%)
ASAN_OBJS  = $(patsubst %.c,$(BUILD)/asan/%.o,$(notdir $(LIB_SRCS))) $(BUILD)/asan/web_assets.o
ASAN_BINS  = $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/asan-unit/%)
ASAN_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
# linked with the runtimes inside: with gcc's shared libasan and libubsan, each has its own copy of the report
# file, and UBSan's reports ignore log_path and go to stderr, where make e2e-asan does not look (its harness check,
# tests/e2e/test_sanitizer_harness.py, found that)
ASAN_LINK  = $(ASAN_FLAGS) -static-libasan -static-libubsan

.PHONY: all curl-refresh deps deps-run flink-lib kafka-lib jobs quartz-parity unit unit-asan e2e lint check demo demo-run install clean format container-base container-image container-test bench

all: $(BUILD)/flinklet

$(BUILD)/flinklet: $(OBJS) $(CURL_A)
	$(CC) $(CFLAGS) -o $@ $(OBJS) $(LDLIBS)

# the bundled libcurl (CURL=bundled): built once per Debian source version and set of options, then kept
# (`make clean` leaves it); the objects need its headers, the binaries its archive
ifneq ($(CURL_A),)
$(CURL_A): scripts/curl.sh
	scripts/curl.sh $(BUILD)/curl
endif
curl-refresh:
	scripts/curl.sh $(BUILD)/curl

# each object's headers are what the compiler says it read (-MMD: build/<variant>/<file>.d, included below; -MP:
# a header removed since is no error)
DEPFLAGS = -MMD -MP

$(BUILD)/obj/%.o: %.c $(CURL_MODE) | $(BUILD)/obj $(CURL_A)
	$(CC) $(CFLAGS) $(DEPFLAGS) -c -o $@ $<

$(BUILD)/asan/%.o: %.c $(CURL_MODE) | $(BUILD)/asan $(CURL_A)
	$(CC) $(CFLAGS) $(ASAN_FLAGS) $(DEPFLAGS) -c -o $@ $<

$(WEB_C): $(WEB_FILES) scripts/embed.sh | $(BUILD)/gen
	scripts/embed.sh $(WEB_FILES) > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/web_assets.o: $(WEB_C) src/http/webpage.h | $(BUILD)/obj
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/asan/web_assets.o: $(WEB_C) src/http/webpage.h | $(BUILD)/asan
	$(CC) $(CFLAGS) $(ASAN_FLAGS) -c -o $@ $<

$(BUILD)/unit/%: tests/unit/%.c $(LIB_OBJS) tests/unit/unit.h $(SUPPORT_DEPS) $(CURL_A) | $(BUILD)/unit
	$(CC) $(CFLAGS) -Itests/support -o $@ $< $(SUPPORT_SRCS) $(LIB_OBJS) $(LDLIBS) -lcmocka

$(BUILD)/asan-unit/%: tests/unit/%.c $(ASAN_OBJS) tests/unit/unit.h $(SUPPORT_DEPS) $(CURL_A) | $(BUILD)/asan-unit
	$(CC) $(CFLAGS) $(ASAN_LINK) -Itests/support -o $@ $< $(SUPPORT_SRCS) $(ASAN_OBJS) $(LDLIBS) -lcmocka

$(BUILD)/obj $(BUILD)/asan $(BUILD)/unit $(BUILD)/asan-unit $(BUILD)/gen:
	mkdir -p $@

deps:
	CURL=$(CURL) scripts/deps.sh test

# what building and running flinklet takes, without the test toolchain (make demo)
deps-run:
	CURL=$(CURL) scripts/deps.sh run

flink-lib: $(FLINK_LIB)/.complete
$(FLINK_LIB)/.complete: deps/flink/pom.xml
	cd deps/flink && mvn -B -q package -Dflink.version=$(FLINK_VERSION) -Dlib.dir=$(CURDIR)/$(FLINK_LIB) \
		$(if $(FORST_VERSION),-Dforst.version=$(FORST_VERSION))
	touch $@

kafka-lib: $(KAFKA_LIB)/.complete
$(KAFKA_LIB)/.complete: deps/kafka/pom.xml
	cd deps/kafka && mvn -B -q package -Dkafka.version=$(KAFKA_VERSION) -Dlib.dir=$(CURDIR)/$(KAFKA_LIB)
	touch $@

# one Maven build makes both jars
jobs: $(JOBS_JAR) $(KAFKA_JOBS_JAR)
$(JOBS_JAR) $(KAFKA_JOBS_JAR) &: $(shell find tests/jobs/src -name '*.java' 2>/dev/null) tests/jobs/pom.xml
	cd tests/jobs && mvn -B -q package -Dflink.version=$(FLINK_VERSION) -Dkafka.connector.version=$(KAFKA_CONNECTOR_VERSION) \
	  -Djobs.build.dir=$(CURDIR)/$(JOBS_DIR)

unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

unit-asan: $(ASAN_BINS)
	@set -e; for t in $(ASAN_BINS); do echo "== $$t (asan+ubsan)"; \
	  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 $$t; done

e2e: $(BUILD)/flinklet flink-lib jobs kafka-lib
	FLINKLET_BIN=$(CURDIR)/$(BUILD)/flinklet FLINK_HOME=$(CURDIR)/$(FLINK_HOME_DIR) \
	FLINKLET_JOBS_JAR=$(CURDIR)/$(JOBS_JAR) FLINKLET_KAFKA_LIBS=$(CURDIR)/$(KAFKA_LIB) python3 -m pytest -v --durations=20 tests/e2e $(E2E_ARGS)

# check-fast: the two-minute loop: the build, the unit tests, lint, the fuzz harnesses compiled (not run), and the
# files of tests/e2e that start no JVM
# (no Flink jars needed); nothing is installed. `make check` runs all of them too.
NO_JVM_FILES = tests/e2e/test_layout.py tests/e2e/test_manifests.py tests/e2e/test_plan_golden.py tests/e2e/test_plan_hook.py \
               tests/e2e/test_units.py
.PHONY: check-fast
check-fast: all unit lint
	@for f in $(FUZZ_SRCS); do $(CC) $(CFLAGS) -fsyntax-only -Itests/support $$f || exit 1; done
	FLINKLET_NO_JVM=1 FLINKLET_BIN=$(CURDIR)/$(BUILD)/flinklet python3 -m pytest -q -p no:cacheprovider $(NO_JVM_FILES)

e2e-rest: $(BUILD)/flinklet flink-lib jobs kafka-lib
	FLINKLET_BIN=$(CURDIR)/$(BUILD)/flinklet FLINK_HOME=$(CURDIR)/$(FLINK_HOME_DIR) \
	FLINKLET_JOBS_JAR=$(CURDIR)/$(JOBS_JAR) FLINKLET_KAFKA_LIBS=$(CURDIR)/$(KAFKA_LIB) \
	python3 -m pytest -v --durations=20 -m "heavy or asan_elsewhere" tests/e2e $(E2E_ARGS)

# e2e-matrix: the core e2e files (recovery, never-rewind, lifecycle, promotion) on each Flink version of
# MATRIX_VERSIONS, the jars of each fetched through Maven like FLINK_VERSION's; the heavy suites stay on FLINK_VERSION.
# test_rescale_history runs on the versions that have Flink's rescale history (2.3+) and skips on the others
MATRIX_VERSIONS ?= 1.20.5 2.3.0
MATRIX_FILES    ?= tests/e2e/test_recovery.py tests/e2e/test_never_rewind.py tests/e2e/test_lifecycle.py \
                   tests/e2e/test_promotion.py tests/e2e/test_job_failure.py tests/e2e/test_rescale_history.py
.PHONY: e2e-rest e2e-matrix
e2e-matrix: $(BUILD)/flinklet
	@set -e; for v in $(MATRIX_VERSIONS); do \
	  echo "== e2e-matrix: Flink $$v"; \
	  $(MAKE) --no-print-directory flink-lib jobs FLINK_VERSION=$$v; \
	  FLINKLET_BIN=$(CURDIR)/$(BUILD)/flinklet FLINK_HOME=$(CURDIR)/$(BUILD)/flink-$$v \
	  FLINKLET_JOBS_JAR=$(CURDIR)/$(BUILD)/jobs-$$v/flinklet-test-jobs.jar \
	  python3 -m pytest -v -p no:cacheprovider --durations=10 -m "not heavy" $(MATRIX_FILES) $(E2E_ARGS); \
	done

lint:
	scripts/lint.sh

# check runs each e2e file once: under ASan and UBSan (e2e-asan) unless it is heavy or its C paths run under
# them elsewhere (asan_elsewhere), those against the optimised build (e2e-rest); `make e2e` runs them all against
# the optimised build. e2e-matrix: the core files again on the other Flink versions, beside the fault injection
# (its fake JVM and fake REST server use little CPU: the two take about as long as the longer of them).
check: deps
	$(MAKE) all unit unit-asan lint
	$(MAKE) quartz-parity
	$(MAKE) fuzz-smoke
	$(MAKE) parity
	$(MAKE) e2e-asan
	$(MAKE) e2e-rest
	$(MAKE) valgrind
	$(MAKE) --output-sync=target -j2 e2e-matrix faults
	$(MAKE) chaos

# demo: builds what it needs, then runs scripts/demo.sh; demo-run: the script alone, on what is built already
# (DEMO_BIN, DEMO_FLINK_HOME, DEMO_JAR say which; tests/e2e/test_demo.py runs it under a pseudo-terminal).
# `exec`: no shell stands between make and the script. Ctrl-C sends SIGINT to make and to the script; make
# waits for its recipe on SIGINT, and the script stops flinklet (its own session) with one SIGTERM, waits for
# the savepoint and says where it is.
DEMO_BIN        = $(CURDIR)/$(BUILD)/flinklet
DEMO_FLINK_HOME = $(CURDIR)/$(FLINK_HOME_DIR)
DEMO_JAR        = $(CURDIR)/$(JOBS_JAR)
DEMO_RUN        = exec scripts/demo.sh $(DEMO_BIN) $(DEMO_FLINK_HOME) $(DEMO_JAR)

demo: deps-run
	$(MAKE) all flink-lib jobs
	$(DEMO_RUN)

demo-run:
	$(DEMO_RUN)

install: $(BUILD)/flinklet
	install -D -m 0755 $(BUILD)/flinklet $(DESTDIR)$(PREFIX)/bin/flinklet

format:
	clang-format -i src/*/*.c src/*/*.h tests/unit/*.c tests/unit/*.h tests/support/*.c tests/support/*.h

clean:
	rm -rf $(BUILD)/obj $(BUILD)/asan $(BUILD)/unit $(BUILD)/asan-unit $(BUILD)/gen $(BUILD)/flinklet

# ---- containers (container/README.md, docs/deployment.md) ------------------------------------------------
# PODMAN: the podman command with its global options (runc and cgroupfs where runc is installed, as on machines
# without systemd). IMAGE: the tag container-image builds. The base is the local stand-in for the official
# Flink image (scripts/container-base.sh, cached by the hash of its inputs); the image is the Containerfile's
# runtime-prebuilt target with build/flinklet.
PODMAN   ?= $(shell command -v runc >/dev/null 2>&1 && echo 'podman --runtime runc --cgroup-manager cgroupfs' || echo podman)
IMAGE    ?= localhost/flinklet:$(VERSION)-flink$(FLINK_VERSION)
CONTAINER_OPTS = --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024

# BASE_VARIANT=systemd: the base with systemd as init (tests/e2e/test_systemd.py)
BASE_VARIANT ?=
container-base: flink-lib
	@PODMAN="$(PODMAN)" FLINK_VERSION=$(FLINK_VERSION) FLINK_LIB=$(CURDIR)/$(FLINK_LIB) VARIANT=$(BASE_VARIANT) \
	  scripts/container-base.sh

container-image: $(BUILD)/flinklet flink-lib
	@[ "$(CURL)" = bundled ] || { echo "container-image: the image has no libcurl: build flinklet with CURL=bundled" >&2; exit 2; }
	base=$$(PODMAN="$(PODMAN)" FLINK_VERSION=$(FLINK_VERSION) FLINK_LIB=$(CURDIR)/$(FLINK_LIB) scripts/container-base.sh) && \
	$(PODMAN) build --format docker $(CONTAINER_OPTS) -f container/Containerfile --target runtime-prebuilt \
	  --build-arg FLINK_IMAGE=$$base --build-arg FLINKLET_BINARY=$(BUILD)/flinklet -t $(IMAGE) .
	@echo "container-image: $(IMAGE)"

container-test: $(BUILD)/flinklet flink-lib jobs
	PODMAN="$(PODMAN)" FLINKLET_BIN=$(CURDIR)/$(BUILD)/flinklet FLINK_HOME=$(CURDIR)/$(FLINK_HOME_DIR) \
	FLINKLET_JOBS_JAR=$(CURDIR)/$(JOBS_JAR) python3 -m pytest -v tests/e2e/test_container.py \
	  tests/e2e/test_manifests.py tests/e2e/test_units.py tests/e2e/test_systemd.py $(E2E_ARGS)

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

$(BUILD)/fuzz/obj/%.o: %.c $(CURL_MODE) | $(BUILD)/fuzz/obj $(CURL_A)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SANITIZE) $(DEPFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(BUILD)/fuzz/obj/web_assets.o: $(WEB_C) src/http/webpage.h | $(BUILD)/fuzz/obj
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SANITIZE) -fsanitize=fuzzer-no-link -c -o $@ $<

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
# repository or Maven Central), and its tests say why they are skipped when it does not.
PARITY_CASES ?= 4000
PARITY_SEED  ?= 19
PARITY_DIR    = $(BUILD)/parity
PARITY_JAR    = $(PARITY_DIR)/flinklet-parity-harness.jar
PARITY_116_DIR     = $(BUILD)/parity-1.16
PARITY_116_JAR     = $(PARITY_116_DIR)/flinklet-parity-harness-116.jar
PARITY_116_VERSION ?= 1.16-SNAPSHOT
.PHONY: parity parity-116-harness
$(PARITY_JAR): $(shell find tests/parity/src -name '*.java' 2>/dev/null) tests/parity/pom.xml
	cd tests/parity && mvn -B -q package -Dparity.build.dir=$(CURDIR)/$(PARITY_DIR)
$(PARITY_116_JAR): $(shell find tests/parity/oracle-1.16/src -name '*.java' 2>/dev/null) tests/parity/oracle-1.16/pom.xml
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
	PARITY_SEED=$(PARITY_SEED) python3 -m pytest -v -p no:cacheprovider tests/parity

# ---- benchmarks (issue 9, docs/performance.md) ---------------------------------------------------------------
# BENCH: which ones (footprint recovery shutdown autoscaler http startup memory page image, or all); each prints its figures and one
# table at the end. They measure side by side in one run and assert no timing.
BENCH ?= all
bench: all flink-lib jobs $(BUILD)/bench-bin/as_cycle
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
	python3 -m pytest -v -p no:cacheprovider --durations=20 -m "not heavy and not asan_elsewhere" tests/e2e $(E2E_ARGS)

valgrind: $(BUILD)/flinklet flink-lib jobs
	rm -rf $(VALGRIND_LOGS) && mkdir -p $(VALGRIND_LOGS)
	$(E2E_ENV) FLINKLET_BIN=$(CURDIR)/$(BUILD)/flinklet FLINKLET_VALGRIND_LOGS=$(VALGRIND_LOGS) \
	FLINKLET_WRAPPER="$(VALGRIND_CMD)" python3 -m pytest -v -rP -p no:cacheprovider $(VALGRIND_TESTS) $(E2E_ARGS)

# ---- fault injection on Flink's side (issue 8, item 3; tests/faults/) ------------------------------------
# The real build/flinklet against a misbehaving stand-in for Flink's REST API, with a fake "java" that only
# stays up. FAULTS_BIN picks another build of flinklet (for example one with sanitizers).
FAULTS_BIN ?= $(CURDIR)/$(BUILD)/flinklet
.PHONY: faults
# volshim: the LD_PRELOAD library of the volume fault tests (test_volume_faults.py); never installed
$(BUILD)/volshim.so: tests/faults/volshim.c
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -O1 -g -Wall -Wextra -Werror -shared -fPIC -o $@ $< -ldl
faults: $(BUILD)/flinklet $(BUILD)/volshim.so
	FLINKLET_BIN=$(FAULTS_BIN) FLINKLET_VOLSHIM=$(CURDIR)/$(BUILD)/volshim.so python3 -m pytest -v -p no:cacheprovider tests/faults $(FAULTS_ARGS)

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

$(BUILD)/bench-bin:
	mkdir -p $@

# the headers each object was built from (none before its first build: then it is built anyway)
-include $(wildcard $(BUILD)/obj/*.d $(BUILD)/asan/*.d $(BUILD)/fuzz/obj/*.d)
