# Thin wrapper around CMake.  The two commands a new user needs:
#   make demo   build, then compare every balancer on the built-in simulated 4-socket host
#   make check  -Werror build + tests, ASan/UBSan build + tests, clang-format check
BUILD      ?= build
BUILD_SAN  ?= build-asan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
RETRY_LOG   = $(abspath $(BUILD))/system-retries.log
RETRY_SHOW  = if [ -s $(RETRY_LOG) ]; then echo "NOTE: emulated hosts booted a second time \
(their kernel locked up or stopped):"; cat $(RETRY_LOG); fi
SOURCES     = $(shell git ls-files '*.c' '*.h' 2>/dev/null || find agent host policy guest-tools tests -name '*.[ch]')

.PHONY: all deps build demo check check-werror check-asan check-format format clean bench \
	bench-migrate bench-observe install soak fuzz fuzz-build fuzz-merge deps-pkg deb rpm \
	check-package

all: build

deps:
	@./packaging/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DVNUMAD_WERROR=ON >/dev/null

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	./$(BUILD)/agent/vnumactl simulate

check-werror: build
	cd $(BUILD) && ctest -j $(JOBS) --output-on-failure -LE system
	# One emulated NUMA host at a time: each needs both cores.  An emulated host whose kernel
	# locked up or stopped is booted again once (docs/system-tests.md); such second boots are
	# listed here when a test failed, else at the end of make check.
	rm -f $(RETRY_LOG)
	cd $(BUILD) && VNUMAD_SYSTEM_RETRY_LOG=$(RETRY_LOG) \
		ctest --output-on-failure -L system -LE manual || { $(RETRY_SHOW); exit 1; }

check-asan: deps
	cmake -S . -B $(BUILD_SAN) -DVNUMAD_WERROR=ON -DVNUMAD_SANITIZE=ON \
		-DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS=-O1 >/dev/null
	cmake --build $(BUILD_SAN) -j $(JOBS)
	# The system tests (emulated NUMA hosts, 10-15 minutes) run once, in check-werror.
	cd $(BUILD_SAN) && ctest -j $(JOBS) --output-on-failure -LE system

check-format: deps
	clang-format --dry-run --Werror $(SOURCES)

check: check-werror check-asan check-format
	@$(RETRY_SHOW)
	@echo "make check: all passed"

format:
	clang-format -i $(SOURCES)

clean:
	rm -rf $(BUILD) $(BUILD_SAN) $(BUILD_INSTALL) $(BUILD_FUZZ) $(BUILD_PKG)

# Installs vnumad, vnumactl, vnuma-load, the libvirt module, the systemd unit, man pages and
# bash completion under PREFIX (packaging/CMakeLists.txt), DESTDIR for staging.  A distribution
# layout: make install PREFIX=/usr.  Its own build directory, configured with that prefix.
PREFIX ?= /usr/local
BUILD_INSTALL ?= build-install
install: deps
	cmake -S . -B $(BUILD_INSTALL) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	cmake --build $(BUILD_INSTALL) -j $(JOBS) --target vnumad vnumactl vnuma-load vnumad-libvirt
	cmake --install $(BUILD_INSTALL)

# ---- Packages (docs/packaging.md), built from a copy of the tree under BUILD_PKG, never
# into the repo's parent directory.  make deb: vnumad, vnumad-libvirt and vnuma-load .deb
# files, lintian-checked; make rpm: the same three RPMs from packaging/rpm/vnumad.spec.
# make check-package INSTALLS the .deb files on this machine (root, into /usr), upgrades from
# an older build, purges them and checks what is left; .ci/run runs it after make check.
BUILD_PKG ?= build-pkg

deps-pkg:
	@./packaging/install-deps.sh --pkg

deb: deps-pkg
	JOBS=$(JOBS) sh packaging/build-deb.sh $(BUILD_PKG)

