# hijack — build and test entry points. See README.md.
#
#   make build        bin/hijack (and bin/hijack-plot, which runs its plotting
#                     commands and the Parquet export, and bin/hijack-query, DuckDB
#                     for hijack query), the runtime (bin/libvptrace.so,
#                     bin/libvptrace.a, bin/vptrace.h, bin/vptrace.supp:
#                     vptrace/runtime/build.sh)
#   make deps         install the packages and Debian sources the tests need
#   make test         deps + build + unit tests + e2e suite + realworld-short (what CI runs)
#   make demo         trace a small multi-threaded program with vptrace, print the report
#   make demo-pad     rewrite a small C program with the pad preset, compare runs
#   make e2e          the e2e suite only   (E2E_FLAGS='-short' or '-run Csmith')
#   make e2e-clobber  the differential part of the suite with the clobber preset
#   make e2e-vptrace  ... with vptrace (T=0), linked with the runtime
#   make e2e-blockcount ... with blockcount (every block counted), linked with the runtime
#   make bench        Go benchmarks, including the e2e rewrite/run benchmarks
#   make fuzz-short   every Go fuzz target for FUZZTIME each
#   make realworld    Debian packages' own test suites built plain, pad, clobber and vptrace
#                     (RW_FLAGS='--short', 'zstd pcre2', '--modes "plain vptrace"'; docs/realworld.md)
#   make realworld-short  its short part: bzip2 and zstd, reduced test sets (in make test)
#
# HIJACK selects the rewriter the e2e suite and the demo drive (default
# bin/hijack, built first). With HIJACK set to another path nothing is built:
#   make e2e HIJACK=$PWD/e2e/testdata/fake-hijack

SHELL      := /bin/bash
GO         ?= go
HIJACK     ?= $(CURDIR)/bin/hijack
E2E_FLAGS  ?=
E2E_TIMEOUT ?= 30m
E2E_PARALLEL ?= 4
FUZZTIME   ?= 15s
export HIJACK HIJACK_RULES HIJACK_LDLIBS

# Build bin/hijack first only when it is the rewriter under test.
BUILD_IF_DEFAULT := $(if $(filter $(CURDIR)/bin/hijack bin/hijack,$(HIJACK)),build)

.PHONY: all build deps test unit e2e e2e-short e2e-clobber e2e-vptrace e2e-blockcount demo demo-pad bench fuzz-short clean distclean realworld realworld-short

all: build

# What hijack --version prints: the commit, and whether the tree was modified.
VERSION    ?= $(shell git describe --always --dirty 2>/dev/null || echo unknown)

# bin/hijack is the rewriter without the plotting commands (-tags noplot:
# hijack tune and report --heatmap run in bin/hijack-plot, the full build)
# and without cgo (nothing in it needs libc): gonum/plot's package
# initialisation, the dynamic loader and libc's thread start-up would cost
# every process, one per object in a build, more than a small rewrite.
# hijack report --parquet runs in hijack-plot too (parquet-go's packages
# take a millisecond to initialise); hijack query in hijack-query, DuckDB
# linked through cgo (80 MB), behind -tags duckdb: without it go build ./...
# stays quick (linking DuckDB took seconds every time).
build:
	CGO_ENABLED=0 $(GO) build -tags noplot -ldflags "-X main.buildVersion=$(VERSION)" -o bin/hijack ./cmd/hijack
	$(GO) build -ldflags "-X main.buildVersion=$(VERSION)" -o bin/hijack-plot ./cmd/hijack
	$(GO) build -tags duckdb -o bin/hijack-query ./cmd/hijack-query
	@$(SHELL) vptrace/runtime/build.sh $(CURDIR)/bin

deps:
	@scripts/deps.sh

test: deps $(BUILD_IF_DEFAULT)
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory e2e
	@$(MAKE) --no-print-directory e2e-clobber
	@$(MAKE) --no-print-directory e2e-vptrace
	@$(MAKE) --no-print-directory e2e-blockcount
	@$(MAKE) --no-print-directory realworld-short

# The differential programs again with the clobber preset: every register
# and flag liveness calls dead is destroyed before every instruction.
E2E_DIFF := Csmith|Archive|Upstream|CxxExceptions|Valgrind|Dispatch|TLSDynamic
e2e-clobber:
	@$(MAKE) --no-print-directory e2e HIJACK_RULES=$(CURDIR)/testdata/rules/clobber.yaml E2E_FLAGS="-run '$(E2E_DIFF)' $(E2E_FLAGS)"

