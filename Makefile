# Hourglass developer entry points.
#   make run    start the broker on localhost:9092 (data in ./data); installs only what the broker
#               needs (`.` with RUN_EXTRAS, none by default), so a fresh clone starts in seconds
#   make test   install everything the tests need (`.[test]`), then run every test
#   make venv   the full developer venv (test extras), without running anything
SHELL := /bin/bash
.DEFAULT_GOAL := test

PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
# Two installs into the one .venv: `make run` needs only the broker's dependencies; `make test`
# (and `make venv`) add the test extras. A package that needs more at run time adds an extra to
# RUN_EXTRAS (e.g. RUN_EXTRAS=registry -> `.[registry]`); the test extras stay in TEST_EXTRAS.
RUN_EXTRAS ?=
TEST_EXTRAS ?= test
extras = $(if $(strip $(1)),[$(subst $(eval) ,$(comma),$(strip $(1)))])
comma := ,
RUN_STAMP := $(VENV)/.hourglass-run
VENV_STAMP := $(VENV)/.hourglass-installed
# compat: a plain path in a .pth; the default finder hook costs ~10 ms per interpreter start
PIP_EDITABLE := -m pip install -q --config-settings editable_mode=compat -e

# Java client jars (kafka-clients 3.9.1 and its runtime deps), shared by every checkout.
HOURGLASS_JARS ?= $(HOME)/.cache/hourglass/jars
export HOURGLASS_JARS
# The console's browser tests drive Debian's chromium (scripts/install_deps.sh); Playwright never
# downloads a browser of its own.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1
JAR_NAMES := kafka-clients slf4j-api lz4-java snappy-java zstd-jni jackson-databind jackson-core jackson-annotations
CLASSPATH_JARS := $(subst $(eval) ,:,$(foreach j,$(JAR_NAMES),$(HOURGLASS_JARS)/$(j).jar))

JAVA_SRC := $(wildcard tests/java/*.java)
JAVA_CLASSES := tests/java/classes
JAVA_STAMP := $(JAVA_CLASSES)/.stamp

PYTEST_ARGS ?= -q -n 2 --dist loadgroup

# The JVM projects the tests run against (Apache Kafka as the oracle, its Streams and Connect,
# Spark's and Flink's Kafka connectors, Debezium): Maven modules under tests/jvm, versions named
# once in tests/jvm/pom.xml, everything resolved into $(HOURGLASS_CACHE) (outside the checkout).
# The stamp is named after the poms' contents: a warm machine skips Maven altogether.
HOURGLASS_CACHE ?= $(HOME)/.cache/hourglass
export HOURGLASS_CACHE
JVM_POMS := $(shell find tests/jvm -name pom.xml -not -path '*/target/*' | sort)
JVM_SRCS := $(shell find tests/jvm -path '*/src/*' -type f -not -path '*/target/*' | sort)
JVM_STAMP = $(HOURGLASS_CACHE)/jvm-$(shell cat $(JVM_POMS) $(JVM_SRCS) | sha1sum | cut -c1-16).stamp
MVN := mvn -q -B -Dmaven.repo.local=$(HOURGLASS_CACHE)/m2

# The Go tests' modules (tests/go/*: testcontainers-go's Kafka module) into Go's module cache
# (~/go/pkg/mod, outside the checkout); a warm cache makes this a no-op.
GO ?= $(shell command -v go || echo /usr/local/go/bin/go)
GO_MODULES := $(patsubst %/go.mod,%,$(wildcard tests/go/*/go.mod))
go-modules:
	@for m in $(GO_MODULES); do (cd $$m && $(GO) mod download) || exit 1; done

.PHONY: go-modules jvm flink iceberg-spark venv venv-run deps jars java-harness confluent-kafka-versions run test crash-test fuzz bench soak load-limits

venv: $(VENV_STAMP)
venv-run: $(RUN_STAMP)

$(RUN_STAMP): pyproject.toml Makefile
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) $(PIP_EDITABLE) '.$(call extras,$(RUN_EXTRAS))'
	@touch $@

