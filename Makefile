# flinklet: build, test and demo targets. `make check` and `make demo` work on a fresh machine:
# both start with `deps`, which installs what is missing and fetches the Flink jars through Maven.

FLINK_VERSION ?= 2.2.1
# flink-statebackend-forst in lib/ (state.backend.type: forst): Flink 2.x only, none for 1.20.x. Maven Central has
# no 2.2.1 of it (nor any 2.1.x): 2.2.1 takes 2.2.0's, checked by tests/e2e/test_native_savepoints.py. Empty: none.
FORST_VERSION ?= $(if $(filter 2.2.1,$(FLINK_VERSION)),2.2.0,$(if $(filter 2.%,$(FLINK_VERSION)),$(FLINK_VERSION)))
# flink-metrics-prometheus in lib/ (deps/flink, java/reporter): Maven Central has none at 1.20.4 or 1.20.5, so 1.20.x
# takes 1.20.3's, whose classes flinklet's reporter uses are the same (javap)
PROMETHEUS_REPORTER_VERSION ?= $(if $(filter 1.20.%,$(FLINK_VERSION)),1.20.3,$(FLINK_VERSION))
# the Table API's jars in lib/ (deps/flink) and the test jobs' (tests/jobs: SqlRunner): Maven Central has none at
# 1.20.4 or 1.20.5 either, so 1.20.x takes 1.20.3's (tests/e2e/test_app_mode.py runs SQL on them)
TABLE_VERSION ?= $(if $(filter 1.20.%,$(FLINK_VERSION)),1.20.3,$(FLINK_VERSION))
PREFIX        ?= /usr/local
BUILD         ?= build
# the Flink runtime `make flink-lib` builds: `dist` (the default), the official distribution's lib/ and opt/ (flink-dist
# and the jars beside it, flink-python and the SQL client) from PyPI's apache-flink-libraries of FLINK_VERSION
# (scripts/flink-dist.py; PyPI has every release flinklet supports, 1.20.x to 2.3.x), in build/flink-<version>;
# `modules`: Flink's module jars from Maven Central (deps/flink), no opt/, in build/flink-<version>-modules, for
# a machine that cannot reach PyPI and for `make bench BENCH=runtime`, which compares the two
FLINK_RUNTIME ?= dist
FLINK_HOME_DIR = $(BUILD)/flink-$(FLINK_VERSION)$(if $(filter modules,$(FLINK_RUNTIME)),-modules)
PYPI_CACHE     = $(BUILD)/pypi
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
# Flink's SQL Kafka connector (flink-sql-connector-kafka, one shaded jar; deps/kafka-sql/pom.xml) of
# KAFKA_CONNECTOR_VERSION, which tests/e2e/test_kafka_sql.py's SQL script job is given as its jarURI; not part of flinklet
KAFKA_SQL_DIR  = $(BUILD)/kafka-sql-$(KAFKA_CONNECTOR_VERSION)
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

.PHONY: all curl-refresh deps deps-run flink-lib pyflink kafka-lib kafka-sql-lib jobs quartz-parity unit unit-asan e2e lint check demo demo-run install clean format container-base container-image container-image-python container-test bench

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

# one template for the variants of the objects (plain, ASan/UBSan, and the fuzzers' in mk/tests.mk): $(1) their
# directory, $(2) the compiler and its flags; the status page's generated C file is compiled the same way
define objects
$(1)/%.o: %.c $$(CURL_MODE) | $(1) $$(CURL_A)
	$(2) $$(DEPFLAGS) -c -o $$@ $$<

$(1)/web_assets.o: $$(WEB_C) src/http/webpage.h | $(1)
	$(2) -c -o $$@ $$<
endef
$(eval $(call objects,$(BUILD)/obj,$$(CC) $$(CFLAGS)))
$(eval $(call objects,$(BUILD)/asan,$$(CC) $$(CFLAGS) $$(ASAN_FLAGS)))

$(WEB_C): $(WEB_FILES) scripts/embed.sh | $(BUILD)/gen
	scripts/embed.sh $(WEB_FILES) > $@.tmp && mv $@.tmp $@

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

# Flink's jars (FLINK_RUNTIME: the distribution's or the modules'), and flinklet's Java built against them by one
# Maven invocation of java/pom.xml (docs/architecture.md, "The Java side"): the loopback Prometheus reporter
# (java/reporter: Flink's metrics through flinklet's /metrics), the launcher, the JVM's main class (java/launcher: the
# job runs until Flink says it ended, whatever main() does after submitting it) and the SQL runner (java/sqlrunner,
# in the launcher's jar); each module's classes under build/java-<version>/, the two jars in Flink's lib/
JAVA_SRC := $(wildcard java/pom.xml java/*/pom.xml) $(shell find java/*/src -type f 2>/dev/null)
flink-lib: $(FLINK_LIB)/.complete
$(FLINK_LIB)/.complete: deps/flink/pom.xml scripts/flink-dist.py $(JAVA_SRC)
ifeq ($(FLINK_RUNTIME),modules)
	cd deps/flink && mvn -B -q package -Dflink.version=$(FLINK_VERSION) -Dlib.dir=$(CURDIR)/$(FLINK_LIB) \
		-Dprometheus.reporter.version=$(PROMETHEUS_REPORTER_VERSION) -Dtable.version=$(TABLE_VERSION) \
		$(if $(FORST_VERSION),-Dforst.version=$(FORST_VERSION))
