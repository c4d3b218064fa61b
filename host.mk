# Host-side targets: build the patched guest kernel and the Debian guest,
# boot it in QEMU and bring the results back.  Used directly by
# GNUmakefile on a fresh clone and included by Makefile.am after configure.

# PERWINE_KERNEL=6.12 make ...: the 6.12 series and kernel, in out/6.12
# (scripts/common.sh); 6.1 by default.
PERWINE_KERNEL ?= 6.1
PERWINE_OUT ?= $(abspath $(srcdir))/out$(if $(filter-out 6.1,$(PERWINE_KERNEL)),/$(PERWINE_KERNEL))
export PERWINE_KERNEL PERWINE_OUT
KERNEL_IMAGE = $(PERWINE_OUT)/bzImage-guest
GUEST_IMAGE = $(PERWINE_OUT)/guest.img

.PHONY: help kernel kernel-deb kernel-distro-check debs fresh-check rootfs image vm-check vm-bench vm-distcheck vm-shell vm-run \
	vm-x86-selftests vm-bench-stock vm-bench-production vm-fuzz wine wine-check wine-bench docs \
	kernel-debug image-debug vm-check-debug

help:
	@echo "perwine host targets:"
	@echo "  make vm-bench      boot the patched kernel, run the dispatch demo and the benchmark table"
	@echo "  make vm-check      run the whole test suite (./configure && make check) in the guest"
	@echo "  make vm-distcheck  run make distcheck in the guest"
	@echo "  make vm-shell      interactive guest shell on the serial console"
	@echo "  make vm-run CMD='...'  run a command in the guest (libperwine installed);"
	@echo "                     PERWINE_SHARE=DIR shares DIR read-write at /mnt/share"
	@echo "  make vm-check TESTS='tests/30-vma ...'  run only those tests"
	@echo "  PERWINE_EXTRA_PACKAGES='pkg ...'  more Debian packages in the guest"
	@echo "  make vm-check-debug  the whole suite on a KASAN/PROVE_LOCKING/DEBUG_VM kernel"
	@echo "  make vm-x86-selftests  the kernel's x86 selftests on the unpatched and the patched kernel"
	@echo "  make vm-bench-stock  the benchmark on the unpatched kernel (SUD and seccomp as shipped)"
	@echo "  make vm-bench-production  the benchmark on the series with Debian's entry options (mitigations, IBT, ftrace, audit)"
	@echo "  make vm-fuzz       trinity in the debug guest, plain and as a PER_WINE process"
	@echo "  make wine          build Wine 11.10 with wine/patches (cached; needs the Wine source, see wine/README.md)"
	@echo "  make wine-check    Wine's ntdll tests and wine/tests in the guest: stock SUD, perwine's default, drop-in and VMA mode"
	@echo "  make wine-bench    wine/tests/syscallbench in icount guests: no dispatch, Proton, stock SUD, drop-in, VMA, auto"
	@echo "  make kernel        build the patched guest kernel only"
	@echo "  make kernel-deb    the patched guest kernel as Debian packages (out/debs/kernel)"
	@echo "  make kernel-distro-check  compile the series's objects with Debian's amd64 config"
	@echo "  make debs          the library's Debian packages (dpkg-buildpackage + lintian)"
	@echo "  make fresh-check   the README's two commands in a clean bookworm chroot"
	@echo "  make image         build the guest disk image only"
	@echo "  make docs          put the newest results of vm-bench, wine-bench and wine-check into docs/results and the docs' tables"

kernel:
	$(srcdir)/kernel/build-kernel.sh

# The README's two commands on a brand-new machine: a clean bookworm
# chroot with nothing cached (guest-image/fresh-check.sh).
fresh-check:
	$(srcdir)/guest-image/fresh-check.sh

# The guest kernel as Debian packages (the kernel's bindeb-pkg).
kernel-deb: kernel
	$(srcdir)/kernel/build-kernel-deb.sh

# The series compiled with Debian's own amd64 config (linux-config-6.1),
# only the objects it touches.
kernel-distro-check:
	$(srcdir)/kernel/check-distro-config.sh

# The library's Debian packages (dpkg-buildpackage, lintian).
debs:
	@$(srcdir)/scripts/build-debs.sh >/dev/null

rootfs:
	$(srcdir)/guest-image/build-rootfs.sh >/dev/null

# make vm-check (the whole suite) also installs the library's Debian
# packages in the guest: the image then carries them.  (A target-specific
# variable holds for the target's prerequisites too.)
vm-check vm-check-debug: PERWINE_WITH_DEBS = $(if $(PERWINE_TESTS),,yes)
image_debs = $(if $(PERWINE_WITH_DEBS),"$$($(srcdir)/scripts/build-debs.sh)")

image: kernel rootfs
	$(srcdir)/guest-image/make-image.sh "$$($(srcdir)/guest-image/build-rootfs.sh)" \
		$(PERWINE_OUT)/kselftests-guest $(GUEST_IMAGE) $(image_debs)

# make vm-check TESTS='tests/30-vma ...' runs only those tests.  Only a
# TESTS from the command line or the environment counts: after
# configure, automake's own TESTS (the whole suite) is defined here too.
PERWINE_TESTS := $(if $(filter command line environment,$(origin TESTS)),$(TESTS))
export PERWINE_TESTS

