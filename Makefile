# The two commands: `make run` (the main job on a bundled recorded node) and `make test`.
BUILD ?= build
JOBS  ?= $(shell nproc)
CMAKE_FLAGS ?= -DP2PNODE_WERROR=ON
RUN_FIXTURE ?= tests/fixtures/tinybox-6x4090-bios-default
CTEST_ARGS ?=

.PHONY: all deps test-deps build run test bench deb clean format

all: build

deps:
	@scripts/install-deps.sh build

test-deps:
	@scripts/install-deps.sh test

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# `p2pnode check` of a recorded 6x RTX 4090 box as its BIOS left it, against the bundled
# profiles, then the same box after the fix. Reads only; changes nothing on this host.
run: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@echo "building p2pnode and p2pnode-serve (a few minutes on 2 cores the first time; the log: $(BUILD)/run-build.log)"
	@cmake --build $(BUILD) -j$(JOBS) --target p2pnode p2pnode-serve > $(BUILD)/run-build.log 2>&1 || { cat $(BUILD)/run-build.log; exit 1; }
	@echo "== $(RUN_FIXTURE) (before the BIOS fix)"
	@$(BUILD)/daemon/p2pnode check --root $(RUN_FIXTURE) --profiles profiles; echo "(exit status $$?: 1 means errors were found)"
	@echo
	@echo "== tests/fixtures/tinybox-6x4090 (after)"
	@$(BUILD)/daemon/p2pnode check --root tests/fixtures/tinybox-6x4090 --profiles profiles; echo "(exit status $$?)"

# The other Debian release's build (tests/dist/prebuild.sh) runs beside this one and on into ctest:
# the tests that need it (ctest fixture release_other) start once tests/dist/test_release_build.sh
# has waited for it (its lock), the others at once.
test: test-deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DP2PNODE_FUZZ=ON >/dev/null
	@{ bash tests/dist/prebuild.sh $(BUILD) > $(BUILD)/prebuild.log 2>&1 & pb=$$!; \
	   cmake --build $(BUILD) -j$(JOBS) && (cd $(BUILD) && ctest --output-on-failure -j$(JOBS) $(CTEST_ARGS)); rc=$$?; \
	   wait $$pb; cat $(BUILD)/prebuild.log; exit $$rc; }

bench: build
	@scripts/bench-check.sh $(BUILD)/daemon/p2pnode

# p2pnode_<version>_<arch>.deb in $(BUILD)/deb (dpkg-buildpackage in a scratch copy; debian/),
# packaging the programs `make`/`make test` built in $(BUILD) (cmake --install; an up-to-date build
# takes seconds). DEB_FROM_SCRATCH=1: configure and build everything again inside the package build.
deb:
	@scripts/install-deps.sh deb
ifeq ($(DEB_FROM_SCRATCH),)
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)
	@scripts/build-deb.sh $(BUILD)/deb $(BUILD)
else
	@scripts/build-deb.sh $(BUILD)/deb
endif

clean:
	rm -rf $(BUILD)

# Lays out the C++ and CUDA sources with .clang-format (clang-format 16 or newer).
format:
	@scripts/format.sh