else ifeq ($(FLINK_RUNTIME),dist)
	scripts/flink-dist.py $(FLINK_VERSION) $(CURDIR)/$(FLINK_HOME_DIR) $(CURDIR)/$(PYPI_CACHE)
else
	@echo "flink-lib: FLINK_RUNTIME must be dist or modules (got $(FLINK_RUNTIME))" >&2; exit 2
endif
	cd java && mvn -B -q package -Dflink.version=$(FLINK_VERSION) -Dlib.dir=$(CURDIR)/$(FLINK_LIB) \
		-Dprometheus.reporter.version=$(PROMETHEUS_REPORTER_VERSION) -Dtable.version=$(TABLE_VERSION) \
		-Djava.build.dir=$(CURDIR)/$(BUILD)/java-$(FLINK_VERSION)
	touch $@

# PyFlink of FLINK_VERSION (apache-flink from PyPI) in a virtual environment, the Python of Python jobs on the host
# (tests/e2e/test_python.py makes it itself when it is missing); the image's is container/README.md's variant
PYFLINK_DIR = $(BUILD)/pyflink-$(FLINK_VERSION)
pyflink: $(PYFLINK_DIR)/.complete
$(PYFLINK_DIR)/.complete: scripts/pyflink-venv.sh
	scripts/pyflink-venv.sh $(FLINK_VERSION) $(CURDIR)/$(PYFLINK_DIR) $(CURDIR)/$(PYPI_CACHE)

kafka-lib: $(KAFKA_LIB)/.complete
$(KAFKA_LIB)/.complete: deps/kafka/pom.xml
	cd deps/kafka && mvn -B -q package -Dkafka.version=$(KAFKA_VERSION) -Dlib.dir=$(CURDIR)/$(KAFKA_LIB)
	touch $@

kafka-sql-lib: $(KAFKA_SQL_DIR)/.complete
$(KAFKA_SQL_DIR)/.complete: deps/kafka-sql/pom.xml
	cd deps/kafka-sql && mvn -B -q package -Dkafka.connector.version=$(KAFKA_CONNECTOR_VERSION) \
	  -Dlib.dir=$(CURDIR)/$(KAFKA_SQL_DIR)
	touch $@

# one Maven build makes both jars
jobs: $(JOBS_JAR) $(KAFKA_JOBS_JAR)
$(JOBS_JAR) $(KAFKA_JOBS_JAR) &: $(shell find tests/jobs/src -name '*.java' 2>/dev/null) tests/jobs/pom.xml
	cd tests/jobs && mvn -B -q package -Dflink.version=$(FLINK_VERSION) -Dkafka.connector.version=$(KAFKA_CONNECTOR_VERSION) \
	  -Dtable.version=$(TABLE_VERSION) $(if $(filter 1.%,$(FLINK_VERSION)),-Djobs.excludes=**/AsyncStateCounter.java) \
	  -Djobs.build.dir=$(CURDIR)/$(JOBS_DIR)

# the tests and their orchestration (make check, check-fast, e2e, faults, fuzz, parity, bench, ...)
include mk/tests.mk


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

# the Python variant (container/README.md, "Python jobs"): PyFlink's wheels fetched on the host
# (scripts/pyflink-wheels.sh), the base with Debian's Python and PyFlink in /opt/pyflink, the image on it
container-image-python: $(BUILD)/flinklet flink-lib
	@[ "$(CURL)" = bundled ] || { echo "container-image-python: build flinklet with CURL=bundled" >&2; exit 2; }
	scripts/pyflink-wheels.sh $(FLINK_VERSION)
	base=$$(PODMAN="$(PODMAN)" FLINK_VERSION=$(FLINK_VERSION) FLINK_LIB=$(CURDIR)/$(FLINK_LIB) VARIANT=python \
	  scripts/container-base.sh) && \
	$(PODMAN) build --format docker $(CONTAINER_OPTS) -f container/Containerfile --target runtime-prebuilt \
	  --build-arg FLINK_IMAGE=$$base --build-arg FLINKLET_BINARY=$(BUILD)/flinklet -t $(IMAGE)-python .
	@echo "container-image-python: $(IMAGE)-python"

container-test: $(BUILD)/flinklet flink-lib jobs
	PODMAN="$(PODMAN)" FLINKLET_BIN=$(CURDIR)/$(BUILD)/flinklet FLINK_HOME=$(CURDIR)/$(FLINK_HOME_DIR) \
	FLINKLET_JOBS_JAR=$(CURDIR)/$(JOBS_JAR) python3 -m pytest -v tests/e2e/test_container.py \
	  tests/e2e/test_container_python.py tests/e2e/test_manifests.py tests/e2e/test_units.py tests/e2e/test_systemd.py \
	  tests/e2e/test_deployment_docs.py $(E2E_ARGS)


# the headers each object was built from (none before its first build: then it is built anyway)
-include $(wildcard $(BUILD)/obj/*.d $(BUILD)/asan/*.d $(BUILD)/fuzz/obj/*.d)