# $(call run_guest,MODE,BZIMAGE,IMAGE): boot, then always collect, so
# that the summary line is printed even when the guest failed; $$rc is
# 1 when either step failed.
run_guest = rc=0; \
	$(srcdir)/guest-image/boot-guest.sh $(1) $(2) $(3) || rc=1; \
	$(srcdir)/guest-image/collect-results.sh $(1) $(3) || rc=1

vm-check vm-bench vm-distcheck: image
	@$(call run_guest,$(@:vm-%=%),$(KERNEL_IMAGE),$(GUEST_IMAGE)); \
	if [ $@ = vm-bench ]; then \
		$(srcdir)/guest-image/plot-bench.sh $(PERWINE_OUT)/results/bench/bench-results.csv \
			$(PERWINE_OUT)/results/bench/bench.png || rc=1; \
	fi; \
	exit $$rc

vm-shell: image
	$(srcdir)/guest-image/boot-guest.sh shell $(KERNEL_IMAGE) $(GUEST_IMAGE)

# make vm-run CMD='...': the command's output, then its status (make
# itself can only exit 0 or 2; guest-image/vm-run.sh exits with it).
# The arguments are checked before anything is built.
vm-run:
	@PERWINE_CMD="$(CMD)" $(srcdir)/guest-image/vm-run.sh --check
	@$(MAKE) --no-print-directory -s image >&2
	@PERWINE_CMD="$(CMD)" $(srcdir)/guest-image/vm-run.sh $(KERNEL_IMAGE) $(GUEST_IMAGE)

# The kernel's own x86 selftests on the unpatched kernel (same config,
# built in a tree of its own) and on the patched one, in one table.
vm-x86-selftests: image
	$(srcdir)/guest-image/vm-x86-selftests.sh $(KERNEL_IMAGE) $(GUEST_IMAGE)

# The benchmark on that unpatched kernel: Syscall User Dispatch and
# seccomp as distributions ship them, beside the series in make docs.
vm-bench-stock: image
	$(srcdir)/guest-image/vm-bench-stock.sh $(GUEST_IMAGE)

# The benchmark on the series built with what Debian's config turns on
# in the syscall path (kernel/production.options: CPU mitigations, IBT,
# ftrace, audit): the production-like column of make docs.
vm-bench-production: image
	PERWINE_KERNEL_FLAVOR=production $(srcdir)/kernel/build-kernel.sh
	@export PERWINE_RUN_NAME=bench-production; \
	$(call run_guest,bench,$(PERWINE_OUT)/bzImage-production,$(GUEST_IMAGE)); \
	exit $$rc

# The debug kernel: the same series with KASAN, PROVE_LOCKING,
# DEBUG_ATOMIC_SLEEP and DEBUG_VM, in its own object dir and image.
DEBUG_KERNEL_IMAGE = $(PERWINE_OUT)/bzImage-debug
DEBUG_GUEST_IMAGE = $(PERWINE_OUT)/guest-debug.img

kernel-debug:
	PERWINE_KERNEL_FLAVOR=debug $(srcdir)/kernel/build-kernel.sh $(srcdir)/kernel/debug.config

# The image carries the suite as the plain guest built it, when that
# guest last ran the whole suite from the same sources (make-image.sh).
image-debug: kernel-debug rootfs
	PERWINE_PREBUILT=$(GUEST_IMAGE) \
	$(srcdir)/guest-image/make-image.sh "$$($(srcdir)/guest-image/build-rootfs.sh)" \
		$(PERWINE_OUT)/kselftests-debug $(DEBUG_GUEST_IMAGE) $(image_debs)

# The debug kernel boots with 4-level paging: with KASAN and 5-level
# paging (TCG's -cpu max has LA57), an interrupt while identify_cpu()
# has cleared the boot CPU's capabilities sees KASAN's shadow start
# move and reports a "wild-memory-access" in the interrupt's spinlock
# (seen once in 2026-12-05's CI; upstream has since set LA57 before
# anything reads it).  The plain kernels keep 5-level paging.
vm-check-debug vm-fuzz: export PERWINE_KERNEL_ARGS = no5lvl

# trinity in the debug guest, plainly and as a PER_WINE process.
vm-fuzz: image-debug
	$(srcdir)/guest-image/vm-fuzz.sh $(DEBUG_KERNEL_IMAGE) $(DEBUG_GUEST_IMAGE)

vm-check-debug: image-debug
	@export PERWINE_RUN_NAME=check-debug; \
	$(call run_guest,check,$(DEBUG_KERNEL_IMAGE),$(DEBUG_GUEST_IMAGE)); \
	exit $$rc

# The docs' result tables (scripts/update-docs.sh): the newest runs'
# result files into docs/results/, then every generated block from them.
docs:
	$(srcdir)/scripts/update-docs.sh --import

# Real Wine (wine/): the build, then its tests and benchmark in the guest.
wine:
	$(srcdir)/wine/build-wine.sh

wine-check: image
	$(srcdir)/wine/vm-wine-check.sh $(KERNEL_IMAGE) $(GUEST_IMAGE)

wine-bench: image
	PERWINE_WINE_BENCH=1 $(srcdir)/wine/vm-wine-check.sh $(KERNEL_IMAGE) $(GUEST_IMAGE)