# the full install covers the run one too
$(VENV_STAMP): pyproject.toml Makefile
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) $(PIP_EDITABLE) '.$(call extras,$(RUN_EXTRAS) $(TEST_EXTRAS))'
	@touch $@ $(RUN_STAMP)

deps:
	@scripts/install_deps.sh

jars: $(VENV_STAMP)
	@$(VPY) scripts/fetch_jars.py >/dev/null

java-harness: jars $(JAVA_STAMP)

jvm: deps
	@test -f $(JVM_STAMP) || { $(MVN) -f tests/jvm/pom.xml package -DskipTests && touch $(JVM_STAMP); }

# PyFlink (apache-flink at tests/jvm/pom.xml's flink.version) in its own venv in ~/.cache/hourglass:
# it pins numpy/pandas/pyarrow/apache-beam releases of its own (tests/helpers/pyflink.py)
flink: $(VENV_STAMP) jvm
	@$(VPY) -m tests.helpers.pyflink >/dev/null

# PySpark at tests/jvm/pom.xml's iceberg.spark.version in its own venv in ~/.cache/hourglass, for
# Spark SQL over topics' Iceberg tables with Iceberg's Spark runtime, which is served for Spark 4.1
# but not for the pinned 4.2 (tests/helpers/spark_iceberg.py)
iceberg-spark: $(VENV_STAMP) jvm
	@$(VPY) -m tests.helpers.spark_iceberg >/dev/null

# a second confluent-kafka (its own librdkafka) for the share-group tests, in ~/.cache/hourglass
confluent-kafka-versions: $(VENV_STAMP)
	@$(VPY) -m tests.helpers.librdkafka >/dev/null

$(JAVA_STAMP): $(JAVA_SRC) | jars
	@mkdir -p $(JAVA_CLASSES)
	javac -nowarn -encoding UTF-8 --release 17 -cp '$(CLASSPATH_JARS)' -d $(JAVA_CLASSES) $(JAVA_SRC)
	@touch $@

# RUN_ARGS: more `serve` options, e.g. RUN_ARGS="--port 0 --ready-file /tmp/hg.ready"
RUN_ARGS ?=
run: $(RUN_STAMP)
	$(VPY) -m broker serve --config config/server.properties $(RUN_ARGS)

test: venv deps jars java-harness confluent-kafka-versions jvm flink iceberg-spark go-modules
	$(VPY) -m pytest $(PYTEST_ARGS) tests

# Reliability tools (short passes of both run inside `make test`, in tests/reliability).
#   make crash-test [ROUNDS=100 CRASH_SECONDS=2]   kill -9 rounds: acknowledged records lost/duplicated must be 0
#   make fuzz [FUZZ_SECONDS=300]             hostile frames: no crash, no hang, other sessions unharmed
ROUNDS ?= 100
CRASH_SECONDS ?= 2
FUZZ_SECONDS ?= 300

crash-test: venv
	$(VPY) scripts/crash_test.py --rounds $(ROUNDS) --seconds $(CRASH_SECONDS)

fuzz: venv
	$(VPY) scripts/fuzz_broker.py --seconds $(FUZZ_SECONDS)

# Benchmarks (never part of `make test`): figures as `name value unit` lines, saved under
# bench/results/ and compared with the last run.  BENCH_ARGS="--peer --quick" adds Tansu
# side by side (ratios Hourglass/Tansu), --quick shortens every step.
BENCH_ARGS ?= --peer
bench: venv jars
	$(VPY) bench/run.py $(BENCH_ARGS)

# Soak (default 30 min): RSS, fds and threads sampled under mixed load; CSV in soak.csv.
SOAK_SECONDS ?= 1800
soak: venv
	$(VPY) scripts/soak.py --seconds $(SOAK_SECONDS) --csv soak.csv

# 1000 connections, many partitions, 100 producers at once (figures on stdout).
load-limits: venv
	$(VPY) scripts/load_limits.py