rpm: deps-pkg
	JOBS=$(JOBS) sh packaging/build-rpm.sh $(BUILD_PKG)

check-package: deb rpm
	sh tests/pkg/test_file_lists.sh $(BUILD_PKG)
	sh tests/pkg/test_package_install.sh $(BUILD_PKG)

# ---- Benchmarks: numbers only, never pass/fail on time (tests/bench/README.md).
# Builds in $(BUILD) (RelWithDebInfo by default) and runs the policy engine's decision step at
# the two target sizes; pass options through BENCH_ARGS, e.g. BENCH_ARGS='--json'.
# Builds only what the benchmark needs, so a test being edited elsewhere does not stop it.
bench: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target bench_engine
	./$(BUILD)/tests/bench_engine $(BENCH_ARGS)

# The page migrator (host/linux/actuate.c) against numactl's migratepages, on an emulated
# 2-node host under QEMU TCG (tests/bench/bench_migrate_numa.sh; it says so and exits 0 when
# QEMU or a kernel is missing): a few minutes.  Options through BENCH_MIGRATE_ARGS, e.g.
# BENCH_MIGRATE_ARGS='--rounds 5 --modes 4k'.
bench-migrate: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target bench_migrate
	VNUMAD_BINDIR=$(BUILD) sh tests/bench/bench_migrate_numa.sh $(BENCH_MIGRATE_ARGS)

# What observing the host costs: vnumad --host linux beside numad on stand-in VMs (vnuma-load)
# of several shapes, on this machine, in a private PID namespace (tests/bench/bench_observe.sh;
# root; it says so and exits 0 when it cannot run).  About 10 minutes at the default 60-s window;
# BENCH_OBSERVE_SECONDS=10 BENCH_OBSERVE_CONFIGS=none,16x512M-thp,16x512M-4k for a quick run,
# BENCH_OBSERVE_ARGS=--json for JSON.
bench-observe: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target vnumad vnumactl vnuma-load
	VNUMAD_BINDIR=$(BUILD) sh tests/bench/bench_observe.sh $(BENCH_OBSERVE_ARGS)

# The long soak: vnumad on the simulated host through SOAK_HOURS (default 24) simulated hours
# of churn, policy changes, reloads and clients (tests/sim/test_soak.sh; make check runs it for
# 2 hours).  RSS and descriptors must stay bounded, every simulated second has its round.
SOAK_HOURS ?= 24
soak: build
	SOAK_HOURS=$(SOAK_HOURS) VNUMAD_BINDIR=$(abspath $(BUILD)) sh tests/sim/test_soak.sh

# ---- Fuzzing (docs/fuzzing.md): every tests/fuzz/fuzz_NAME.c built with clang, libFuzzer,
# ASan and UBSan in its own build directory, then run for FUZZ_SECONDS each on a scratch copy
# of its seed corpus, printing runs, coverage and findings per target (tests/fuzz/run.sh).
# FUZZ_TARGETS='proto config' runs only those; an input taking FUZZ_TIMEOUT seconds is a hang.
# `make fuzz-merge` then adds what the last run found that brings new coverage to the repo
# corpus.  Needs clang's libFuzzer runtime (install-deps.sh --fuzz), which nothing else needs.
BUILD_FUZZ   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TIMEOUT ?= 10
FUZZ_TARGETS ?=

fuzz-build:
	@./packaging/install-deps.sh --fuzz
	cmake -S . -B $(BUILD_FUZZ) -DCMAKE_C_COMPILER=clang -DVNUMAD_FUZZ=ON \
		-DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS=-O1 >/dev/null
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target fuzz_targets

fuzz: fuzz-build
	FUZZ_TIMEOUT=$(FUZZ_TIMEOUT) sh tests/fuzz/run.sh $(BUILD_FUZZ) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-merge: fuzz-build
	sh tests/fuzz/run.sh --merge $(BUILD_FUZZ) $(FUZZ_TARGETS)
