# flinklet: build, test and demo targets. `make check` and `make demo` work on a fresh machine:
# both start with `deps`, which installs what is missing and fetches the Flink jars through Maven.

FLINK_VERSION ?= 2.2.1
PREFIX        ?= /usr/local
BUILD         ?= build
FLINK_HOME_DIR = $(BUILD)/flink-$(FLINK_VERSION)
FLINK_LIB      = $(FLINK_HOME_DIR)/lib
JOBS_DIR       = $(BUILD)/jobs-$(FLINK_VERSION)
JOBS_JAR       = $(JOBS_DIR)/flinklet-test-jobs.jar
VERSION       := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

CC      ?= cc
PKGS     = libcurl libcjson yaml-0.1 libsystemd libmicrohttpd libcrypto
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-unused-parameter \
           -Iinclude -DFLINKLET_VERSION=\"$(VERSION)\" $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm

SRCS     = $(filter-out $(EXCLUDE),$(wildcard src/*.c))
LIB_SRCS = $(filter-out src/main.c,$(SRCS))
OBJS     = $(SRCS:src/%.c=$(BUILD)/obj/%.o)
LIB_OBJS = $(LIB_SRCS:src/%.c=$(BUILD)/obj/%.o)
UNIT_SRCS  = $(wildcard tests/unit/test_*.c)
UNIT_BINS  = $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/unit/%)
ASAN_OBJS  = $(LIB_SRCS:src/%.c=$(BUILD)/asan/%.o)
ASAN_BINS  = $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/asan-unit/%)
ASAN_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

.PHONY: all deps flink-lib jobs unit unit-asan e2e lint check demo install clean format container-base container-image container-test

all: $(BUILD)/flinklet

$(BUILD)/flinklet: $(OBJS)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/obj/%.o: src/%.c $(wildcard include/*.h) | $(BUILD)/obj
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/asan/%.o: src/%.c $(wildcard include/*.h) | $(BUILD)/asan
	$(CC) $(CFLAGS) $(ASAN_FLAGS) -c -o $@ $<

$(BUILD)/unit/%: tests/unit/%.c $(LIB_OBJS) tests/unit/unit.h | $(BUILD)/unit
	$(CC) $(CFLAGS) -o $@ $< $(LIB_OBJS) $(LDLIBS) -lcmocka

$(BUILD)/asan-unit/%: tests/unit/%.c $(ASAN_OBJS) tests/unit/unit.h | $(BUILD)/asan-unit
	$(CC) $(CFLAGS) $(ASAN_FLAGS) -o $@ $< $(ASAN_OBJS) $(LDLIBS) -lcmocka

$(BUILD)/obj $(BUILD)/asan $(BUILD)/unit $(BUILD)/asan-unit:
	mkdir -p $@

deps:
	scripts/deps.sh

flink-lib: $(FLINK_LIB)/.complete
$(FLINK_LIB)/.complete: deps/flink/pom.xml
	cd deps/flink && mvn -B -q package -Dflink.version=$(FLINK_VERSION) -Dlib.dir=$(CURDIR)/$(FLINK_LIB)
	touch $@

jobs: $(JOBS_JAR)
$(JOBS_JAR): $(shell find tests/jobs/src -name '*.java' 2>/dev/null) tests/jobs/pom.xml
	cd tests/jobs && mvn -B -q package -Dflink.version=$(FLINK_VERSION) -Djobs.build.dir=$(CURDIR)/$(JOBS_DIR)

unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

unit-asan: $(ASAN_BINS)
	@set -e; for t in $(ASAN_BINS); do echo "== $$t (asan+ubsan)"; \
	  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 $$t; done

e2e: $(BUILD)/flinklet flink-lib jobs
	FLINKLET_BIN=$(CURDIR)/$(BUILD)/flinklet FLINK_HOME=$(CURDIR)/$(FLINK_HOME_DIR) \
	FLINKLET_JOBS_JAR=$(CURDIR)/$(JOBS_JAR) python3 -m pytest -v -x tests/e2e $(E2E_ARGS)

lint:
	scripts/lint.sh

check: deps
	$(MAKE) all unit unit-asan lint
	$(MAKE) e2e

demo: deps
	$(MAKE) all flink-lib jobs
	scripts/demo.sh $(CURDIR)/$(BUILD)/flinklet $(CURDIR)/$(FLINK_HOME_DIR) $(CURDIR)/$(JOBS_JAR)

install: $(BUILD)/flinklet
	install -D -m 0755 $(BUILD)/flinklet $(DESTDIR)$(PREFIX)/bin/flinklet

format:
	clang-format -i src/*.c include/*.h tests/unit/*.c tests/unit/*.h

clean:
	rm -rf $(BUILD)/obj $(BUILD)/asan $(BUILD)/unit $(BUILD)/asan-unit $(BUILD)/flinklet

# ---- containers (container/README.md, docs/deployment.md) ------------------------------------------------
# PODMAN: the podman command with its global options (runc and cgroupfs where runc is installed, as on machines
# without systemd). IMAGE: the tag container-image builds. The base is the local stand-in for the official
# Flink image (scripts/container-base.sh, cached by the hash of its inputs); the image is the Containerfile's
# runtime-prebuilt target with build/flinklet.
PODMAN   ?= $(shell command -v runc >/dev/null 2>&1 && echo 'podman --runtime runc --cgroup-manager cgroupfs' || echo podman)
IMAGE    ?= localhost/flinklet:$(VERSION)-flink$(FLINK_VERSION)
CONTAINER_OPTS = --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024

container-base: flink-lib
	@PODMAN="$(PODMAN)" FLINK_VERSION=$(FLINK_VERSION) FLINK_LIB=$(CURDIR)/$(FLINK_LIB) scripts/container-base.sh

container-image: $(BUILD)/flinklet flink-lib
	base=$$(PODMAN="$(PODMAN)" FLINK_VERSION=$(FLINK_VERSION) FLINK_LIB=$(CURDIR)/$(FLINK_LIB) scripts/container-base.sh) && \
	$(PODMAN) build --format docker $(CONTAINER_OPTS) -f container/Containerfile --target runtime-prebuilt \
	  --build-arg FLINK_IMAGE=$$base --build-arg FLINKLET_BINARY=$(BUILD)/flinklet -t $(IMAGE) .
	@echo "container-image: $(IMAGE)"

container-test: $(BUILD)/flinklet flink-lib jobs
	PODMAN="$(PODMAN)" FLINKLET_BIN=$(CURDIR)/$(BUILD)/flinklet FLINK_HOME=$(CURDIR)/$(FLINK_HOME_DIR) \
	FLINKLET_JOBS_JAR=$(CURDIR)/$(JOBS_JAR) python3 -m pytest -v tests/e2e/test_container.py \
	  tests/e2e/test_manifests.py tests/e2e/test_units.py $(E2E_ARGS)