# ... and with vptrace at T=0 (transparency: traced programs behave as
# before), linked with the runtime; stack tracing on for the csmith part.
e2e-vptrace:
	@$(MAKE) --no-print-directory e2e HIJACK_RULES=$(CURDIR)/testdata/rules/vptrace.yaml \
		HIJACK_LDLIBS="$(CURDIR)/bin/libvptrace.a -lpthread" E2E_FLAGS="-run '$(E2E_DIFF)' $(E2E_FLAGS)"
	@$(MAKE) --no-print-directory e2e HIJACK_RULES=$(CURDIR)/testdata/rules/vptrace-stack.yaml \
		HIJACK_LDLIBS="$(CURDIR)/bin/libvptrace.a -lpthread" E2E_FLAGS="-run 'Csmith|CxxExceptions' $(E2E_FLAGS)"

# ... and with blockcount (every block of every function counted), linked
# with the runtime: counted programs behave as before.
e2e-blockcount:
	@$(MAKE) --no-print-directory e2e HIJACK_RULES=$(CURDIR)/testdata/rules/blockcount.yaml \
		HIJACK_LDLIBS="$(CURDIR)/bin/libvptrace.a -lpthread" E2E_FLAGS="-run '$(E2E_DIFF)' $(E2E_FLAGS)"

# Unit tests of every package except the e2e suite. -count=1 for the same
# reason as e2e's: many tests hand files to gcc, as or objdump (testdata
# sources, the system's static libraries), which the go test cache does not
# see; with vptrace/runtime/testdata/vt.c or cfg/effect/testdata/corpus.c
# broken, a cached run still said ok. The DuckDB packages need -tags duckdb.
unit:
	@pkgs=$$($(GO) list ./... | grep -v '/e2e$$'); \
	if [ -n "$$pkgs" ]; then $(GO) test -count=1 $$pkgs; else echo "unit: no packages yet"; fi
	$(GO) test -count=1 -tags duckdb ./vptrace/query ./cmd/hijack-query
	@# the runtime's tests again with the shared runtime (libvptrace.so, its
	@# Go half loaded when a process needs it) in place of the archive
	VT_SHARED=1 $(GO) test -count=1 ./vptrace/runtime

# -count=1: results must never come from the go test cache, which does not
# notice a rebuilt bin/hijack. The output filter drops the per-subtest noise
# of -v but keeps failures, skips (with their reasons) and timings.
# -parallel only bounds how many tests are in flight; the suite itself runs at
# most E2E_JOBS (default GOMAXPROCS) external processes at a time.
e2e:
	@set -o pipefail; $(GO) test -count=1 -v -timeout $(E2E_TIMEOUT) -parallel $(E2E_PARALLEL) $(E2E_FLAGS) ./e2e 2>&1 | scripts/gotest-filter.sh

e2e-short:
	@$(MAKE) --no-print-directory e2e E2E_FLAGS='-short $(E2E_FLAGS)'

demo: $(BUILD_IF_DEFAULT)
	@scripts/demo.sh

demo-pad: $(BUILD_IF_DEFAULT)
	@scripts/demo-pad.sh

# Package benchmarks with go's default bench time; the e2e ones (rewriting
# whole archives, running original vs rewritten programs) 3 times each.
bench: $(BUILD_IF_DEFAULT)
	@pkgs=$$($(GO) list ./... | grep -v '/e2e$$'); \
	if [ -n "$$pkgs" ]; then $(GO) test -count=1 -run '^$$' -bench . -timeout 60m $$pkgs; fi
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 3x -timeout 60m ./e2e

fuzz-short:
	@FUZZTIME=$(FUZZTIME) scripts/fuzz-short.sh

# The real-world suite: Debian source packages (zstd, pcre2, xz, bzip2, jq,
# libxml2, fmtlib, re2) built plain and through `hijack cc` with each preset,
# their own test suites compared (about an hour from a cold cache; results in
# .cache/realworld/results.csv, docs/realworld.md from scripts/realworld/report.sh).
# realworld-short (in `make test`): bzip2 and zstd, reduced test sets.
RW_FLAGS ?=
realworld: $(BUILD_IF_DEFAULT)
	@scripts/deps.sh --realworld
	@HIJACK=$(HIJACK) scripts/realworld/run.sh $(RW_FLAGS)

realworld-short: $(BUILD_IF_DEFAULT)
	@scripts/deps.sh --realworld=short
	@HIJACK=$(HIJACK) scripts/realworld/run.sh --short $(RW_FLAGS)

clean:
	rm -rf bin .cache/e2e .cache/demo

# also the csmith, compile and Debian source caches
distclean: clean
	rm -rf .cache
